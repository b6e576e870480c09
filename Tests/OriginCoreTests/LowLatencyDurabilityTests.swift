import Foundation
import Glibc
import HLSPackaging
import HTTPPushInput
import LiveTimeline
import Logging
import Persistence
import SharedBytes
import Synchronization
import TestSource
import TestSourceInput
import TestSupport
import Testing

@testable import OriginCore

/// Low-Latency: a segment URI is listed only with its bytes in the store. A push that ends mid-segment leaves a short
/// segment of its listed parts, staged durably first, or, when that cannot be, a GAP: the same after a restart.
@Suite("Low-Latency: a segment closed at its last part is listed only once durable", .offThePool)
struct LowLatencyDurabilityTests {
    let directory: String
    let clock = ManualClock()
    let disk = FaultyDisk()
    var generator: TestStreamGenerator

    init() throws {
        directory = try TemporaryDirectory.make("ll-durable").path
        generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 2)
    }

    func start(io: any StoreFileIO) throws -> Origin {
        var channel = ChannelConfiguration(
            name: "ll", renditions: [RenditionConfiguration(name: "360p")], targetDuration: 2, window: .segments(8))
        channel.lowLatency = LowLatencyConfiguration(partTarget: 0.4)
        return try Origin(
            configuration: OriginConfiguration(channels: [channel], dataDirectory: directory), clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), storeFileIO: io)
    }

    /// Streams frames `frames` of the next segment (one piece per 40 ms frame); finishes it when `finish`.
    mutating func stream(_ origin: Origin, file: String, frames: Range<Int>, finish: Bool) throws -> StreamingPush {
        let bytes = generator.nextSegment().bytes
        let ends = TestSourceFeed.videoFrameEnds(bytes)
        let push = try #require(try origin.beginStreamingPush(channel: "ll", rendition: "360p", fileName: file))
        for frame in frames {
            clock.advance(seconds: 0.04)
            let start = frame == 0 ? 0 : ends[frame - 1]
            if let refusal = bytes[start..<ends[frame]].withUnsafeBytes({ push.receive($0) }) { throw refusal }
        }
        if finish { _ = try push.finish() }
        return push
    }

    func entries(_ origin: Origin) -> [WindowEntry] {
        origin.channel(named: "ll")?.snapshot.renditions["360p"]?.entries ?? []
    }

    /// Every entry listed before survives a restart as it was (a segment with its bytes, or a GAP).
    func expectSurvivesRestart(_ listed: [WindowEntry]) throws {
        let restarted = try start(io: PosixFileIO())
        let restored = try #require(restarted.channel(named: "ll")?.snapshot.renditions["360p"])
        for entry in listed {
            let again = try #require(restored.entry(msn: entry.msn), "msn \(entry.msn) lost across the restart")
            #expect(again.isGap == entry.isGap, "msn \(entry.msn): listed gap \(entry.isGap), restored \(again.isGap)")
            #expect(again.bytes == entry.bytes, "msn \(entry.msn): other bytes after the restart")
        }
    }

    @Test mutating func aPushAbandonedMidSegmentLeavesADurableShortSegment() throws {
        var origin: Origin? = try start(io: disk)
        clock.advance(seconds: 2)
        _ = try stream(origin!, file: "0.ts", frames: 0..<50, finish: true)
        let push = try stream(origin!, file: "1.ts", frames: 0..<27, finish: false)
        push.abandon()
        let listed = entries(origin!)
        #expect(listed.count == 2)
        #expect(listed.last.map { !$0.isGap && ($0.bytes?.count ?? 0) > 0 } == true, "a short segment of the parts")
        origin = nil
        try expectSurvivesRestart(listed)
    }

    @Test mutating func aShortSegmentTheStoreCannotTakeIsAGapFromTheStart() throws {
        var origin: Origin? = try start(io: disk)
        clock.advance(seconds: 2)
        _ = try stream(origin!, file: "0.ts", frames: 0..<50, finish: true)
        let push = try stream(origin!, file: "1.ts", frames: 0..<27, finish: false)
        let msn = try #require(origin!.channel(named: "ll")?.snapshot.renditions["360p"]?.lowLatency?.lastPart?.msn)
        // Chunk writes fail (index files still take records, as on a full disk).
        disk.fault.withLock { $0 = .init(operations: [.write], path: "/data/", errno: ENOSPC) }
        push.abandon()
        #expect(!entries(origin!).contains { !$0.isGap && $0.msn == msn }, "a segment without durable bytes is listed")
        disk.fault.withLock { $0 = nil }
        clock.advance(seconds: 3)
        origin!.tick()
        let listed = entries(origin!)
        #expect(listed.contains { $0.msn == msn && $0.isGap }, "its slot closes as a GAP")
        origin = nil
        try expectSurvivesRestart(listed)
    }
}
