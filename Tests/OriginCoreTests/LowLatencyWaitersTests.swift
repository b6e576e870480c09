@testable import HLSPackaging
import MediaProbe
import SharedBytes
import Synchronization
import TestSupport
import Testing

@testable import LiveTimeline
@testable import OriginCore

/// Blocking reloads and preload-hinted part watchers against published snapshots built here (parts of 400 ms,
/// segments of 5 parts), and the channel's wait API on a regular channel (whole-segment waits).
@Suite("Low-Latency waiters: release on publish, deadlines, part progress", .offThePool)
struct LowLatencyWaitersTests {
    /// What a rendition `v` lists: segments `0..<completeThrough` closed (5 parts each), then the open segment's
    /// parts up to `last`; `gap` marks parts that are GAP parts; `hint` the preload hint.
    static func snapshot(
        version: UInt64, complete: UInt64?, last: PartPosition?, hint: PartPosition? = nil,
        gap: Set<PartPosition> = [], partBytes: [PartPosition: SharedBytes] = [:]
    ) -> ChannelSnapshot {
        var entries: [WindowEntry] = []
        if let complete {
            for msn in 0...complete {
                entries.append(
                    WindowEntry(
                        msn: msn, durationMilliseconds: 2000, programDateTimeMilliseconds: Int64(msn) * 2000,
                        discontinuity: false, content: .segment(SharedBytes([0x47]), startsWithKeyframe: true),
                        container: .mpegTS, initSectionVersion: nil))
            }
        }
        var parts: [UInt64: [PartEntry]] = [:]
        if let last {
            for msn in (last.msn >= 2 ? last.msn - 2 : 0)...last.msn {
                let count = msn == last.msn ? last.part + 1 : 5
                parts[msn] = (0..<count).map { index in
                    let position = PartPosition(msn: msn, part: index)
                    let content: PartEntry.Content =
                        gap.contains(position)
                        ? .gap : .bytes(partBytes[position] ?? SharedBytes(Array("\(position)".utf8)))
                    return PartEntry(index: index, durationMilliseconds: 400, independent: index == 0, content: content)
                }
            }
        }
        let lowLatency = LowLatencySnapshot(
            partTargetMilliseconds: 400, parts: parts, lastPart: last, preloadHint: hint, skipPlaylist: nil,
            skipPlaylistV2: nil, maximumPartsPerSegment: 6)
        let rendition = RenditionSnapshot(
            name: "v", playlist: SharedBytes(string: "#EXTM3U\n"), version: version, modifiedMilliseconds: 0,
            targetDuration: 2, entries: entries, initSections: [:], currentInitVersion: nil, lowLatency: lowLatency)
        return ChannelSnapshot(
            name: "ch", version: version, multivariantPlaylist: nil, multivariantModifiedMilliseconds: 0,
            renditions: ["v": rendition])
    }

    /// What release closures received, in order.
    final class Released: Sendable {
        let calls = Mutex<[UInt64?]>([])
        func record(_ rendition: RenditionSnapshot?) { calls.withLock { $0.append(rendition?.version) } }
        var all: [UInt64?] { calls.withLock { $0 } }
    }

    /// What a part observer heard.
    final class Heard: Sendable {
        let events = Mutex<[String]>([])
        let bytes = Mutex<[UInt8]>([])
        func hear(_ progress: PartProgress) {
            switch progress {
            case .bytes(let piece):
                bytes.withLock { $0 += piece.array }
                events.withLock { $0.append("bytes") }
            case .complete: events.withLock { $0.append("complete") }
            case .failed: events.withLock { $0.append("failed") }
            }
        }
        var all: [String] { events.withLock { $0 } }
    }

