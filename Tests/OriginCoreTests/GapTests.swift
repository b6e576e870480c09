import HLSPackaging
import HLSPlaylist
import MediaProbe
import SharedBytes
import TestSource
import TestSupport
import Testing

@testable import LiveTimeline
@testable import OriginCore

@Suite("Encoder outages: EXT-X-GAP on schedule", .offThePool)
struct GapTests {
    @Test(arguments: [1, 5, 60])
    func outageOfOneRenditionGetsOneGapPerSlot(slots: Int) throws {
        let harness = try Harness(window: .segments(100))
        for _ in 0..<3 { try harness.slot() }
        for _ in 0..<slots { try harness.slot(dropping: ["180p"]) }
        // The slot of the last dropped push closes after its grace period (1 s).
        harness.clock.advance(seconds: 1)
        harness.origin.tick()
        for _ in 0..<2 { try harness.slot() }
        let dropped = try harness.playlist("180p")
        let healthy = try harness.playlist("360p")
        #expect(dropped.segments.count == 5 + slots)
        #expect(
            dropped.segments.map(\.gap) == Array(repeating: false, count: 3) + Array(repeating: true, count: slots) + [
                false, false,
            ])
        #expect(dropped.segments.map(\.discontinuity) == Array(repeating: false, count: 3 + slots) + [true, false])
        // No GAP in the healthy rendition, but the join's discontinuity is at the same MSN there too, so the
        // discontinuity sequence of every MSN is the same in both renditions (RFC 8216 section 6.2.4).
        #expect(healthy.segments.allSatisfy { !$0.gap })
        #expect(healthy.segments.map(\.discontinuity) == dropped.segments.map(\.discontinuity))
        #expect(healthy.discontinuitySequence == dropped.discontinuitySequence)
        // Same MSNs and PDTs in both renditions.
        #expect(dropped.segments.map(\.uri) == healthy.segments.map(\.uri))
        #expect(dropped.segments.map(\.programDateTime) == healthy.segments.map(\.programDateTime))
        let status = harness.channel.status()
        #expect(status.renditions.first { $0.name == "180p" }?.gapsWritten == slots)
        #expect(status.renditions.first { $0.name == "360p" }?.gapsWritten == 0)
    }

    @Test func outageOfAllRenditionsKeepsThePlaylistMoving() throws {
        let harness = try Harness(window: .segments(100))
        for _ in 0..<3 { try harness.slot() }
        let lastPDT = try harness.playlist("360p").segments.last!.programDateTime!
        // 60 s without any push: the ingest loop ticks every 50 ms of the manual clock.
        for _ in 0..<1200 {
            harness.clock.advance(seconds: 0.05)
            harness.origin.tick()
            for rendition in ["360p", "180p"] { _ = rendition }
        }
        for rendition in ["360p", "180p"] {
            let playlist = try harness.playlist(rendition)
            let gaps = playlist.segments.filter(\.gap)
            // Slots end every 2 s; each closes 1 s after its end: 60 s -> 29 or 30 gaps.
            #expect((29...30).contains(gaps.count), "\(gaps.count)")
            #expect(gaps.first?.programDateTime == lastPDT.adding(milliseconds: 2000))
            for (a, b) in zip(playlist.segments, playlist.segments.dropFirst()) {
                #expect(b.programDateTime!.millisecondsSince1970 == a.programDateTime!.millisecondsSince1970 + 2000)
            }
            #expect(harness.channel.status().renditions.first { $0.name == rendition }?.feed == "dropped")
        }
    }

    @Test func gapAppearsWithinOneAndAHalfTargetDurations() throws {
        let harness = try Harness(renditions: ["360p"])
        for _ in 0..<3 { try harness.slot() }
        // Last segment added now. The next slot ends 2 s later, + 1 s grace = 3 s = 1.5 TD: the GAP must come
        // before that (the guard keeps a 200 ms margin for the tick and publishing).
        harness.clock.advance(seconds: 2.75)
        harness.origin.tick()
        #expect(try harness.playlist("360p").segments.last?.gap == false)
        harness.clock.advance(seconds: 0.05)
        harness.origin.tick()
        #expect(try harness.playlist("360p").segments.last?.gap == true)
    }

    @Test func gapComesWithinOneAndAHalfTargetDurationsEvenWhenTheEncoderRunsAhead() throws {
        let harness = try Harness(renditions: ["360p"])
        for _ in 0..<3 { try harness.slot() }
        // The next segment arrives 0.9 s early (the encoder's timeline runs ahead of the clock), then the feed drops.
        harness.clock.advance(seconds: 1.1)
        _ = try harness.push("360p", harness.nextSegment("360p"))
        // By the slot timeline the next GAP would come 2 + 0.9 + 1 = 3.9 s later; the staleness guard brings it in.
        harness.clock.advance(seconds: 2.8)
        harness.origin.tick()
        #expect(try harness.playlist("360p").segments.last?.gap == true)
    }

    @Test func aFeedResumingLateReanchorsItsSlotOnTheClock() throws {
        let harness = try Harness(window: .segments(30))
        for _ in 0..<3 { try harness.slot() }
        // Both renditions drop; GAPs keep the grid moving.
        for _ in 0..<3 {
            harness.clock.advance(seconds: 2)
            harness.origin.tick()
        }
        harness.clock.advance(seconds: 0.9)  // the restarted encoder's first segment ends 0.9 s after a grid slot
        for rendition in ["360p", "180p"] { harness.generators[rendition]!.restartTimestamps(startPTS: 0) }
        for rendition in ["360p", "180p"] { _ = try harness.push(rendition, harness.nextSegment(rendition)) }
        let now = harness.clock.nowMilliseconds()
        let a = try harness.playlist("360p")
        let b = try harness.playlist("180p")
        let join = try #require(a.segments.last)
        #expect(join.discontinuity && !join.gap)
        // Anchored on the clock (segment end = now), not on the old grid (which would end 0.9 s earlier).
        #expect(join.programDateTime!.millisecondsSince1970 + 2000 == now)
        #expect(b.segments.map(\.programDateTime) == a.segments.map(\.programDateTime))
        #expect(b.segments.map(\.discontinuity) == a.segments.map(\.discontinuity))
        // The next segment, 2 s later, continues the new grid without a GAP or another discontinuity.
        try harness.slot()
        let next = try #require(try harness.playlist("360p").segments.last)
        #expect(!next.gap && !next.discontinuity)
        #expect(next.programDateTime == join.programDateTime!.adding(milliseconds: 2000))
    }

    @Test func lateSegmentAfterItsGapIsNotSplicedIntoThePast() throws {
        let harness = try Harness(renditions: ["360p"], window: .segments(20))
        for _ in 0..<3 { try harness.slot() }
        harness.clock.advance(seconds: 3.1)
        harness.origin.tick()  // msn 3 closed as GAP
        // The segment for msn 3 arrives late.
        let receipt = try harness.push("360p", harness.nextSegment("360p"))
        #expect(receipt.msn == 4)
        let playlist = try harness.playlist("360p")
        #expect(playlist.segments[3].gap)
        #expect(playlist.segments[4].discontinuity)
        #expect(
            playlist.segments[4].programDateTime == playlist.segments[3].programDateTime!.adding(milliseconds: 2000))
    }

    @Test func feedReturningMidSlotFillsTheOpenSlot() throws {
        let harness = try Harness(renditions: ["360p"], window: .segments(20))
        for _ in 0..<3 { try harness.slot() }
        harness.clock.advance(seconds: 3.1)
        harness.origin.tick()  // msn 3: GAP
        _ = harness.generators["360p"]!.nextSegment()  // lost
        harness.clock.advance(seconds: 0.9)  // 1 s into slot 4
        let receipt = try harness.push("360p", harness.nextSegment("360p"))
        #expect(receipt.msn == 4)
        harness.clock.advance(seconds: 2)
        harness.origin.tick()
        let playlist = try harness.playlist("360p")
        #expect(playlist.segments.map(\.gap) == [false, false, false, true, false])
        #expect(playlist.segments.map(\.discontinuity) == [false, false, false, false, true])
    }

}

