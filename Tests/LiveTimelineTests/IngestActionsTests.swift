import MediaProbe
import SharedBytes
import TestSupport
import Testing

@testable import LiveTimeline

/// The ingest loop decides and its owner acts: `ChannelState` returns what must be journaled and published.
@Suite("Ingest loop actions: journal before publish, publish only on change", .offThePool)
struct IngestActionsTests {
    static let start: Int64 = 1_767_225_600_000

    static func segment(_ n: Int64) -> SegmentInfo {
        SegmentInfo(
            container: .mpegTS,
            tracks: [TrackInfo(kind: .video, codec: "avc1.42c01e", trackID: 256, timescale: 90_000)],
            startTime: MediaTime(ticks: 900_000 + n * 180_000, timescale: 90_000),
            duration: MediaTime(ticks: 180_000, timescale: 90_000), startsWithKeyframe: true, byteCount: 188)
    }

    static func journaledState() -> ChannelState {
        var state = ChannelState(
            configuration: ChannelConfiguration(name: "c", renditions: [.init(name: "r")]), firstMSN: 10)
        state.journal.msnReservedBelow = 10
        state.addRendition("r")
        return state
    }

    @Test func anAcceptedSegmentIsPublishedAndItsMSNReservedInTheJournalFirst() throws {
        var state = Self.journaledState()
        let (result, actions) = state.accept(
            rendition: "r", bytes: SharedBytes([0x47]), info: Self.segment(0), nowMilliseconds: Self.start)
        let entry = try result.get()
        #expect(entry.msn == 10)
        #expect(actions.publish)
        let record = try #require(actions.journalRecord)
        #expect(record.msnReservedThrough >= entry.msn)
    }

    @Test func aRefusedSegmentPublishesNothing() {
        var state = Self.journaledState()
        var empty = Self.segment(0)
        empty.duration = MediaTime(ticks: 0, timescale: 90_000)
        let (result, actions) = state.accept(
            rendition: "r", bytes: SharedBytes([0x47]), info: empty, nowMilliseconds: Self.start)
        #expect(throws: IngestError.self) { try result.get() }
        #expect(!actions.publish)
        #expect(state.renditions[0].statistics.segmentsRejected == 1)
    }

    @Test func aTickWithNothingDueAsksForNothing() {
        var state = Self.journaledState()
        _ = state.accept(rendition: "r", bytes: SharedBytes([0x47]), info: Self.segment(0), nowMilliseconds: Self.start)
        let actions = state.tick(nowMilliseconds: Self.start)
        #expect(!actions.publish)
        #expect(actions.journalRecord == nil)
    }

    @Test func aTickPastTheDeadlineWritesAGapAndPublishes() throws {
        var state = Self.journaledState()
        var now = Self.start
        for n in 0..<4 {
            now += 2000
            _ = state.accept(
                rendition: "r", bytes: SharedBytes([0x47]), info: Self.segment(Int64(n)), nowMilliseconds: now)
        }
        let actions = state.tick(nowMilliseconds: now + 4000)
        #expect(actions.publish)
        #expect(try #require(state.renditions[0].window.entries.last).isGap)
    }

    @Test func everyPublishedSlotIsJournaledBeforeItIsServedEvenWithinTheRefreshPeriod() throws {
        // Two renditions 50 ms apart: the first one's segment is journaled (the refresh period has passed), the
        // second one's completes the slot 50 ms later, well within the refresh period, and publishes it.
        var state = ChannelState(
            configuration: ChannelConfiguration(name: "c", renditions: [.init(name: "a"), .init(name: "b")]),
            firstMSN: 10)
        state.journal.msnReservedBelow = 10
        state.addRendition("a")
        state.addRendition("b")
        var now = Self.start
        var published = 0
        for n in 0..<6 {
            now += 2000
            for (name, delay) in [("a", Int64(0)), ("b", Int64(50))] {
                let (result, actions) = state.accept(
                    rendition: name, bytes: SharedBytes([0x47]), info: Self.segment(Int64(n)),
                    nowMilliseconds: now + delay)
                let entry = try result.get()
                guard name == "b", state.renditions[1].window.lastMSN == entry.msn else { continue }
                published += 1
                // The slot is listed: the record written with it ends where the listed edge ends.
                let record = try #require(actions.journalRecord, "slot \(entry.msn) published unjournaled")
                #expect(record.renditions["b"]?.lastProgramDateTimeEndMilliseconds == entry.endMilliseconds)
                #expect(record.renditions["a"]?.lastMSN == entry.msn)
                // Nothing changed since: a tick within the refresh period asks for nothing.
                #expect(state.tick(nowMilliseconds: now + delay + 1).journalRecord == nil)
            }
        }
        #expect(published == 6)
    }
}
