import Foundation
import HLSPackaging
import HLSPlaylist
import HTTPPushInput
import Logging
import MediaProbe
import SharedBytes
import TestSource
import TestSourceInput
import TestSupport
import Testing

@testable import LiveTimeline
@testable import OriginCore

/// GAP entries carry filler segments whose timestamps continue the rendition's timeline; the playlist still says
/// EXT-X-GAP.
@Suite("Filler for GAP URLs")
struct GapFillerIntegrationTests {
    /// A push channel on the manual clock (360p, 180p) with the given gap response, fed from test source generators.
    final class Pushed {
        let clock = ManualClock()
        let origin: Origin
        var generators: [String: TestStreamGenerator] = [:]
        /// What was pushed to 180p, in order.
        var pushed180p: [GeneratedSegment] = []

        init(
            gapResponse: GapResponse, outage: OutageMode = .gap, slateClip: String? = nil, window: Int = 100
        ) throws {
            var channel = ChannelConfiguration(
                name: "ch", renditions: [RenditionConfiguration(name: "360p"), RenditionConfiguration(name: "180p")],
                window: .segments(window), gapResponse: gapResponse)
            channel.outage = outage
            channel.slateClip = slateClip
            origin = try Origin(
                configuration: OriginConfiguration(channels: [channel]), clock: clock,
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            for name in ["360p", "180p"] {
                let profile = try #require(TestSourceProfile.named(name))
                generators[name] = try TestStreamGenerator(profile: profile, segmentDuration: 2)
            }
        }

        /// 2 s pass; every rendition not in `dropping` gets its next segment (the dropped ones lose theirs).
        func slot(dropping: [String] = []) throws {
            clock.advance(seconds: 2)
            for name in ["360p", "180p"] {
                let segment = generators[name]!.nextSegment()
                guard !dropping.contains(name) else { continue }
                if name == "180p" { pushed180p.append(segment) }
                _ = try origin.ingest(
                    channel: "ch", rendition: name, fileName: "s.ts", body: SharedBytes(segment.bytes))
            }
            origin.tick()
        }

        /// Three slots, three slots without 180p, the deadline of the last one, two slots.
        func outage() throws {
            for _ in 0..<3 { try slot() }
            for _ in 0..<3 { try slot(dropping: ["180p"]) }
            clock.advance(seconds: 1)
            origin.tick()
            for _ in 0..<2 { try slot() }
        }

        var entries180p: [WindowEntry] { origin.channel(named: "ch")!.snapshot.renditions["180p"]!.entries }
    }

    @Test func gapEntriesCarryFillerContinuingTheTimeline() throws {
        let channel = try Pushed(gapResponse: .filler)
        try channel.outage()
        let entries = channel.entries180p
        #expect(entries.map(\.isGap) == [false, false, false, true, true, true, false, false])
        let gaps = entries.filter(\.isGap)
        let lastReal = try MediaProbe.probeSegment(entries[2].bytes!.array)
        let returning = try MediaProbe.probeSegment(entries[6].bytes!.array)
        #expect(lastReal.startTime.ticks == 126_000 + 2 * 180_000)

        var expectedStart = lastReal.startTime.ticks + lastReal.duration.ticks
        for gap in gaps {
            let filler = try #require(gap.filler)
            let info = try MediaProbe.probeSegment(filler.array)
            #expect(info.startTime.ticks == expectedStart)
            #expect(info.duration.ticks == gap.durationMilliseconds * 90)
            #expect(info.startsWithKeyframe)
            #expect(info.startsWithPATAndPMT)
            #expect(info.tracks.map(\.codec) == lastReal.tracks.map(\.codec))
            expectedStart += info.duration.ticks
        }
        // The encoder's clock ran on through the outage: its next segment starts where the last filler ends.
        #expect(returning.startTime.ticks == expectedStart)
        // The playlist still says EXT-X-GAP, and the healthy rendition has no filler anywhere.
        let snapshot = channel.origin.channel(named: "ch")!.snapshot
        let text = String(decoding: snapshot.renditions["180p"]!.playlist!.array, as: UTF8.self)
        let playlist = try MediaPlaylist.parse(text)
        #expect(playlist.segments.map(\.gap) == entries.map(\.isGap))
        #expect(snapshot.renditions["360p"]!.entries.allSatisfy { $0.filler == nil })
        #expect(entries.filter { !$0.isGap }.allSatisfy { $0.filler == nil })
    }