    @Test func aBlockingReloadIsReleasedByThePublishThatListsItsPartAndNotBefore() {
        let waiters = LowLatencyWaiters()
        let released = Released()
        var previous = Self.snapshot(version: 1, complete: 3, last: PartPosition(msn: 4, part: 1))
        _ = waiters.insert(
            rendition: "v", until: PartPosition(msn: 4, part: 3), wholeSegment: false, deadlineMilliseconds: 6000,
            release: released.record)
        let partTwo = Self.snapshot(version: 2, complete: 3, last: PartPosition(msn: 4, part: 2))
        waiters.published(partTwo, previous: previous)
        previous = partTwo
        #expect(released.all.isEmpty)
        #expect(waiters.statistics.waitingReloads.load(ordering: .relaxed) == 1)
        let partThree = Self.snapshot(version: 3, complete: 3, last: PartPosition(msn: 4, part: 3))
        waiters.published(partThree, previous: previous)
        #expect(released.all == [3])
        #expect(waiters.statistics.waitingReloads.load(ordering: .relaxed) == 0)
        // Released once: a later publish calls nothing.
        waiters.published(
            Self.snapshot(version: 4, complete: 3, last: PartPosition(msn: 4, part: 4)), previous: partThree)
        #expect(released.all == [3])
    }

    @Test func aWholeSegmentWaitEndsWhenTheSegmentClosesNotAtItsLastPart() {
        let waiters = LowLatencyWaiters()
        let segment = Released()
        let laterPart = Released()
        _ = waiters.insert(
            rendition: "v", until: PartPosition(msn: 4, part: 0), wholeSegment: true, deadlineMilliseconds: 6000,
            release: segment.record)
        _ = waiters.insert(
            rendition: "v", until: PartPosition(msn: 4, part: 4), wholeSegment: false, deadlineMilliseconds: 6000,
            release: laterPart.record)
        let start = Self.snapshot(version: 1, complete: 3, last: PartPosition(msn: 4, part: 3))
        let lastPart = Self.snapshot(version: 2, complete: 3, last: PartPosition(msn: 4, part: 4))
        waiters.published(lastPart, previous: start)
        // The part wait sorts after the segment wait's MSN but is satisfied first.
        #expect(segment.all.isEmpty)
        #expect(laterPart.all == [2])
        let closed = Self.snapshot(version: 3, complete: 4, last: PartPosition(msn: 4, part: 4))
        waiters.published(closed, previous: lastPart)
        #expect(segment.all == [3])
    }

    @Test func aPartWaitPastTheEndOfAClosedSegmentEndsWithTheNextSegmentsFirstPart() {
        let waiters = LowLatencyWaiters()
        let released = Released()
        _ = waiters.insert(
            rendition: "v", until: PartPosition(msn: 4, part: 5), wholeSegment: false, deadlineMilliseconds: 6000,
            release: released.record)
        let closed = Self.snapshot(version: 1, complete: 4, last: PartPosition(msn: 4, part: 4))
        let next = Self.snapshot(version: 2, complete: 4, last: PartPosition(msn: 5, part: 0))
        waiters.published(closed, previous: Self.snapshot(version: 0, complete: 3, last: nil))
        #expect(released.all.isEmpty)
        waiters.published(next, previous: closed)
        #expect(released.all == [2])
    }

    @Test func aWaitEndsWithNilAtItsDeadlineAndIsCountedAsATimeout() {
        let waiters = LowLatencyWaiters()
        let early = Released()
        let late = Released()
        _ = waiters.insert(
            rendition: "v", until: PartPosition(msn: 9, part: 0), wholeSegment: false, deadlineMilliseconds: 6000,
            release: early.record)
        _ = waiters.insert(
            rendition: "v", until: PartPosition(msn: 9, part: 0), wholeSegment: false, deadlineMilliseconds: 6050,
            release: late.record)
        waiters.expire(nowMilliseconds: 5999)
        #expect(early.all.isEmpty)
        waiters.expire(nowMilliseconds: 6000)
        #expect(early.all == [nil])
        #expect(late.all.isEmpty)
        #expect(waiters.statistics.timeouts.load(ordering: .relaxed) == 1)
        waiters.expire(nowMilliseconds: 6050)
        #expect(late.all == [nil])
        #expect(waiters.statistics.timeouts.load(ordering: .relaxed) == 2)
        #expect(waiters.statistics.waitingReloads.load(ordering: .relaxed) == 0)
    }

