import TestSupport
import Testing

@testable import MediaProbe

/// HLG signalled the backward-compatible way: the VUI states an SDR transfer (BT.2020's 14, or none) and an
/// alternative_transfer_characteristics SEI (payload type 147 in H.264 and HEVC) prefers HLG (18). Hand-built access
/// units (the bytes spelled out with CaptionSEITests' helpers) and scripts/make-probe-fixtures section 14 (x265's
/// `atc-sei=18` over `-color_trc bt2020-10`).
@Suite("Alternative transfer characteristics SEI", .offThePool)
struct AlternativeTransferSEITests {
    /// alternative_transfer_characteristics: one byte, preferred_transfer_characteristics.
    static func preferring(_ transfer: UInt8) -> (Int, [UInt8]) { (147, [transfer]) }

    /// A user_data_unregistered message whose UUID holds zero runs: escaped in the NAL unit (00 00 03), so the
    /// message after it is found only when the emulation prevention bytes are removed before the sizes are read.
    static let zeroRunUserData: (Int, [UInt8]) = (5, [UInt8](repeating: 0, count: 16) + [0, 0, 1, 0, 0, 2])

    /// One PES payload: AUD, the SPS (a NAL unit as found, header included), the SEI, an IDR slice.
    static func accessUnit(sps: [UInt8], sei: [UInt8], hevc: Bool) -> [UInt8] {
        let unit = CaptionSEITests.accessUnit(sei: sei, hevc: hevc)
        let delimiterLength = hevc ? 7 : 6
        return Array(unit.prefix(delimiterLength)) + [0, 0, 0, 1] + sps + Array(unit.dropFirst(delimiterLength))
    }

    /// The track an MPEG-TS elementary stream state reports after one access unit.
    static func track(_ payload: [UInt8], hevc: Bool) -> TrackInfo {
        var state = ElementaryStreamState(pid: 0x100, streamType: hevc ? 0x24 : 0x1B)
        payload.withUnsafeBytes {
            state.consume(
                payload: $0, pts: 0,
                packets: ElementaryStreamState.PacketRun(start: 0, end: 188, followsProgramTables: true))
        }
        return state.trackInfo
    }

