import HLSPlaylist
import MediaProbe
import SharedBytes
import TestSupport
import Testing

@testable import LiveTimeline
@testable import OriginCore

@Suite("Live window", .offThePool)
struct LiveWindowTests {
    func entry(_ msn: UInt64, ms: Int64 = 2000, discontinuity: Bool = false, gap: Bool = false) -> WindowEntry {
        WindowEntry(
            msn: msn, durationMilliseconds: ms, programDateTimeMilliseconds: Int64(msn) * ms,
            discontinuity: discontinuity,
            content: gap ? .gap(filler: nil) : .segment(SharedBytes([0x47]), startsWithKeyframe: true),
            container: .mpegTS, initSectionVersion: nil)
    }

    @Test func slidesAndCountsMediaSequence() {
        var window = LiveWindow(length: .segments(3), targetDuration: 2)
        for msn in 0..<10 { window.append(entry(UInt64(msn)), nowMilliseconds: 0) }
        #expect(window.entries.map(\.msn) == [7, 8, 9])
        #expect(window.mediaSequence == 7)
        #expect(window.retained.map(\.entry.msn) == Array(0...6))
    }

    @Test func neverHoldsLessThanThreeTargetDurations() {
        var window = LiveWindow(length: .segments(1), targetDuration: 2)
        for msn in 0..<10 { window.append(entry(UInt64(msn)), nowMilliseconds: 0) }
        // 1 segment asked, but 3 x TD = 6 s must stay listed.
        #expect(window.entries.count == 3)
        #expect(window.durationMilliseconds == 6000)
    }

    @Test func secondsWindow() {
        var window = LiveWindow(length: .seconds(10), targetDuration: 2)
        for msn in 0..<20 { window.append(entry(UInt64(msn)), nowMilliseconds: 0) }
        #expect(window.durationMilliseconds == 10_000)
        #expect(window.entries.first?.msn == 15)
    }

    @Test func discontinuitySequenceCountsRemovedDiscontinuities() {
        var window = LiveWindow(length: .segments(3), targetDuration: 2)
        for msn in 0..<8 { window.append(entry(UInt64(msn), discontinuity: msn == 2 || msn == 5), nowMilliseconds: 0) }
        // Entries 0...4 removed: one discontinuity (msn 2) left the head.
        #expect(window.entries.map(\.msn) == [5, 6, 7])
        #expect(window.discontinuitySequence == 1)
        window.append(entry(8), nowMilliseconds: 0)
        // msn 5 carried a discontinuity and left.
        #expect(window.discontinuitySequence == 2)
    }

    @Test func removedEntriesStayForTheirDurationPlusTheWindow() {
        var window = LiveWindow(length: .segments(3), targetDuration: 2)
        for msn in 0..<4 { window.append(entry(UInt64(msn)), nowMilliseconds: 100_000) }
        // msn 0 removed at t=100 s; window then holds 6 s: released at 100 + 2 + 6 = 108 s.
        #expect(window.retained.first?.releaseAtMilliseconds == 108_000)
        let releasedEarly = window.releaseExpired(nowMilliseconds: 107_999)
        #expect(!releasedEarly)
        #expect(window.entry(msn: 0) != nil)
        let released = window.releaseExpired(nowMilliseconds: 108_000)
        #expect(released)
        #expect(window.entry(msn: 0) == nil)
    }

    /// A removed GAP entry's URL keeps answering its filler like a removed segment's URL answers its bytes (a
    /// player that read the playlist just before the removal may still ask for it).
    @Test func gapEntriesAreRetainedLikeSegments() {
        var window = LiveWindow(length: .segments(3), targetDuration: 2)
        for msn in 0..<5 {
            let filler = SharedBytes([0x47, UInt8(msn)])
            window.append(
                msn == 0
                    ? WindowEntry(
                        msn: 0, durationMilliseconds: 2000, programDateTimeMilliseconds: 0, discontinuity: false,
                        content: .gap(filler: filler), container: .mpegTS, initSectionVersion: nil)
                    : entry(UInt64(msn)), nowMilliseconds: 100_000)
        }
        #expect(window.retained.map(\.entry.msn) == [0, 1])
        #expect(window.entry(msn: 0)?.filler == SharedBytes([0x47, 0]))
        // Removed at 100 s with 6 s listed after it: released at 100 + 2 + 6 s, as a segment would be.
        #expect(window.retained.first?.releaseAtMilliseconds == 108_000)
        window.releaseExpired(nowMilliseconds: 108_000)
        #expect(window.entry(msn: 0) == nil)
    }
}
