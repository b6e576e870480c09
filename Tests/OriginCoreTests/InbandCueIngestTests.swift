import Foundation
import HLSPackaging
import HLSPlaylist
import HTTPPushInput
import LiveTimeline
import Logging
import Markers
import MediaProbe
import SharedBytes
import TestSupport
import Testing

@testable import OriginCore

/// SCTE-35 cues in pushed MPEG-TS become markers through the real ingest path (`Channel.applyInbandCues`).
@Suite("SCTE-35 cues through the ingest", .offThePool)
struct InbandCueIngestTests {
    /// ffmpeg's re-mux of the 0x86 fixture: a splice_insert out-point (event 0x1001, 30 s, pts 1000.5 s) and a
    /// provider advertisement start (event 0x2002, type 0x30, pts 700 s).
    static func segment() throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("MediaProbeTests/Fixtures/ts-scte35-0x06.ts")
        return [UInt8](try Data(contentsOf: url))
    }

    static func origin(_ mode: InbandCueMode?, clock: ManualClock) throws -> Origin {
        var channel = ChannelConfiguration(
            name: "ch", renditions: [RenditionConfiguration(name: "hi"), RenditionConfiguration(name: "lo")],
            targetDuration: 2, window: .segments(20))
        if let mode { channel.inbandCues = mode }
        return try Origin(
            configuration: OriginConfiguration(channels: [channel]), clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    @Test("by default each cue is a marker at its splice time; a second rendition's copy makes none more")
    func markersByDefault() throws {
        let clock = ManualClock()
        let origin = try Self.origin(nil, clock: clock)
        let bytes = try Self.segment()
        clock.advance(seconds: 1)
        _ = try origin.ingest(channel: "ch", rendition: "hi", fileName: "0.ts", body: SharedBytes(bytes))
        _ = try origin.ingest(channel: "ch", rendition: "lo", fileName: "0.ts", body: SharedBytes(bytes))
        let channel = try #require(origin.channel(named: "ch"))
        let entry = try #require(channel.snapshot.renditions["hi"]?.entries.first)
        let start = try MediaProbe.probeSegment(bytes).startTime.ticks
        let markers = channel.allMarkers
        #expect(markers.map(\.id) == ["scte35-00002002-003c14dc0-30", "scte35-00001001-0055dfa48"])
        let out = try #require(channel.marker(id: "scte35-00001001-0055dfa48"))
        #expect(out.startDate.millisecondsSince1970 == entry.programDateTimeMilliseconds + (90_045_000 - start + 45) / 90)
        #expect(out.duration == 30)
        #expect(out.source == .inband)
        let ad = try #require(channel.marker(id: "scte35-00002002-003c14dc0-30"))
        #expect(ad.segmentationTypeId == 0x30)
        #expect(ad.plannedDuration == 30)
        let status = try #require(channel.status().inbandCues)
        #expect(status.sectionsRead == 4)
        #expect(status.markersCreated == 2)
        #expect(status.lateCues == 0)
        #expect(status.mode == "markers")
    }

    @Test("inbandCues: ignore reads no cue")
    func ignore() throws {
        let clock = ManualClock()
        let origin = try Self.origin(.ignore, clock: clock)
        clock.advance(seconds: 1)
        _ = try origin.ingest(channel: "ch", rendition: "hi", fileName: "0.ts", body: SharedBytes(try Self.segment()))
        let channel = try #require(origin.channel(named: "ch"))
        #expect(channel.allMarkers.isEmpty)
        #expect(channel.status().inbandCues == nil)
    }
}