    @Test func notFoundLeavesGapsWithoutFiller() throws {
        let channel = try Pushed(gapResponse: .notFound)
        try channel.outage()
        let gaps = channel.entries180p.filter(\.isGap)
        #expect(gaps.count == 3)
        #expect(gaps.allSatisfy { $0.filler == nil })
    }

    @Test func renditionWithoutAnMPEGTSSegmentKeepsThe404() throws {
        // Nothing to continue (no segment, or fMP4): no filler, and the state says why.
        var state = ChannelState(configuration: ChannelConfiguration(name: "x"), firstMSN: 0)
        state.addRendition("a")
        let slot = Slot(programDateTimeMilliseconds: 0, durationMilliseconds: 2000)
        #expect(state.fillerSegment(position: 0, msn: 0, slot: slot) == nil)
        guard case .unavailable(let reason) = state.renditions[0].gapFill else {
            Issue.record("expected the filler to be unavailable")
            return
        }
        #expect(reason == "no segment before the gap")
    }

    @Test(.enabled(if: ChildProcess.locate("ffmpeg") != nil, "ffmpeg not installed"), .tags(.endToEnd))
    func ffmpegPlaysThroughTheOutage() async throws {
        let channel = try Pushed(gapResponse: .filler)
        try channel.outage()
        let directory = try TemporaryDirectory.make("GapFill")
        defer { try? FileManager.default.removeItem(at: directory) }
        var playlist = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-PLAYLIST-TYPE:VOD\n"
        for entry in channel.entries180p {
            try Data((entry.bytes ?? entry.filler!).array).write(to: directory.appendingPathComponent(entry.uri))
            playlist += "#EXTINF:2.000,\n\(entry.uri)\n"
        }
        playlist += "#EXT-X-ENDLIST\n"
        try playlist.write(to: directory.appendingPathComponent("index.m3u8"), atomically: true, encoding: .utf8)
        // Bounded: a hung ffmpeg is killed after a minute and the test fails.
        let result = try await ChildProcess.run(
            "ffmpeg", ["-v", "error", "-i", "index.m3u8", "-f", "null", "-"], in: directory)
        let said = result.standardOutput + result.standardError
        #expect(result.status == 0)
        #expect(said == "", "ffmpeg said: \(said)")
    }

    @Test func testSourceChannelsFillWithTheSlate() throws {
        let clock = ManualClock()
        let configuration = ChannelConfiguration(
            name: "demo", renditions: [RenditionConfiguration(name: "360p"), RenditionConfiguration(name: "180p")],
            source: .testSource, window: .segments(100))
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let origin = try Origin(
            configuration: OriginConfiguration(channels: [configuration]), clock: clock, logger: logger)
        let input = try TestSourceInput(origin: origin, logger: logger)
        func run(seconds: Double) {
            for _ in 0..<Int(seconds * 10) {
                clock.advance(seconds: 0.1)
                input.tick()
                origin.tick()
            }
        }
        run(seconds: 6.05)
        try input.feed(channel: "demo")!.dropFeed(seconds: 6, renditions: ["180p"])
        run(seconds: 12)
        let entries = origin.channel(named: "demo")!.snapshot.renditions["180p"]!.entries
        let gaps = entries.filter(\.isGap)
        #expect(gaps.count == 3)
        let slate = try TestStreamGenerator(profile: #require(TestSourceProfile.named("180p")), segmentDuration: 2)
            .slateAccessUnits
        let lastReal = try #require(entries.last { !$0.isGap && $0.msn < gaps[0].msn })
        let lastInfo = try MediaProbe.probeSegment(lastReal.bytes!.array)
        var expectedStart = lastInfo.startTime.ticks + lastInfo.duration.ticks
        for gap in gaps {
            let filler = try #require(gap.filler).array
            let info = try MediaProbe.probeSegment(filler)
            #expect(info.startTime.ticks == expectedStart)
            #expect(info.duration.ticks == 180_000)
            let contents = try TransportStreamContents(filler)
            #expect(contents.pesPackets[0x100]?.count == 50)
            #expect(contents.pesPackets[0x100]?.first?.payload == slate[0])
            expectedStart += 180_000
        }
    }
}
