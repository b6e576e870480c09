import TestSupport
import Testing

@testable import MediaProbe

/// IMSC1 in fMP4 (`stpp.ttml.im1t`) as an encoder packages it: ffmpeg 5.1 cannot fragment TTML, so the boxes are
/// built here, with the fields the probe reads and nothing else.
@Suite("Subtitle tracks in fMP4", .offThePool)
struct SubtitleFragmentTests {
    static func be32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
    static func be64(_ value: Int) -> [UInt8] { be32(value >> 32) + be32(value & 0xFFFF_FFFF) }

    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        be32(8 + payload.count) + Array(type.utf8) + payload
    }

    static func fullBox(_ type: String, version: UInt8 = 0, flags: Int = 0, _ payload: [UInt8]) -> [UInt8] {
        box(type, [version] + be32(flags).suffix(3) + payload)
    }

    /// ftyp + moov with one `subt` track holding an `stpp` sample entry, timescale 1000, and its trex.
    static func initSection(trackID: Int = 3, sampleEntry: String = "stpp") -> [UInt8] {
        let tkhd = fullBox(
            "tkhd", flags: 7, [UInt8](repeating: 0, count: 8) + be32(trackID) + [UInt8](repeating: 0, count: 68))
        let mdhd = fullBox("mdhd", [UInt8](repeating: 0, count: 8) + be32(1000) + be32(0) + [0x55, 0xC4, 0, 0])
        let hdlr = fullBox("hdlr", be32(0) + Array("subt".utf8) + [UInt8](repeating: 0, count: 12) + [0])
        let entry = box(
            sampleEntry, [0, 0, 0, 0, 0, 0, 0, 1] + Array("http://www.w3.org/ns/ttml\0\0\0".utf8))
        let stbl = box("stbl", fullBox("stsd", be32(1) + entry))
        let minf = box("minf", fullBox("sthd", []) + stbl)
        let trak = box("trak", tkhd + box("mdia", mdhd + hdlr + minf))
        let trex = fullBox("trex", be32(trackID) + be32(1) + be32(2000) + be32(0) + be32(0))
        return box("ftyp", Array("iso6".utf8) + be32(0) + Array("iso6".utf8)) + box("moov", trak + box("mvex", trex))
    }

    /// moof (tfhd default-base-is-moof, tfdt version 1, trun with data offset and sizes) + mdat with one document.
    static func segment(trackID: Int = 3, decodeTime: Int, document: String, sampleDuration: Int? = nil) -> [UInt8] {
        let body = Array(document.utf8)
        func moof(dataOffset: Int) -> [UInt8] {
            let tfhd = fullBox("tfhd", flags: 0x02_0000, be32(trackID))
            let tfdt = fullBox("tfdt", version: 1, be64(decodeTime))
            let trun =
                sampleDuration.map {
                    fullBox("trun", flags: 0x301, be32(1) + be32(dataOffset) + be32($0) + be32(body.count))
                }
                ?? fullBox("trun", flags: 0x201, be32(1) + be32(dataOffset) + be32(body.count))
            return box("moof", fullBox("mfhd", be32(1)) + box("traf", tfhd + tfdt + trun))
        }
        let size = moof(dataOffset: 0).count
        return moof(dataOffset: size + 8) + box("mdat", body)
    }

    static let document = """
        <?xml version="1.0" encoding="UTF-8"?><tt xmlns="http://www.w3.org/ns/ttml" xml:lang="en"><body><div>\
        <p begin="00:00:02.000" end="00:00:03.000">Hello</p></div></body></tt>
        """

    @Test func imscSegmentIsProbedOnItsOwnTrack() throws {
        let initInfo = try MediaProbe.probeInitSection(Self.initSection())
        #expect(initInfo.tracks == [TrackInfo(kind: .subtitles, codec: "stpp.ttml.im1t", trackID: 3, timescale: 1000)])
        let info = try MediaProbe.probeSegment(
            Self.segment(decodeTime: 2000, document: Self.document, sampleDuration: 2000), initSection: initInfo)
        #expect(info.container == .fragmentedMP4Segment)
        #expect(info.tracks.map(\.codec) == ["stpp.ttml.im1t"])
        #expect(info.startTime == MediaTime(ticks: 2000, timescale: 1000))
        #expect(info.duration == MediaTime(ticks: 2000, timescale: 1000))
        #expect(info.startsWithKeyframe)
        #expect(info.closedCaptions == [])
    }

    @Test func sampleDurationComesFromTrexWhenTrunLeavesItOut() throws {
        let initInfo = try MediaProbe.probeInitSection(Self.initSection())
        let info = try MediaProbe.probeSegment(
            Self.segment(decodeTime: 6000, document: Self.document), initSection: initInfo)
        #expect(info.startTime == MediaTime(ticks: 6000, timescale: 1000))
        #expect(info.duration == MediaTime(ticks: 2000, timescale: 1000))
    }

    @Test func wvttTrackIsNamedWvtt() throws {
        let initInfo = try MediaProbe.probeInitSection(Self.initSection(sampleEntry: "wvtt"))
        #expect(initInfo.tracks.map(\.codec) == ["wvtt"])
        #expect(initInfo.tracks.map(\.kind) == [.subtitles])
    }
}
