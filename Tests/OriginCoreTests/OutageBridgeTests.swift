import Foundation
import HLSPlaylist
import Logging
import MediaProbe
import SharedBytes
import TestSource
import TestSupport
import Testing

@testable import IngestLoop
@testable import OriginCore

/// `outage: gap` with `gapResponse: filler`: the first slot of an outage after a real segment is listed as a regular
/// segment whose bytes are the filler (it continues each track exactly, so no discontinuity), the rest of the outage
/// as EXT-X-GAP. A player that honours GAP (Chromium's native HLS) then gets the end of the encoder's last segment
/// continued instead of a ragged buffered end it re-appends and dies on (docs/outages.md).
@Suite("The first slot of an outage bridges the encoder's last segment")
struct OutageBridgeTests {
    typealias Pushed = GapFillerIntegrationTests.Pushed

    static func playlist(_ channel: Pushed, _ rendition: String) throws -> MediaPlaylist {
        let snapshot = try #require(channel.origin.channel(named: "ch")?.snapshot.renditions[rendition])
        return try MediaPlaylist.parse(String(decoding: try #require(snapshot.playlist).array, as: UTF8.self))
    }

    @Test func theFirstOutageSlotIsASegmentOfFillerAndTheRestAreGaps() throws {
        let channel = try Pushed(gapResponse: .filler)
        try channel.outage()
        let entries = channel.entries180p
        #expect(entries.map(\.isGap) == [false, false, false, false, true, true, false, false])
        // No discontinuity where the bridge starts (it continues the timestamps); one where the encoder returns.
        #expect(entries.map(\.discontinuity) == [false, false, false, false, false, false, true, false])
        #expect(entries[3].isSlate && entries[3].filler == nil)
        let bridge = try #require(entries[3].bytes)
        let lastReal = try MediaProbe.probeSegment(entries[2].bytes!.array)
        let info = try MediaProbe.probeSegment(bridge.array)
        #expect(info.startTime.ticks == lastReal.startTime.ticks + lastReal.duration.ticks)
        #expect(info.duration.ticks == entries[3].durationMilliseconds * 90)
        #expect(info.startsWithKeyframe)
        // The next GAP's filler continues the bridge.
        let next = try MediaProbe.probeSegment(try #require(entries[4].filler).array)
        #expect(next.startTime.ticks == info.startTime.ticks + info.duration.ticks)
        // The bridge's bytes are the filler a GAP URL answered for that slot before (same MSN, same slot).
        let slate = try Pushed(gapResponse: .filler, outage: .slate)
        try slate.outage()
        #expect(slate.entries180p[3].bytes == bridge)

        for rendition in ["180p", "360p"] {
            let playlist = try Self.playlist(channel, rendition)
            #expect(playlist.discontinuitySequence == 0)
            #expect(playlist.segments.map(\.discontinuity) == [false, false, false, false, false, false, true, false])
        }
        #expect(try Self.playlist(channel, "180p").segments.map(\.gap) == entries.map(\.isGap))
    }

    @Test func anEncoderBackRightAfterTheBridgeStartsADiscontinuity() throws {
        let channel = try Pushed(gapResponse: .filler)
        for _ in 0..<3 { try channel.slot() }
        try channel.slot(dropping: ["180p"])
        channel.clock.advance(seconds: 1)
        channel.origin.tick()
        // The generator ran on: the returning segment continues the media, but the encoder's outage is a join.
        for _ in 0..<2 { try channel.slot() }
        let entries = channel.entries180p
        #expect(entries.map(\.isGap) == [false, false, false, false, false, false])
        #expect(entries.map(\.isSlate) == [false, false, false, true, false, false])
        #expect(entries.map(\.discontinuity) == [false, false, false, false, true, false])
    }

    @Test func withGapURLsAnswering404NothingIsBridged() throws {
        let channel = try Pushed(gapResponse: .notFound)
        try channel.outage()
        let entries = channel.entries180p
        #expect(entries.map(\.isGap) == [false, false, false, true, true, true, false, false])
        #expect(entries.allSatisfy { !$0.isSlate })
    }

    @Test func aSecondOutageIsBridgedToo() throws {
        let channel = try Pushed(gapResponse: .filler)
        try channel.outage()
        try channel.outage()
        let entries = channel.entries180p
        #expect(entries.filter(\.isSlate).map(\.msn) == [3, 11])
        #expect(entries.filter(\.isGap).map(\.msn) == [4, 5, 12, 13])
        #expect(entries.filter(\.discontinuity).map(\.msn) == [6, 14])
    }

    @Test func fragmentedMP4RenditionsAreBridgedWithTheirInitSection() throws {
        let clock = ManualClock()
        let configuration = ChannelConfiguration(
            name: "fm", renditions: [RenditionConfiguration(name: "v")], window: .segments(100),
            gapResponse: .filler)
        let origin = try Origin(
            configuration: OriginConfiguration(channels: [configuration]), clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let initSection = try IFramePlaylistTests.fixture("fmp4-h264-aac-init.mp4")
        _ = try origin.ingest(channel: "fm", rendition: "v", fileName: "init.mp4", body: initSection)
        for n in 0..<2 {
            clock.advance(seconds: 2)
            _ = try origin.ingest(
                channel: "fm", rendition: "v", fileName: "\(n).m4s",
                body: try IFramePlaylistTests.fixture("fmp4-h264-aac-\(n).m4s"))
            origin.tick()
        }
        for _ in 0..<3 {
            clock.advance(seconds: 2)
            origin.tick()
        }
        let entries = try #require(origin.channel(named: "fm")?.snapshot.renditions["v"]?.entries)
        #expect(entries.count >= 4)
        guard entries.count >= 4 else { return }
        #expect(entries.map(\.isGap).prefix(4) == [false, false, false, true])
        #expect(entries.allSatisfy { !$0.discontinuity })
        #expect(entries[2].isSlate && entries[2].container == .fragmentedMP4Segment)
        #expect(entries[2].initSectionVersion == entries[1].initSectionVersion)
        let info = try MediaProbe.probeInitSection(initSection.array)
        let last = try MediaProbe.probeSegment(entries[1].bytes!.array, initSection: info)
        let bridge = try MediaProbe.probeSegment(try #require(entries[2].bytes).array, initSection: info)
        #expect(bridge.startsWithKeyframe)
        #expect(bridge.startTime.ticks == last.startTime.ticks + last.duration.ticks)
    }
}
