// swift-tools-version:6.0
import PackageDescription

/// libFuzzer targets for every parser that sees outside bytes. A package of its own so that the main package's
/// `swift build` / `swift test` never sees these executables (they have no `main`: libFuzzer brings it).
/// Build and run with `scripts/fuzz [seconds-per-target]`.
let fuzzTargets = [
    "FuzzTransportStream", "FuzzFragmentedMP4", "FuzzPackedAudio",
    "FuzzMediaPlaylist", "FuzzMultivariantPlaylist", "FuzzPlaylistAttributes",
    "FuzzRequestPath", "FuzzOriginRequest", "FuzzConfiguration",
    "FuzzSCTE35", "FuzzDateRangeJSON",
    "FuzzTransportStreamCutter", "FuzzFragmentCutter", "FuzzStreamingPush", "FuzzStreamSegmenter",
    "FuzzChannelTransportStream", "FuzzChannelFragmentedMP4", "FuzzChannelPackedAudio", "FuzzChannelWebVTT",
]

let package = Package(
    name: "hlsorigin-fuzz",
    dependencies: [
        // A symlink to "..": a path dependency's identity is its directory name, and the clone's own name varies.
        .package(path: "hlsorigin"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: fuzzTargets.map { name in
        .executableTarget(
            name: name,
            dependencies: [
                "FuzzSupport",
                .product(name: "HLSOriginKit", package: "hlsorigin"),
                .product(name: "Logging", package: "swift-log"),
            ])
    } + [
        // What the channel, streaming and cutter targets share: input records, piece lengths, the origin under test
        // and the checks on what it publishes.
        .target(
            name: "FuzzSupport",
            dependencies: [
                .product(name: "HLSOriginKit", package: "hlsorigin"),
                .product(name: "Logging", package: "swift-log"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