    @Test func oneThousandWaitersAreReleasedByOnePublishEachOnce() {
        let waiters = LowLatencyWaiters()
        let released = Released()
        for index in 0..<1000 {
            _ = waiters.insert(
                rendition: "v", until: PartPosition(msn: 4, part: 2 + index % 2), wholeSegment: false,
                deadlineMilliseconds: 6000, release: released.record)
        }
        let start = Self.snapshot(version: 1, complete: 3, last: PartPosition(msn: 4, part: 1))
        let published = Self.snapshot(version: 2, complete: 3, last: PartPosition(msn: 4, part: 3))
        waiters.published(published, previous: start)
        #expect(released.all.count == 1000)
        #expect(released.all.allSatisfy { $0 == 2 })
        #expect(waiters.statistics.waitingReloads.load(ordering: .relaxed) == 0)
        #expect(waiters.statistics.releaseHistogram.count == 1)
        waiters.expire(nowMilliseconds: 10_000)
        #expect(released.all.count == 1000)
    }

    @Test func aTakenBackWaiterIsNotReleased() {
        let waiters = LowLatencyWaiters()
        let released = Released()
        let id = waiters.insert(
            rendition: "v", until: PartPosition(msn: 4, part: 2), wholeSegment: false, deadlineMilliseconds: 6000,
            release: released.record)
        #expect(
            waiters.remove(rendition: "v", id: id, until: PartPosition(msn: 4, part: 2), wholeSegment: false) != nil)
        #expect(
            waiters.remove(rendition: "v", id: id, until: PartPosition(msn: 4, part: 2), wholeSegment: false) == nil)
        waiters.published(
            Self.snapshot(version: 2, complete: 3, last: PartPosition(msn: 4, part: 3)),
            previous: Self.snapshot(version: 1, complete: 3, last: nil))
        #expect(released.all.isEmpty)
    }

    // MARK: - Part watchers

    @Test func aLateWatcherHearsTheBytesAlreadyReceivedThenTheRestAndCompletes() {
        let waiters = LowLatencyWaiters()
        let position = PartPosition(msn: 4, part: 2)
        let whole = SharedBytes((0..<100).map { UInt8($0) })
        let before = Self.snapshot(version: 1, complete: 3, last: PartPosition(msn: 4, part: 1), hint: position)
        waiters.progress(rendition: "v", position: position, .bytes(SharedBytes(whole.array[0..<30]))) { nil }
        let early = Heard()
        let late = Heard()
        waiters.watch(rendition: "v", position: position, deadlineMilliseconds: 6000, observer: early.hear) {
            before.renditions["v"]
        }
        #expect(early.bytes.withLock { $0 } == Array(whole.array[0..<30]))
        waiters.progress(rendition: "v", position: position, .bytes(SharedBytes(whole.array[30..<70]))) { nil }
        waiters.watch(rendition: "v", position: position, deadlineMilliseconds: 6000, observer: late.hear) {
            before.renditions["v"]
        }
        #expect(late.bytes.withLock { $0 } == Array(whole.array[0..<70]))
        #expect(waiters.statistics.waitingParts.load(ordering: .relaxed) == 2)
        // The last 30 bytes come only with the listed part.
        let listed = Self.snapshot(
            version: 2, complete: 3, last: position, hint: PartPosition(msn: 4, part: 3), partBytes: [position: whole])
        waiters.published(listed, previous: before)
        for heard in [early, late] {
            #expect(heard.bytes.withLock { $0 } == whole.array)
            #expect(heard.all.last == "complete")
            #expect(heard.all.filter { $0 == "complete" }.count == 1)
        }
        #expect(waiters.statistics.waitingParts.load(ordering: .relaxed) == 0)
    }

    @Test func aWatcherOfAPartListedMeanwhileHearsAllOfItAtOnce() {
        let waiters = LowLatencyWaiters()
        let position = PartPosition(msn: 4, part: 2)
        let whole = SharedBytes(Array("the whole part".utf8))
        let listed = Self.snapshot(version: 2, complete: 3, last: position, partBytes: [position: whole])
        let heard = Heard()
        waiters.watch(rendition: "v", position: position, deadlineMilliseconds: 6000, observer: heard.hear) {
            listed.renditions["v"]
        }
        #expect(heard.bytes.withLock { $0 } == whole.array)
        #expect(heard.all == ["bytes", "complete"])
    }

    @Test func aWatcherFailsWhenItsPartBecomesAGapIsAbandonedIsSkippedOrTimesOut() {
        let waiters = LowLatencyWaiters()
        let gapPart = PartPosition(msn: 4, part: 2)
        let abandoned = PartPosition(msn: 4, part: 3)
        let skipped = PartPosition(msn: 4, part: 5)
        let timedOut = PartPosition(msn: 6, part: 0)
        let start = Self.snapshot(version: 1, complete: 3, last: PartPosition(msn: 4, part: 1))
        let heard = [gapPart, abandoned, skipped, timedOut].map { position in
            let heard = Heard()
            waiters.watch(rendition: "v", position: position, deadlineMilliseconds: 6000, observer: heard.hear) {
                start.renditions["v"]
            }
            return heard
        }
        let gap = Self.snapshot(version: 2, complete: 3, last: gapPart, gap: [gapPart])
        waiters.published(gap, previous: start)
        #expect(heard[0].all == ["failed"])
        waiters.progress(rendition: "v", position: abandoned, .bytes(SharedBytes([1, 2, 3]))) { nil }
        waiters.progress(rendition: "v", position: abandoned, .failed) { nil }
        #expect(heard[1].all == ["bytes", "failed"])
        // Segment 4 closed with 5 parts: part 5 will never be.
        let closed = Self.snapshot(version: 3, complete: 4, last: PartPosition(msn: 4, part: 4))
        waiters.published(closed, previous: gap)
        #expect(heard[2].all == ["failed"])
        #expect(heard[3].all.isEmpty)
        waiters.expire(nowMilliseconds: 6000)
        #expect(heard[3].all == ["failed"])
        #expect(waiters.statistics.waitingParts.load(ordering: .relaxed) == 0)
        #expect(waiters.statistics.timeouts.load(ordering: .relaxed) == 1)
    }

    @Test func partsListedAreCounted() {
        let waiters = LowLatencyWaiters()
        let first = Self.snapshot(version: 1, complete: 3, last: PartPosition(msn: 4, part: 1))
        waiters.published(first, previous: Self.snapshot(version: 0, complete: 3, last: nil))
        #expect(waiters.statistics.partsListed.load(ordering: .relaxed) == 2)
        // 4.2 ... 4.4, then 5.0 and 5.1.
        waiters.published(
            Self.snapshot(version: 2, complete: 4, last: PartPosition(msn: 5, part: 1)), previous: first)
        #expect(waiters.statistics.partsListed.load(ordering: .relaxed) == 7)
    }

    // MARK: - The channel's API

    @Test func aChannelReleasesAWholeSegmentWaitAtThePushThatCompletesItAndTimesOutOnTheClock() throws {
        let harness = try Harness(renditions: ["360p"])
        try harness.slot()
        let channel = harness.channel
        let edge = try #require(channel.snapshot.renditions["360p"]?.entries.last?.msn)
        let now = harness.clock.nowMilliseconds()
        let atOnce = Released()
        let next = Released()
        let never = Released()
        channel.waitForPart(
            rendition: "360p", until: PartPosition(msn: edge, part: 0), wholeSegment: true,
            deadlineMilliseconds: now + 6000, release: atOnce.record)
        channel.waitForPart(
            rendition: "360p", until: PartPosition(msn: edge + 1, part: 0), wholeSegment: true,
            deadlineMilliseconds: now + 6000, release: next.record)
        channel.waitForPart(
            rendition: "360p", until: PartPosition(msn: edge + 5, part: 0), wholeSegment: true,
            deadlineMilliseconds: now + 3000, release: never.record)
        #expect(atOnce.all.count == 1)
        #expect(next.all.isEmpty)
        try harness.slot()
        #expect(next.all.count == 1)
        #expect(next.all.first! != nil)
        #expect(never.all.isEmpty)
        harness.clock.advance(seconds: 1)
        harness.origin.tick()
        #expect(never.all == [nil])
        #expect(channel.lowLatencyServing.timeouts == 1)
    }
}
