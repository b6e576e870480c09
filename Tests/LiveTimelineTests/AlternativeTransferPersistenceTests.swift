import HLSPlaylist
import MediaProbe
import SharedBytes
import TestSupport
import Testing

@testable import LiveTimeline

/// A rendition's VIDEO-RANGE read from an alternative_transfer_characteristics SEI (BT.2020's 14 stated, HLG 18
/// preferred) stays while the stream states the same transfer and codec: the probe finds the SEI only in a segment's
/// first GOP, and an encoder may send it at the first IRAP only, so a segment without it must not turn the variant
/// SDR between two reloads of the multivariant playlist. A real format change still updates it.
@Suite(.offThePool) struct AlternativeTransferPersistenceTests {
    static let start: Int64 = 1_767_225_600_000

    /// A 2 s MPEG-TS segment `n` whose video states `stated` and is shown with `shown` (what the probe reports: the
    /// SEI's preference when this segment carried it, else the stated transfer).
    static func segment(_ n: Int64, stated: UInt8, shown: UInt8, codec: String = "hvc1.2.4.L120.B0") -> SegmentInfo {
        let video = TrackInfo(
            kind: .video, codec: codec, trackID: 256, timescale: 90_000, transferCharacteristics: shown,
            statedTransferCharacteristics: stated)
        return SegmentInfo(
            container: .mpegTS, tracks: [video], startTime: MediaTime(ticks: 900_000 + n * 180_000, timescale: 90_000),
            duration: MediaTime(ticks: 180_000, timescale: 90_000), startsWithKeyframe: true, byteCount: 188)
    }

    /// The VIDEO-RANGE the rendition lists after each segment, accepted 2 s apart on the manual clock.
    static func listedRanges(_ segments: [SegmentInfo]) throws -> [HLSVideoRange?] {
        var state = ChannelState(
            configuration: ChannelConfiguration(name: "c", renditions: [.init(name: "r")]), firstMSN: 0)
        state.addRendition("r")
        let position = try #require(state.index["r"])
        var now = start
        return try segments.map { info in
            now += 2000
            _ = try state.accept(rendition: "r", bytes: SharedBytes([0x47]), info: info, nowMilliseconds: now)
                .result.get()
            return state.renditions[position].tracks.first { $0.kind == .video }?.transferCharacteristics
                .map(HLSVideoRange.init(transferCharacteristics:))
        }
    }

    @Test func aSegmentWithoutTheSEIKeepsTheRenditionHLG() throws {
        let withSEI = { (n: Int64) in Self.segment(n, stated: 14, shown: 18) }
        let withoutSEI = { (n: Int64) in Self.segment(n, stated: 14, shown: 14) }
        let ranges = try Self.listedRanges([withSEI(0), withoutSEI(1), withoutSEI(2), withSEI(3), withoutSEI(4)])
        #expect(ranges == [.hlg, .hlg, .hlg, .hlg, .hlg])
    }

    @Test func aChangedStatedTransferOrCodecUpdatesTheRange() throws {
        let sdr = try Self.listedRanges([Self.segment(0, stated: 14, shown: 18), Self.segment(1, stated: 1, shown: 1)])
        #expect(sdr == [.hlg, .sdr])
        let recoded = try Self.listedRanges([
            Self.segment(0, stated: 14, shown: 18), Self.segment(1, stated: 14, shown: 14, codec: "hvc1.1.6.L120.B0"),
        ])
        #expect(recoded == [.hlg, .sdr])
        // A stream that never carried the SEI is SDR throughout.
        #expect(try Self.listedRanges([Self.segment(0, stated: 14, shown: 14)]) == [.sdr])
    }
}
