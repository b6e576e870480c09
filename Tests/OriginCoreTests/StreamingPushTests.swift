import HLSPackaging
import HLSPlaylist
import HTTPPushInput
import LiveTimeline
import Logging
import SharedBytes
import TestSource
import TestSourceInput
import TestSupport
import Testing

@testable import OriginCore

/// A Low-Latency push channel on a manual clock, fed with real MPEG-TS segments streamed frame by frame.
final class StreamingHarness {
    let clock = ManualClock()
    let origin: Origin
    var generator: TestStreamGenerator

    init(autoCreate: Bool = true, maxSegmentBytes: Int = 64 << 20) throws {
        var channel = ChannelConfiguration(
            name: "ll", renditions: [RenditionConfiguration(name: "360p")],
            targetDuration: 2, window: .segments(8))
        channel.lowLatency = LowLatencyConfiguration(partTarget: 0.4)
        var ingest = IngestConfiguration(autoCreate: autoCreate, maxSegmentBytes: maxSegmentBytes)
        ingest.autoCreatedChannel.lowLatency = LowLatencyConfiguration(partTarget: 0.4)
        ingest.autoCreatedChannel.targetDuration = 2
        var regular = ChannelConfiguration(name: "plain", renditions: [RenditionConfiguration(name: "360p")])
        regular.targetDuration = 2
        origin = try Origin(
            configuration: OriginConfiguration(channels: [channel, regular], ingest: ingest), clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 2)
    }

    var channel: Channel { origin.channel(named: "ll")! }

    /// The next 2-second segment and where each of its 50 frames ends.
    func nextSegment() -> (bytes: [UInt8], frameEnds: [Int]) {
        let bytes = generator.nextSegment().bytes
        return (bytes, TestSourceFeed.videoFrameEnds(bytes))
    }

    func begin(_ rendition: String = "360p", channel: String = "ll", file: String = "0.ts") throws -> StreamingPush {
        try #require(try origin.beginStreamingPush(channel: channel, rendition: rendition, fileName: file))
    }

    /// Feeds frames `range` of `segment`, one piece per frame, the clock moving one frame duration (40 ms) before
    /// each; stops at the first refusal and returns it.
    func feed(
        _ push: StreamingPush, _ segment: (bytes: [UInt8], frameEnds: [Int]), frames range: Range<Int>
    ) -> IngestError? {
        for frame in range {
            clock.advance(seconds: 0.04)
            let start = frame == 0 ? 0 : segment.frameEnds[frame - 1]
            let refusal = segment.bytes[start..<segment.frameEnds[frame]].withUnsafeBytes { push.receive($0) }
            if let refusal { return refusal }
        }
        return nil
    }

    /// Streams one whole segment to 360p (a rendition lists its parts once its first segment is in).
    func pushWholeSegment(file: String = "first.ts") throws {
        let push = try begin(file: file)
        if let refusal = feed(push, nextSegment(), frames: 0..<50) { throw refusal }
        _ = try push.finish()
    }

    func lowLatency(_ rendition: String = "360p") -> LowLatencySnapshot? {
        channel.snapshot.renditions[rendition]?.lowLatency
    }

    func text(_ rendition: String = "360p") -> String {
        channel.snapshot.renditions[rendition]?.playlist.map { String(decoding: $0.array, as: UTF8.self) } ?? ""
    }

    func partLines(_ rendition: String = "360p") -> [Substring] {
        text(rendition).split(separator: "\n").filter { $0.hasPrefix("#EXT-X-PART:") }
    }
}

