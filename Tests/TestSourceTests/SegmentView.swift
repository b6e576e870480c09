import Foundation
import TestSource
import TestSupport

/// A generated segment as the test reader sees it.
struct SegmentView {
    let segment: GeneratedSegment
    let packets: [TransportPacket]
    let video: [PESUnit]
    let audio: [PESUnit]

    static let videoPID: UInt16 = 0x0100
    static let audioPID: UInt16 = 0x0101

    init(_ segment: GeneratedSegment) throws {
        self.segment = segment
        packets = try TransportStreamReader.packets(segment.bytes)
        video = try TransportStreamReader.pesUnits(packets, pid: Self.videoPID)
        audio = try TransportStreamReader.pesUnits(packets, pid: Self.audioPID)
    }
}

enum TestStreams {
    /// `count` consecutive segments of a built-in profile.
    static func segments(
        profile name: String, duration: Int, count: Int,
        startPTS: Int64 = TestStreamGenerator.defaultStartPTS
    ) throws -> [SegmentView] {
        let profile = try require(TestSourceProfile.named(name))
        var generator = try TestStreamGenerator(profile: profile, segmentDuration: duration, startPTS: startPTS)
        return try (0..<count).map { _ in try SegmentView(generator.nextSegment()) }
    }

    /// The committed fixture directory, read straight from the source tree (independent of the module's loader).
    static let fixtureDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/TestSource/Fixtures")

    static func fixture(_ name: String) throws -> [UInt8] {
        try [UInt8](Data(contentsOf: fixtureDirectory.appendingPathComponent(name)))
    }
}

/// Lets `try #require` be used outside a test function body.
private func require<T>(_ value: T?) throws -> T {
    guard let value else { throw ReaderError("unexpected nil") }
    return value
}
