// swift-tools-version:6.0
import PackageDescription

// Linux only (Debian 12): the code calls Glibc directly (clocks, rlimits, sockets) and libmicrohttpd runs on epoll.
let package = Package(
    name: "hlsorigin",
    products: [
        .executable(name: "hlsorigin", targets: ["hlsorigin"]),
        // The modules as a library, for the fuzz package in Fuzz/ (a path dependency sees products only).
        .library(
            name: "HLSOriginKit",
            targets: [
                "SharedBytes", "HLSPlaylist", "MediaProbe", "SCTE35", "MPEGTSWriter", "GapFiller", "TestSource",
                "MicroHTTPD",
                "LiveTimeline", "HLSPackaging", "Markers", "Persistence", "HLSCrypto", "OriginCore", "PeerRepair",
                "HTTPPushInput", "TestSourceInput", "TSSegmenter", "ContinuousTSInput", "SRTInput", "OriginServer", "StreamValidator",
            ]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.0.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.0.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.21.0"),
    ],
    targets: [
        // C boundary: libmicrohttpd and zlib, seen only by MicroHTTPD / OriginServer.
        .systemLibrary(
            name: "CMicroHTTPD", pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]),
        // GnuTLS (libmicrohttpd's TLS library, libgnutls28-dev comes with libmicrohttpd-dev) for HTTPS listeners whose
        // certificate can be replaced while they run (Sources/CMicroHTTPDShims/tls.c).
        .target(
            name: "CMicroHTTPDShims", dependencies: ["CMicroHTTPD"], linkerSettings: [.linkedLibrary("gnutls")]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // libsrt (Haivision's SRT, OpenSSL build) for SRT contribution, seen only by SRTInput.
        .systemLibrary(name: "CSRT", pkgConfig: "srt", providers: [.apt(["libsrt-openssl-dev"])]),
        // OpenSSL's libcrypto for bulk AES-128-CBC (AES-NI through EVP), seen only by HLSCrypto.
        .systemLibrary(name: "CLibCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),

        // Pure values and byte-level parsers.
        .target(name: "SharedBytes"),
        // Gregorian dates from day numbers and back, for PROGRAM-DATE-TIME and HTTP dates.
        .target(name: "CivilCalendar"),
        .target(name: "HLSPlaylist", dependencies: ["CivilCalendar"]),
        .target(name: "MediaProbe"),
        // SCTE-35 splice_info_section: reading and validating what clients send, encoding the origin's cues.
        .target(name: "SCTE35"),
        // MPEG-TS writing: PAT/PMT, PES packets, PCR and continuity counters, for the test source and the gap filler.
        .target(name: "MPEGTSWriter", dependencies: ["MediaProbe"]),
        .target(name: "TestSource", dependencies: ["MPEGTSWriter", "MediaProbe"], resources: [.copy("Fixtures")]),
        // Filler media for GAP URLs: continues a rendition's MPEG-TS with a still picture and silence.
        .target(name: "GapFiller", dependencies: ["MediaProbe", "MPEGTSWriter"]),

        // HTTP: the Swift face of libmicrohttpd and generic HTTP semantics (conditional GET, ranges, gzip), no HLS
        // knowledge.
        .target(
            name: "MicroHTTPD",
            dependencies: [
                "CMicroHTTPD", "CMicroHTTPDShims", "CZlib", "CivilCalendar", "SharedBytes",
                .product(name: "Logging", package: "swift-log"),
            ]),

        // The origin, along the data path: probed segments enter the ingest loop, which fills slots, keeps each
        // rendition's live window and renders the snapshots the HTTP layer serves; markers are overlaid on the
        // playlists; the journals keep what must survive a restart; the core holds the locks and runs it all.
        // Ad markers (date ranges): the book of a channel's markers, their SCTE-35 and their place in a playlist.
        .target(name: "Markers", dependencies: ["HLSPlaylist", "SCTE35"]),
        // The ingest loop and live window: pure state machine, no locks, no I/O, time comes in as arguments.
        .target(
            name: "LiveTimeline",
            dependencies: ["CivilCalendar", "GapFiller", "HLSPlaylist", "Markers", "MediaProbe", "SharedBytes"]),
        // HLS packaging: turns the timeline's read-only value into playlists (live, Low-Latency, DVR, I-frame,
        // multivariant layout, decoration). An output of the timeline; the state machine knows nothing of it.
        .target(
            name: "HLSPackaging",
            dependencies: ["CivilCalendar", "HLSPlaylist", "LiveTimeline", "Markers", "MediaProbe", "SharedBytes"]),
        // Durable files: the channel state journal, the marker journals and the segment store (CRC-32 from zlib).
        .target(name: "Persistence", dependencies: ["CZlib", "LiveTimeline", "Markers", "MediaProbe", "SharedBytes"]),
        // What a group of origins shares through PostgreSQL (postgres-nio), with LISTEN/NOTIFY: marker books, recordings.
        .target(
            name: "GroupDatabase",
            dependencies: [
                "Markers", "Persistence", .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        // Keys, playback tokens and AES-128 segment encryption: the only code that imports swift-crypto (keys, HMAC)
        // and libcrypto (the bulk cipher: swift-crypto's AES-CBC sets up the key for every block, 0.35 s per MiB).
        .target(
            name: "HLSCrypto",
            dependencies: [
                "CivilCalendar", "CLibCrypto", "SharedBytes", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]),
        // The core: channels and the origin behind their locks, carrying out what the ingest loop decides.
        .target(
            name: "OriginCore",
            dependencies: [
                "GapFiller", "HLSCrypto", "HLSPackaging", "HLSPlaylist", "LiveTimeline", "Markers", "MediaProbe",
                "Persistence", "SharedBytes", .product(name: "Logging", package: "swift-log"),
            ]),
        // The inputs, siblings feeding the core media-level pushes. HTTP push: ffmpeg's file names ->
        // OriginCore.MediaPush.
        .target(
            name: "HTTPPushInput",
            dependencies: ["LiveTimeline", "MediaProbe", "OriginCore", "SharedBytes"]),
        // The built-in test source: one real-time feed per `.testSource` channel, a Service.
        .target(
            name: "TestSourceInput",
            dependencies: [
                "GapFiller", "LiveTimeline", "OriginCore", "SharedBytes", "TestSource",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        // A continuous MPEG-TS (an SRT caller, a file) cut into segments on the channel's clock: pure, bytes in,
        // segments out (TransportStreamSegmenter over MediaProbe's TransportStreamDemuxer).
        .target(name: "TSSegmenter", dependencies: ["MediaProbe", "MPEGTSWriter"]),
        // The segmenter's segments and LL parts handed to the core as pushes, one session per stream
        // (ContinuousTSIngest); no libsrt: the SRT listener opens the sessions.
        .target(
            name: "ContinuousTSInput",
            dependencies: [
                "LiveTimeline", "MediaProbe", "OriginCore", "SharedBytes", "TSSegmenter",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The SRT input: a libsrt listener whose callers push a continuous MPEG-TS, handed to a ContinuousStreamSink.
        .target(
            name: "SRTInput",
            dependencies: [
                "CSRT", "HLSCrypto", "LiveTimeline", "OriginCore", "SharedBytes",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .target(
            name: "PeerRepair",
            dependencies: [
                "HLSPackaging", "HLSPlaylist", "LiveTimeline", "OriginCore", "SharedBytes",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        .target(
            name: "OriginServer",
            dependencies: [
                "OriginCore", "HLSCrypto", "HLSPackaging", "GroupDatabase", "Markers", "MicroHTTPD", "HLSPlaylist",
                "HTTPPushInput", "PeerRepair", "SharedBytes", "TestSourceInput", "SRTInput", "ContinuousTSInput",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Yams", package: "Yams"),
            ],
            // The admin API's OpenAPI description, served at /admin/openapi.json (AdminOpenAPIDocument).
            resources: [.copy("OpenAPI/admin.json")]),
        // From outside: `hlsorigin validate` watches any live HLS stream over HTTP and checks it against the rules
        // (a pure checker fed what a thin polling loop fetched; MediaProbe reads the segments' bytes).
        .target(name: "StreamValidator", dependencies: ["HLSPlaylist", "MediaProbe", "SharedBytes"]),
        .executableTarget(
            name: "hlsorigin",
            dependencies: [
                "GroupDatabase", "OriginServer", "StreamValidator",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),

        // What the test targets share: a raw-socket HTTP/1.1 client, a child-process runner with a deadline,
        // bounded waits, the `.endToEnd` tag, an MPEG-TS reader, a log kept in memory.
        .target(
            name: "TestSupport", dependencies: ["CSRT", .product(name: "Logging", package: "swift-log")],
            path: "Tests/TestSupport"),
        .testTarget(
            name: "MicroHTTPDTests",
            dependencies: [
                "MicroHTTPD", "SharedBytes", "TestSupport", .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(name: "SharedBytesTests", dependencies: ["SharedBytes"]),
        .testTarget(
            name: "HLSPlaylistTests", dependencies: ["HLSPlaylist", "TestSupport"], resources: [.copy("Fixtures")]),
        .testTarget(
            name: "MediaProbeTests", dependencies: ["MediaProbe", "TestSupport"], resources: [.copy("Fixtures")]),
        .testTarget(
            name: "HLSCryptoTests",
            dependencies: [
                "HLSCrypto", "SharedBytes", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]),
        .testTarget(name: "SCTE35Tests", dependencies: ["SCTE35", "TestSupport"]),
        .testTarget(name: "MarkersTests", dependencies: ["Markers", "HLSPlaylist", "SCTE35"]),
        // The timeline alone (no locks, no I/O), and the packaging on a timeline value.
        .testTarget(
            name: "LiveTimelineTests",
            dependencies: ["LiveTimeline", "HLSPlaylist", "MediaProbe", "SharedBytes", "TestSource", "TestSupport"]),
        .testTarget(
            name: "HLSPackagingTests",
            dependencies: [
                "HLSPackaging", "LiveTimeline", "HLSPlaylist", "Markers", "MediaProbe", "SharedBytes", "TestSource",
                "TestSupport",
            ]),
        .testTarget(name: "TestSourceTests", dependencies: ["TestSource", "MediaProbe", "TestSupport"]),
        .testTarget(
            name: "TestSourceInputTests",
            dependencies: [
                "TestSourceInput", "OriginCore", "LiveTimeline", "HLSPlaylist",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "GapFillerTests",
            dependencies: ["GapFiller", "MediaProbe", "MPEGTSWriter", "TestSource", "TestSupport"]),
        .testTarget(
            name: "OriginCoreTests",
            dependencies: [
                "OriginCore", "LiveTimeline", "HLSPackaging", "Markers", "Persistence", "TestSource", "MediaProbe",
                "SCTE35", "HLSPlaylist", "TestSupport", "HLSCrypto", "HTTPPushInput", "TestSourceInput",
            ]),
        .testTarget(
            name: "OriginServerTests",
            dependencies: [
                "OriginServer", "MicroHTTPD", "OriginCore", "TestSource", "HLSPlaylist", "CZlib", "TestSupport",
                "HLSCrypto", "HLSPackaging", "PeerRepair", "TestSourceInput", "SRTInput", "ContinuousTSInput",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .testTarget(
            name: "PersistenceTests",
            dependencies: ["Persistence", "LiveTimeline", "MediaProbe", "SharedBytes", "TestSupport"]),
        .testTarget(
            name: "TSSegmenterTests",
            dependencies: ["TSSegmenter", "MediaProbe", "MPEGTSWriter", "TestSource", "TestSupport"]),
        .testTarget(
            name: "ContinuousTSInputTests",
            dependencies: [
                "ContinuousTSInput", "TSSegmenter", "MediaProbe", "TestSource", "TestSupport", "OriginCore",
                "LiveTimeline", "HLSPlaylist", "SharedBytes", .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "SRTInputTests",
            dependencies: [
                "SRTInput", "OriginCore", "LiveTimeline", "TestSupport", .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(name: "StreamValidatorTests", dependencies: ["StreamValidator", "HLSPlaylist", "TestSource"]),
        .testTarget(name: "EndToEndTests", dependencies: ["CSRT", "HLSPlaylist", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)

// Import boundaries are compiler-checked (SE-0409, SE-0444): every import is internal unless written `package import`
// or `public import`, so a target's public API says which modules it exposes; and a member (a method, property or
// operator from an extension) can be used only in a file that imports its module. On for every Swift target.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("InternalImportsByDefault"), .enableUpcomingFeature("MemberImportVisibility"),
]
for target in package.targets where target.type != .system && target.type != .binary && target.type != .plugin {
    target.swiftSettings = (target.swiftSettings ?? []) + swiftSettings
}
