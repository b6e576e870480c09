import Foundation
import HLSPlaylist
import HTTPPushInput
import LiveTimeline
import Markers
import SharedBytes
import TestSource
import TestSupport
import Testing

@testable import OriginCore

/// The cue tags of a rendition's live playlist by MSN, and which MSNs are GAP entries.
private func cueTags(_ harness: MarkerHarness, _ rendition: String) throws -> (tags: [UInt64: [String]], gaps: Set<UInt64>) {
    let playlist = try MediaPlaylist.parse(try harness.text(rendition))
    var tags: [UInt64: [String]] = [:]
    var gaps: Set<UInt64> = []
    for (offset, segment) in playlist.segments.enumerated() {
        let msn = playlist.mediaSequence + UInt64(offset)
        if segment.gap { gaps.insert(msn) }
        let cues = segment.extraTags.filter { $0.hasPrefix("#EXT-X-CUE") || $0.hasPrefix("#EXT-OATCLS") }
        if !cues.isEmpty { tags[msn] = cues }
    }
    return (tags, gaps)
}

@Suite("Cue tag modes in the live playlists: GAPs, renditions, restarts", .offThePool)
struct CueTagPlaylistTests {
    @Test("a break spanning GAP entries keeps CUE-OUT-CONT on them, the same in every rendition")
    func breakSpanningAGap() throws {
        let harness = try MarkerHarness(cueTags: CueTagOptions(mode: .cue, oatcls: true))
        for _ in 0..<4 { try harness.slot() }
        _ = try harness.channel.addMarker(
            MarkerRequest(id: "brk", startDate: harness.now.adding(milliseconds: -1000), duration: 6, scte35: .out))
        // 180p misses the next slots, from the one the break starts on: they close as GAP entries.
        for _ in 0..<3 {
            harness.clock.advance(seconds: 2)
            _ = harness.generators["180p"]!.nextSegment()
            let bytes = SharedBytes(harness.generators["360p"]!.nextSegment().bytes)
            _ = try harness.origin.ingest(channel: "ch", rendition: "360p", fileName: "s.ts", body: bytes)
            harness.origin.tick()
        }
        for _ in 0..<3 { try harness.slot() }
        let low = try cueTags(harness, "180p")
        let high = try cueTags(harness, "360p")
        #expect(!low.gaps.isEmpty, "no GAP entry in 180p")
        #expect(low.gaps.isSubset(of: Set(low.tags.keys)), "GAP entries without a cue tag: \(low)")
        #expect(low.tags == high.tags)
        let lines = low.tags.sorted { $0.key < $1.key }.flatMap(\.value)
        #expect(lines.filter { $0.hasPrefix("#EXT-X-CUE-OUT:") } == ["#EXT-X-CUE-OUT:6.000"])
        #expect(lines.filter { $0 == "#EXT-X-CUE-IN" }.count == 1)
        #expect(lines.filter { $0.hasPrefix("#EXT-X-CUE-OUT-CONT:") }.count == 2)
        #expect(lines.filter { $0.hasPrefix("#EXT-OATCLS-SCTE35:") }.count == 1)
        // cue mode: no DATERANGE for the break.
        #expect(try harness.dateRangeLines("180p").isEmpty)
    }

    @Test("after a restart the same segments carry the same cue tags (markers are journaled, tags derived)")
    func tagsSurviveARestart() throws {
        let clock = ManualClock()
        let options = CueTagOptions(mode: .both, oatcls: true)
        let first = try MarkerHarness(clock: clock, cueTags: options)
        for _ in 0..<4 { try first.slot() }
        _ = try first.channel.addMarker(
            MarkerRequest(id: "brk", startDate: first.now.adding(milliseconds: -3000), plannedDuration: 30, scte35: .out))
        for _ in 0..<3 { try first.slot() }
        let before = try cueTags(first, "360p").tags
        #expect(before.count >= 3)
        let second = try MarkerHarness(directory: first.directory, clock: clock, cueTags: options)
        for _ in 0..<1 { try second.slot() }
        let after = try cueTags(second, "360p").tags
        let common = Set(before.keys).intersection(after.keys)
        #expect(common.count >= 2)
        for msn in common { #expect(before[msn] == after[msn], "msn \(msn)") }
    }

    @Test("a reload that changes cueTags re-opens the channel: the same markers, now shown by cue tags")
    func reloadChangesTheMode() throws {
        let harness = try MarkerHarness()
        for _ in 0..<4 { try harness.slot() }
        _ = try harness.channel.addMarker(
            MarkerRequest(id: "brk", startDate: harness.now.adding(milliseconds: -1000), duration: 6, scte35: .out))
        try harness.slot()
        #expect(try cueTags(harness, "360p").tags.isEmpty)
        #expect(try harness.dateRangeLines("360p").count == 1)
        var channel = ChannelConfiguration(
            name: "ch", renditions: harness.renditions.map { RenditionConfiguration(name: $0) })
        channel.cueTags = .cue
        var configuration = OriginConfiguration(channels: [channel])
        configuration.dataDirectory = harness.directory
        let report = try harness.origin.reload(configuration)
        #expect(report.changed == ["ch"])
        for _ in 0..<3 { try harness.slot() }
        let lines = try cueTags(harness, "360p").tags.sorted { $0.key < $1.key }.flatMap(\.value)
        #expect(lines.first == "#EXT-X-CUE-OUT:6.000", "\(lines)")
        #expect(lines.contains("#EXT-X-CUE-IN"))
        #expect(try harness.dateRangeLines("360p").isEmpty)
    }
}
