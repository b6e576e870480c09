import HLSPlaylist
import LiveTimeline
import SharedBytes
import TestSource
import TestSupport
import Testing

@testable import OriginCore

/// An encoder stopped mid-segment (ffmpeg with SIGTERM) flushes a short last segment. Chromium's native HLS, having
/// played a playlist's last segment, aligns the next reload on program date-times: it looks for the entry nearest
/// to that segment's PDT + EXTINF and takes any within 1 s. If the reload still ends with a segment under 1 s, the
/// nearest is that same segment: chromium appends it a second time and dies ("Parsed buffers not in DTS
/// sequence", docs/outages.md). It reloads once a target duration, so a short segment must never stay the last
/// entry for a whole target duration: it is listed together with (or shortly before) the entry after it.
@Suite("A segment cut short is listed together with the entry after it", .offThePool)
struct ShortSegmentListingTests {
    /// Ticks every 100 ms for up to `seconds`; returns the times (s from now) at which the rendition's playlist
    /// changed from `since` (its text before) and the times at which its last MSN first reached each MSN.
    static func watch(_ harness: Harness, _ rendition: String, seconds: Double, since: String? = nil) throws -> (
        changes: [Double], listedAt: [UInt64: Double]
    ) {
        var text = harness.text(rendition)
        var changes: [Double] = since != nil && since != text ? [0] : []
        var listedAt: [UInt64: Double] = [:]
        var elapsed = 0.0
        while elapsed <= seconds {
            let playlist = try harness.playlist(rendition)
            let last = playlist.mediaSequence + UInt64(playlist.segments.count) - 1
            if listedAt[last] == nil { listedAt[last] = elapsed }
            harness.clock.advance(seconds: 0.1)
            harness.origin.tick()
            elapsed += 0.1
            if harness.text(rendition) != text {
                text = harness.text(rendition)
                changes.append(elapsed)
            }
        }
        return (changes, listedAt)
    }

    static func lastMSN(_ harness: Harness, _ rendition: String) throws -> UInt64 {
        let playlist = try harness.playlist(rendition)
        return playlist.mediaSequence + UInt64(playlist.segments.count) - 1
    }

    /// Pushes the next segment of every rendition cut after `frames` frames (25 fps).
    static func pushCut(_ harness: Harness, frames: Int) throws {
        for rendition in harness.generators.keys.sorted() {
            let segment = harness.generators[rendition]!.nextSegment(cutAfter: frames)
            _ = try harness.push(rendition, SharedBytes(segment.bytes))
        }
        harness.origin.tick()
    }

    @Test func aSegmentCutShortIsNeverTheLastEntryForATargetDuration() throws {
        let harness = try Harness(renditions: ["360p", "180p"], window: .segments(20))
        for _ in 0..<3 { try harness.slot() }
        let short = try Self.lastMSN(harness, "360p") + 1
        // Stopped 0.8 s into a segment: 20 frames flushed, then nothing more.
        harness.clock.advance(seconds: 0.8)
        try Self.pushCut(harness, frames: 20)
        // Slots are published in every rendition at once: one rendition's playlist tells the timing.
        let (_, listedAt) = try Self.watch(harness, "360p", seconds: 8)
        let shortAt = try #require(listedAt.filter { $0.key >= short }.map(\.value).min(), "\(listedAt)")
        let nextAt = try #require(listedAt.filter { $0.key > short }.map(\.value).min(), "\(listedAt)")
        // Chromium reloads once a target duration (2 s): a reload that finds the short segment last must be
        // followed by one that finds the entry after it.
        #expect(nextAt - shortAt < 2, "msn \(short) was the last entry for \(nextAt - shortAt) s")
        for rendition in ["360p", "180p"] {
            let playlist = try harness.playlist(rendition)
            let entries = playlist.segments.dropFirst(Int(short - playlist.mediaSequence))
            #expect(entries.first?.gap == false && entries.first?.duration == 0.8)
            #expect(entries.dropFirst().first?.gap == true, "the outage starts after the short segment")
        }
    }

    @Test func thePlaylistStillChangesAtLeastEveryOneAndAHalfTargetDurations() throws {
        let harness = try Harness(renditions: ["360p"], window: .segments(20))
        for _ in 0..<3 { try harness.slot() }
        // The previous change was the slot just pushed, 0.8 s before the short segment arrives.
        harness.clock.advance(seconds: 0.8)
        let before = harness.text("360p")
        try Self.pushCut(harness, frames: 20)
        let (changes, _) = try Self.watch(harness, "360p", seconds: 10, since: before)
        let times = [-0.8] + changes
        let longest = zip(times, times.dropFirst()).map { $1 - $0 }.max() ?? 0
        #expect(longest <= 3, "the playlist stood still \(longest) s (RFC 8216 6.2.1: 1.5 target durations)")
    }

    @Test func anEncoderBackRightAfterAShortSegmentFillsTheNextSlotWithoutAGap() throws {
        let harness = try Harness(renditions: ["360p", "180p"], window: .segments(20))
        for _ in 0..<3 { try harness.slot() }
        let short = try Self.lastMSN(harness, "360p") + 1
        harness.clock.advance(seconds: 0.8)
        try Self.pushCut(harness, frames: 20)
        // Started again at once: its first 2 s segment arrives 1.9 s later.
        for rendition in harness.generators.keys {
            harness.generators[rendition]!.restartTimestamps(startPTS: TestStreamGenerator.defaultStartPTS)
        }
        harness.clock.advance(seconds: 1.9)
        for rendition in harness.generators.keys.sorted() {
            _ = try harness.push(rendition, harness.nextSegment(rendition))
        }
        harness.origin.tick()
        for rendition in ["360p", "180p"] {
            let playlist = try harness.playlist(rendition)
            #expect(try Self.lastMSN(harness, rendition) == short + 1, "both listed once the next slot is filled")
            let entries = Array(playlist.segments.dropFirst(Int(short - playlist.mediaSequence)))
            #expect(entries.map(\.gap) == [false, false])
            #expect(entries.map(\.discontinuity) == [false, true])
        }
    }

    @Test func aWholeLastSegmentIsListedAtOnce() throws {
        let harness = try Harness(renditions: ["360p"], window: .segments(20))
        for _ in 0..<3 { try harness.slot() }
        let before = try Self.lastMSN(harness, "360p")
        try harness.slot()
        #expect(try Self.lastMSN(harness, "360p") == before + 1)
    }
}
