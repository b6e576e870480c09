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
                "SharedBytes", "HLSPlaylist", "MediaProbe", "TestSource", "MicroHTTPD", "OriginCore", "OriginServer",
            ]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.0.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
    ],
    targets: [
        // C boundary: libmicrohttpd and zlib, seen only by MicroHTTPD / OriginServer.
        .systemLibrary(
            name: "CMicroHTTPD", pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]),
        .target(name: "CMicroHTTPDShims", dependencies: ["CMicroHTTPD"]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),

        // Pure values and byte-level parsers.
        .target(name: "SharedBytes"),
        .target(name: "HLSPlaylist"),
        .target(name: "MediaProbe"),
        .target(name: "TestSource", resources: [.copy("Fixtures")]),
        // Filler media for GAP URLs: continues a rendition's MPEG-TS with a still picture and silence.
        .target(name: "GapFiller", dependencies: ["MediaProbe", "TestSource"]),

        // HTTP: the Swift face of libmicrohttpd and generic HTTP semantics (conditional GET, ranges, gzip), no HLS
        // knowledge.
        .target(
            name: "MicroHTTPD",
            dependencies: [
                "CMicroHTTPD", "CMicroHTTPDShims", "CZlib", "SharedBytes",
                .product(name: "Logging", package: "swift-log"),
            ]),

        // The origin: channels, ingest loop, window, snapshots.
        .target(
            name: "OriginCore",
            dependencies: [
                "GapFiller", "HLSPlaylist", "MediaProbe", "SharedBytes", "TestSource",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .target(
            name: "OriginServer",
            dependencies: [
                "OriginCore", "MicroHTTPD", "HLSPlaylist", "SharedBytes",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Yams", package: "Yams"),
            ]),
        .executableTarget(
            name: "hlsorigin",
            dependencies: [
                "OriginServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),

        .testTarget(
            name: "MicroHTTPDTests", dependencies: ["MicroHTTPD", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "HLSPlaylistTests", dependencies: ["HLSPlaylist"]),
        .testTarget(name: "MediaProbeTests", dependencies: ["MediaProbe"], resources: [.copy("Fixtures")]),
        .testTarget(name: "TestSourceTests", dependencies: ["TestSource", "MediaProbe"]),
        .testTarget(name: "GapFillerTests", dependencies: ["GapFiller", "MediaProbe", "TestSource"]),
        .testTarget(name: "OriginCoreTests", dependencies: ["OriginCore", "TestSource", "MediaProbe", "HLSPlaylist"]),
        .testTarget(
            name: "OriginServerTests",
            dependencies: [
                "OriginServer", "MicroHTTPD", "OriginCore", "TestSource", "HLSPlaylist", "CZlib",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .testTarget(name: "EndToEndTests", dependencies: ["HLSPlaylist"]),
    ],
    swiftLanguageModes: [.v6]
)