    static func sps(_ fixture: String, hevc: Bool) throws -> [UInt8] {
        try #require(
            CodecStringTests.firstNAL(
                in: Fixture.bytes(fixture), type: hevc ? NALUnits.hevcSPS : NALUnits.h264SPS, hevc: hevc))
    }

    @Test func h264SDRStreamPreferringHLGInSEIIsHLG() throws {
        let sps = try Self.sps("ts-h264-aac-0.ts", hevc: false)  // no colour description: SDR by itself
        let plain = Self.accessUnit(sps: sps, sei: CaptionSEITests.seiRBSP([Self.zeroRunUserData]), hevc: false)
        #expect(Self.track(plain, hevc: false).transferCharacteristics == 2)  // unspecified
        let sei = CaptionSEITests.seiRBSP([Self.zeroRunUserData, Self.preferring(18)])
        let hlg = Self.accessUnit(sps: sps, sei: sei, hevc: false)
        #expect(hlg.count > plain.count + 2)  // the escaped zero runs are in the NAL unit
        #expect(Self.track(hlg, hevc: false).transferCharacteristics == 18)
    }

    @Test func hevcPrefixSEIPreferringHLGIsHLG() throws {
        let sps = try Self.sps("ts-hevc-aac.ts", hevc: true)
        let sei = CaptionSEITests.seiRBSP([Self.zeroRunUserData, Self.preferring(18)], hevc: true)
        #expect(Self.track(Self.accessUnit(sps: sps, sei: sei, hevc: true), hevc: true).transferCharacteristics == 18)
    }

    @Test func preferenceThatIsNotHDRLeavesTheStatedRange() throws {
        let sdr = try Self.sps("ts-h264-aac-0.ts", hevc: false)
        for preferred: UInt8 in [1, 14, 2, 255] {
            let sei = CaptionSEITests.seiRBSP([Self.preferring(preferred)])
            let track = Self.track(Self.accessUnit(sps: sdr, sei: sei, hevc: false), hevc: false)
            #expect(track.transferCharacteristics == 2)
        }
        // A stream whose VUI states PQ stays PQ: the SEI names an alternative to an SDR-compatible transfer only.
        let pq = try Self.sps("ts-h264-pq-25.ts", hevc: false)
        let sei = CaptionSEITests.seiRBSP([Self.preferring(18)])
        #expect(Self.track(Self.accessUnit(sps: pq, sei: sei, hevc: false), hevc: false).transferCharacteristics == 16)
    }

    @Test func malformedAlternativeTransferSEIIsIgnored() {
        let whole = CaptionSEITests.seiRBSP([Self.zeroRunUserData, Self.preferring(18)])
        // Every truncation: the ATC message is whole (and read) or it is not there; never a trap.
        for length in 0...whole.count {
            var scanner = CaptionSEI()
            scanner.consumeSEI(Array(whole.prefix(length)), headerSize: 1)
            let complete = length >= whole.count - 1  // all but the trailing bits
            #expect(scanner.preferredTransferCharacteristics == (complete ? 18 : nil), "prefix \(length)")
        }
        for hostile: [UInt8] in [
            [0x06, 147, 0, 0x80],  // payloadSize 0: no preferred_transfer_characteristics byte
            [0x06, 147, 2, 18],  // size beyond the RBSP
            [0x06, 0xFF, 0xFF, 0xFF],  // payloadType never ends
            [0x06, 147],  // no size
            [0x06] + [UInt8](repeating: 0xFF, count: 1000),
        ] {
            var scanner = CaptionSEI()
            scanner.consumeSEI(hostile, headerSize: 1)
            #expect(scanner.preferredTransferCharacteristics == nil, "\(hostile.prefix(8))")
        }
    }

    @Test func x265AlternativeTransferSEIOverBT2020IsHLGInTransportStream() throws {
        let sps = try HEVCSequenceParameterSet(
            rbsp: Self.sps("ts-hevc-atc-hlg.ts", hevc: true).withUnsafeBytes { NALUnits.rbsp($0) })
        #expect(sps.transferCharacteristics == 14)  // BT.2020 10-bit: SDR by itself
        let video = try #require(
            MediaProbe.probeSegment(Fixture.bytes("ts-hevc-atc-hlg.ts")).tracks.first { $0.kind == .video })
        #expect(video.transferCharacteristics == 18)
    }

    @Test func x265AlternativeTransferSEIOverBT2020IsHLGInFragmentedMP4() throws {
        let initSection = try Fixture.initSection("fmp4-hevc-atc-hlg-init.mp4")
        #expect(initSection.tracks.first?.transferCharacteristics == 14)  // colr and SPS; the SEI is in the samples
        let segment = try MediaProbe.probeSegment(
            Fixture.bytes("fmp4-hevc-atc-hlg-0.m4s"), initSection: initSection)
        #expect(segment.tracks.first { $0.kind == .video }?.transferCharacteristics == 18)
    }

    /// What each Dolby Vision compatibility id makes of BT.2020's 14 stated with an SEI preferring HLG: the SEI is
    /// applied, then the base layer's compatibility decides (ids 1 PQ, 2 SDR, 4 HLG; the others keep the SEI's HLG).
    static let dolbyOverSEI: [(id: UInt8, expected: UInt8)] = [(1, 16), (2, 1), (4, 18), (6, 18)]

    @Test func dolbyVisionOverTheSEIInTransportStream() throws {
        let sps = try Self.sps("ts-hevc-atc-hlg.ts", hevc: true)
        let sei = CaptionSEITests.seiRBSP([Self.preferring(18)], hevc: true)
        let payload = Self.accessUnit(sps: sps, sei: sei, hevc: true)
        for (id, expected) in Self.dolbyOverSEI {
            var state = ElementaryStreamState(pid: 0x100, streamType: 0x24)
            state.dolbyVision = DolbyVisionConfiguration(profile: 8, level: 6, compatibilityID: Int(id))
            payload.withUnsafeBytes {
                state.consume(
                    payload: $0, pts: 0,
                    packets: ElementaryStreamState.PacketRun(start: 0, end: 188, followsProgramTables: true))
            }
            #expect(state.trackInfo.statedTransferCharacteristics == 14)
            #expect(state.trackInfo.transferCharacteristics == expected, "compatibility id \(id)")
        }
    }

    @Test func dolbyVisionOverTheSEIInFragmentedMP4WhateverTheSampleEntry() throws {
        let original = try Fixture.bytes("fmp4-hevc-atc-hlg-init.mp4")
        let dvh1 = try VideoAttributeTests.dvh1Entry("fmp4-hevc-atc-hlg-init.mp4")
        let segment = try Fixture.bytes("fmp4-hevc-atc-hlg-0.m4s")
        for (entry, base) in [("hvc1", original), ("dvh1", dvh1)] {
            for (id, expected) in Self.dolbyOverSEI {
                let bytes = try VideoAttributeTests.insertingBox(
                    "dvcC", body: VideoAttributeTests.doviRecord(profile: 8, level: 6, compatibility: id),
                    into: ["moov", "trak", "mdia", "minf", "stbl", "stsd", entry], of: base)
                let initSection = try MediaProbe.probeInitSection(bytes)
                let video = try #require(
                    MediaProbe.probeSegment(segment, initSection: initSection).tracks.first { $0.kind == .video })
                #expect(video.transferCharacteristics == expected, "\(entry), compatibility id \(id)")
            }
        }
    }
}