@Suite("Streamed pushes into Low-Latency renditions", .offThePool)
struct StreamingPushTests {
    @Test func generatedSegmentsSplitIntoOneSliceOfBytesPerVideoFrame() throws {
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 2)
        let bytes = generator.nextSegment().bytes
        let ends = TestSourceFeed.videoFrameEnds(bytes)
        #expect(ends.count == 50)
        #expect(ends.last == bytes.count)
        #expect(ends.allSatisfy { $0 % 188 == 0 })
        #expect(zip(ends, ends.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test func partsAreListedWhileTheBodyArrivesAndTheSegmentIsExactlyTheBody() throws {
        let harness = try StreamingHarness()
        harness.clock.advance(seconds: 2)
        try harness.pushWholeSegment()
        let segment = harness.nextSegment()
        let push = try harness.begin()
        #expect(harness.feed(push, segment, frames: 0..<25) == nil)
        // Half the segment is in: its first parts are listed, before the body ended.
        let listed = try #require(harness.lowLatency()?.lastPart)
        #expect(listed.part >= 1, "\(listed)")
        #expect(harness.partLines().count >= 2, "\(harness.text())")
        #expect(harness.partLines().first?.contains("INDEPENDENT=YES") == true)
        // Past the keyframe at 1 s: no part before it under 85 % of the target (rule 38).
        #expect(harness.feed(push, segment, frames: 25..<30) == nil)
        #expect(try MediaPlaylist.parse(harness.text()).validatePartDurations() == [], "\(harness.text())")
        #expect(harness.feed(push, segment, frames: 30..<50) == nil)
        let receipt = try push.finish()
        #expect(receipt.kind == .segment)
        let msn = try #require(receipt.msn)
        #expect(msn == listed.msn)
        let entry = try #require(harness.channel.snapshot.renditions["360p"]?.entries.last)
        #expect(entry.msn == msn)
        #expect(entry.bytes?.array == segment.bytes)
        let parts = try #require(harness.lowLatency()?.parts[msn])
        #expect(parts.count >= 5)
        #expect(parts.allSatisfy { $0.durationMilliseconds <= 400 })
        #expect(parts.flatMap { $0.bytes?.array ?? [] } == segment.bytes)
        #expect(harness.text().contains("\n\(msn).ts\n"))
        #expect(try MediaPlaylist.parse(harness.text()).validatePartDurations() == [], "\(harness.text())")
    }

    @Test func aSecondPushToARenditionWhileOneIsOpenIsRefused() throws {
        let harness = try StreamingHarness()
        harness.clock.advance(seconds: 2)
        let segment = harness.nextSegment()
        let push = try harness.begin()
        #expect(harness.feed(push, segment, frames: 0..<5) == nil)
        do {
            _ = try harness.origin.beginStreamingPush(channel: "ll", rendition: "360p", fileName: "1.ts")
            Issue.record("a second push was taken while one is open")
        } catch {
            #expect(error.reason == .concurrentPush)
        }
        // Another rendition is not held back (auto-created at its first part).
        #expect(try harness.origin.beginStreamingPush(channel: "ll", rendition: "180p", fileName: "0.ts") != nil)
        #expect(harness.feed(push, segment, frames: 5..<50) == nil)
        _ = try push.finish()
        #expect(try harness.origin.beginStreamingPush(channel: "ll", rendition: "360p", fileName: "1.ts") != nil)
    }

    @Test func aStalledPushIsReplacedByTheNextOneAndAnsweredPushStalledAtItsEnd() throws {
        let harness = try StreamingHarness()
        harness.clock.advance(seconds: 2)
        try harness.pushWholeSegment()
        let segment = harness.nextSegment()
        let stalled = try harness.begin()
        #expect(harness.feed(stalled, segment, frames: 0..<15) == nil)
        harness.clock.advance(seconds: 1.5)
        let next = try harness.begin(file: "1.ts")
        #expect(harness.feed(stalled, segment, frames: 15..<50) == nil)
        do {
            _ = try stalled.finish()
            Issue.record("a stalled push was taken")
        } catch {
            #expect(error.reason == .pushStalled, "\(error)")
        }
        // Its segment was closed at the last part when the next push came: the next push opens the next MSN.
        let closed = try #require(harness.lowLatency()?.lastPart)
        #expect(harness.channel.snapshot.renditions["360p"]?.entries.contains { $0.msn == closed.msn } == true)
        next.abandon()
    }

    @Test func aDisconnectMidBodyLeavesAShortSegmentOfTheListedParts() throws {
        let harness = try StreamingHarness()
        harness.clock.advance(seconds: 2)
        try harness.pushWholeSegment()
        let segment = harness.nextSegment()
        let push = try harness.begin()
        #expect(harness.feed(push, segment, frames: 0..<27) == nil)
        let listed = try #require(harness.lowLatency()?.lastPart)
        let parts = try #require(harness.lowLatency()?.parts[listed.msn])
        push.abandon()
        let entry = try #require(harness.channel.snapshot.renditions["360p"]?.entries.last { $0.msn == listed.msn })
        #expect(entry.durationMilliseconds == parts.reduce(0) { $0 + $1.durationMilliseconds })
        #expect(entry.durationMilliseconds < 2000)
        #expect(entry.bytes?.array == parts.flatMap { $0.bytes?.array ?? [] })
        // The rendition takes the next push.
        #expect(try harness.origin.beginStreamingPush(channel: "ll", rendition: "360p", fileName: "1.ts") != nil)
    }

    @Test func aPushThatIsNotMediaCreatesNothing() throws {
        let harness = try StreamingHarness()
        let push = try harness.begin("new", channel: "fresh")
        let junk = [UInt8](repeating: 0x5A, count: 4096)
        let refusal = junk.withUnsafeBytes { push.receive($0) }
        #expect(refusal != nil)
        #expect(harness.origin.channel(named: "fresh") == nil)
        let other = try harness.begin("new", channel: "ll")
        #expect(junk.withUnsafeBytes { other.receive($0) } != nil)
        #expect(!harness.channel.hasRendition("new"))
    }

    @Test func onlyMediaSegmentsForLowLatencyChannelsAreStreamed() throws {
        let harness = try StreamingHarness()
        #expect(try harness.origin.beginStreamingPush(channel: "plain", rendition: "360p", fileName: "0.ts") == nil)
        #expect(try harness.origin.beginStreamingPush(channel: "ll", rendition: "360p", fileName: "index.m3u8") == nil)
        #expect(try harness.origin.beginStreamingPush(channel: "ll", rendition: "360p", fileName: "init.mp4") == nil)
        // fMP4 without its init section yet: taken whole (and refused as today).
        #expect(try harness.origin.beginStreamingPush(channel: "ll", rendition: "360p", fileName: "c-0-1.m4s") == nil)
        #expect(throws: IngestError.self) {
            try harness.origin.beginStreamingPush(channel: "bad name", rendition: "360p", fileName: "0.ts")
        }
    }

    @Test func dashManifestsAreIgnored() throws {
        let harness = try StreamingHarness()
        let receipt = try harness.origin.ingest(
            channel: "ll", rendition: "360p", fileName: "manifest.mpd", body: SharedBytes(string: "<MPD/>"))
        #expect(receipt.kind == .ignored)
        #expect(receipt.msn == nil)
    }

    @Test func lowLatencyTestSourceListsPartsSpreadOverEachSlot() throws {
        let clock = ManualClock()
        var demo = ChannelConfiguration(
            name: "demo", renditions: [.init(name: "360p"), .init(name: "180p")], source: .testSource,
            targetDuration: 2, window: .segments(8))
        demo.lowLatency = LowLatencyConfiguration(partTarget: 0.4)
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let origin = try Origin(configuration: OriginConfiguration(channels: [demo]), clock: clock, logger: logger)
        let input = try TestSourceInput(origin: origin, logger: logger)
        let channel = try #require(origin.channel(named: "demo"))
        var firstSeen: [PartPosition: Int64] = [:]
        let start = clock.nowMilliseconds()
        for _ in 0..<(10 * 20) {
            clock.advance(seconds: 0.05)
            input.tick()
            origin.tick()
            if let last = channel.snapshot.renditions["360p"]?.lowLatency?.lastPart, firstSeen[last] == nil {
                firstSeen[last] = clock.nowMilliseconds() - start
            }
        }
        let playlist = try #require(channel.snapshot.renditions["360p"]?.playlist)
        let text = String(decoding: playlist.array, as: UTF8.self)
        #expect(text.contains("#EXT-X-PART-INF:PART-TARGET=0.400"), "\(text)")
        #expect(try MediaPlaylist.parse(text).validatePartDurations() == [], "\(text)")
        // The parts of a middle slot were listed one by one over the slot, each within a part target of the last.
        let slot = try #require(firstSeen.keys.map(\.msn).sorted().dropFirst().first)
        let times = firstSeen.filter { $0.key.msn == slot }.sorted { $0.key < $1.key }.map(\.value)
        let parts = try #require(channel.snapshot.renditions["360p"]?.lowLatency?.parts[slot])
        #expect(times.count == parts.count, "\(firstSeen)")
        #expect(parts.count >= 5, "\(parts.map(\.durationMilliseconds))")
        #expect(parts.reduce(0) { $0 + $1.durationMilliseconds } == 2000)
        #expect(parts.allSatisfy { $0.durationMilliseconds <= 400 })
        // Slots start every 2 s from the feed's start: the first part comes within 0.5 s, the last at the slot's end.
        let first = try #require(times.first)
        let last = try #require(times.last)
        #expect(first % 2000 <= 500, "\(times)")
        #expect(last - first >= 1200, "\(times)")
        for (earlier, later) in zip(times, times.dropFirst()) {
            #expect((100...450).contains(later - earlier), "\(times)")
        }
        // Both renditions list the same segments.
        let other = try #require(channel.snapshot.renditions["180p"]?.entries.map(\.msn))
        #expect(channel.snapshot.renditions["360p"]?.entries.map(\.msn) == other)
    }
}
