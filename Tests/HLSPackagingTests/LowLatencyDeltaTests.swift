import HLSPackaging
import HLSPlaylist
import SharedBytes
import TestSupport
import Testing

@testable import LiveTimeline

/// Delta updates (`_HLS_skip=YES` and `v2`) of Low-Latency playlists, against the full playlists they stand for.
@Suite("Low-Latency delta updates", .offThePool)
struct LowLatencyDeltaTests {
    static func parse(_ bytes: SharedBytes) throws -> MediaPlaylist {
        try MediaPlaylist.parse(String(decoding: bytes.array, as: UTF8.self))
    }

    /// The delta with its EXT-X-SKIP replaced by the skipped segments of the previous full playlist (whole, with the
    /// date ranges a client holds from it).
    static func merged(_ delta: MediaPlaylist, previous: MediaPlaylist) throws -> MediaPlaylist {
        let skip = try #require(delta.skip)
        var merged = delta
        merged.skip = nil
        let first = Int(delta.mediaSequence) - Int(previous.mediaSequence)
        try #require(first >= 0 && first + skip.skippedSegments <= previous.segments.count)
        merged.segments = Array(previous.segments[first..<first + skip.skippedSegments]) + delta.segments
        return merged
    }

    /// The playlist without its date ranges (compared apart: a client keeps them by ID, wherever they sit).
    static func withoutDateRanges(_ playlist: MediaPlaylist) -> MediaPlaylist {
        var stripped = playlist
        for index in stripped.segments.indices { stripped.segments[index].dateRanges = [] }
        stripped.segmentInProgress?.dateRanges = []
        return stripped
    }

    static func dateRanges(_ playlist: MediaPlaylist) -> [String: DateRange] {
        let segments = playlist.segments + (playlist.segmentInProgress.map { [$0] } ?? [])
        return Dictionary(segments.flatMap(\.dateRanges).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    @Test
    func everyDeltaMergedWithThePreviousFullPlaylistIsTheFullPlaylistForTenMinutes() throws {
        var channel = try LowLatencyChannel(renditions: ["720p"], window: .segments(8))
        channel.history["720p"] = []
        var checked = (segments: 0, dateRanges: 0, removed: 0)
        var parsed: (version: UInt64, playlist: MediaPlaylist)?
        for slot in 0..<300 {
            if slot % 7 == 3 {
                // Date ranges come and go: each lasts 3 to 9 s and leaves the playlist once the window passes it.
                try channel.addMarker(
                    id: "m\(slot)", startMilliseconds: channel.now + Int64(slot % 3) * 700,
                    duration: Double(3 + slot % 7))
            }
            channel.slot()
            let history = channel.history["720p"]!.filter { $0.playlist != nil }
            channel.history["720p"] = Array(history.suffix(1))
            for (older, newer) in zip(history, history.dropFirst()) {
                let previous =
                    try parsed.flatMap { $0.version == older.version ? $0.playlist : nil }
                    ?? Self.parse(try #require(older.playlist))
                let full = try Self.parse(try #require(newer.playlist))
                parsed = (newer.version, full)
                let lowLatency = try #require(newer.lowLatency)
                // Nothing to skip while the window is shorter than CAN-SKIP-UNTIL.
                guard let yesBytes = lowLatency.skipPlaylist, let v2Bytes = lowLatency.skipPlaylistV2 else {
                    #expect(full.segments.count < 8)
                    continue
                }
                let yes = try Self.parse(yesBytes)
                let v2 = try Self.parse(v2Bytes)
                for delta in [yes, v2] {
                    let merged = try Self.merged(delta, previous: previous)
                    #expect(Self.withoutDateRanges(merged) == Self.withoutDateRanges(full))
                }
                // YES keeps every date range; v2 leaves out those of skipped segments, which the client holds.
                #expect(Self.dateRanges(yes) == Self.dateRanges(full))
                var held = Self.dateRanges(previous)
                let removed = v2.skip?.recentlyRemovedDateRanges ?? []
                for id in removed { held[id] = nil }
                held.merge(Self.dateRanges(v2), uniquingKeysWith: { _, new in new })
                #expect(held == Self.dateRanges(full))
                checked.segments += 1
                checked.dateRanges += Self.dateRanges(full).count
                checked.removed += removed.count
            }
        }
        #expect(checked.segments > 2000)
        #expect(checked.dateRanges > 1000)
        #expect(checked.removed > 100)
    }
}