@Suite("PDT arithmetic", .offThePool)
struct ProgramDateTimeArithmeticTests {
    /// 10,000 segments straight into the channel state: EXTINF in whole ms carries its rounding, so PDT tracks the
    /// media timeline to the millisecond, and PDT(n+1) = PDT(n) + EXTINF(n) exactly.
    @Test(arguments: [Int64(180_180), 180_480])  // 2.002 s (29.97 fps) and 2.005333 s (94 AAC frames at 48 kHz)
    func noAccumulatedRoundingOver10000Segments(ticks: Int64) throws {
        var state = ChannelState(
            configuration: ChannelConfiguration(name: "c", renditions: [.init(name: "r")], window: .segments(10_001)),
            firstMSN: 0)
        state.addRendition("r")
        var now: Int64 = 1_767_225_600_000
        let start: Int64 = 900_000
        for n in 0..<Int64(10_000) {
            now += ticks / 90
            let info = SegmentInfo(
                container: .mpegTS,
                tracks: [TrackInfo(kind: .video, codec: "avc1.42c01e", trackID: 256, timescale: 90_000)],
                startTime: MediaTime(ticks: start + n * ticks, timescale: 90_000),
                duration: MediaTime(ticks: ticks, timescale: 90_000), startsWithKeyframe: true, byteCount: 188)
            let result = state.accept(
                rendition: "r", bytes: SharedBytes([0x47]), info: info, nowMilliseconds: now
            ).result
            guard case .success = result else { Issue.record("rejected: \(result)"); return }
        }
        let entries = state.renditions[0].window.entries
        #expect(entries.count == 10_000)
        let anchor = entries[0].programDateTimeMilliseconds
        for (a, b) in zip(entries, entries.dropFirst()) {
            #expect(b.programDateTimeMilliseconds == a.programDateTimeMilliseconds + a.durationMilliseconds)
        }
        // The media time of the last segment's end, in ms, equals its PDT end within 1 ms.
        let mediaEnd = (10_000 * ticks * 1000 + 45_000) / 90_000
        #expect(abs(entries.last!.endMilliseconds - anchor - mediaEnd) <= 1)
        #expect(entries.allSatisfy { !$0.discontinuity })
    }

    /// Packed audio: the start is a 90 kHz timestamp, the duration counts samples at 44.1 kHz.
    @Test func durationInItsOwnTimescale() throws {
        var state = ChannelState(
            configuration: ChannelConfiguration(name: "c", renditions: [.init(name: "a")], window: .segments(100)),
            firstMSN: 0)
        state.addRendition("a")
        var now: Int64 = 1_767_225_600_000
        for n in 0..<Int64(50) {
            now += 2043
            let info = SegmentInfo(
                container: .adts, tracks: [TrackInfo(kind: .audio, codec: "mp4a.40.2", trackID: 1, timescale: 44_100)],
                startTime: MediaTime(ticks: n * 90_112 * 90_000 / 44_100, timescale: 90_000),
                duration: MediaTime(ticks: 90_112, timescale: 44_100), startsWithKeyframe: true, byteCount: 100)
            let result = state.accept(
                rendition: "a", bytes: SharedBytes([0xFF]), info: info, nowMilliseconds: now
            ).result
            guard case .success(let entry) = result else { Issue.record("rejected: \(result)"); return }
            #expect((2043...2044).contains(entry.durationMilliseconds))
            #expect(entry.discontinuity == false)
        }
    }
}
