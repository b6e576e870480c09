import TestSupport
import Testing

@testable import MediaProbe

/// Hand-made SEI in the form ATSC A/53 gives (and ffmpeg/x264 write): the bytes of each case are spelled out, so
/// the channel rules are tested one by one.
@Suite("Closed captions in SEI", .offThePool)
struct CaptionSEITests {
    /// One cc_data construct: cc_valid, cc_type and the two bytes (parity is the caller's).
    static func construct(type: UInt8, _ first: UInt8, _ second: UInt8, valid: Bool = true) -> [UInt8] {
        [0xF8 | (valid ? 0x04 : 0) | type, first, second]
    }

    /// The user_data_registered_itu_t_t35 payload carrying `constructs` as GA94 cc_data.
    static func t35(_ constructs: [[UInt8]], identifier: String = "GA94") -> [UInt8] {
        [0xB5, 0x00, 0x31] + Array(identifier.utf8) + [0x03, 0xC0 | UInt8(constructs.count), 0xFF]
            + constructs.flatMap { $0 } + [0xFF]
    }

    /// An SEI RBSP (header included) with the messages (type, payload) in order, and the trailing bits.
    static func seiRBSP(_ messages: [(Int, [UInt8])], hevc: Bool = false) -> [UInt8] {
        var rbsp: [UInt8] = hevc ? [39 << 1, 0x01] : [0x06]
        for (type, payload) in messages {
            rbsp += Array(repeating: 0xFF, count: type / 255) + [UInt8(type % 255)]
            rbsp += Array(repeating: 0xFF, count: payload.count / 255) + [UInt8(payload.count % 255)]
            rbsp += payload
        }
        return rbsp + [0x80]
    }

    /// Inserts emulation prevention bytes, as an encoder does.
    static func escaped(_ rbsp: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        var zeros = 0
        for byte in rbsp {
            if zeros >= 2, byte <= 3 {
                output.append(3)
                zeros = 0
            }
            output.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return output
    }

    /// An Annex B access unit: AUD, the SEI, then a slice (IDR or not) that ends the scan.
    static func accessUnit(sei: [UInt8], idr: Bool = true, hevc: Bool = false) -> [UInt8] {
        let delimiter: [UInt8] = hevc ? [0, 0, 0, 1, 35 << 1, 1, 0x50] : [0, 0, 0, 1, 0x09, 0xF0]
        let slice: [UInt8] =
            hevc
            ? [0, 0, 1, (idr ? 19 : 1) << 1, 1, 0xAF, 0x00, 0x00, 0x03] : [0, 0, 1, idr ? 0x65 : 0x41, 0x88, 0x84]
        return delimiter + [0, 0, 0, 1] + escaped(sei) + slice
    }

    static func channels(_ units: [[UInt8]], hevc: Bool = false) -> [ClosedCaptionChannel] {
        var scanner = CaptionSEI()
        for unit in units {
            unit.withUnsafeBytes { _ = scanner.consumeAnnexB($0, hevc: hevc) }
        }
        return scanner.finish()
    }

    /// Field-1 pairs (with parity) of a pop-on caption on data channel 1 or 2.
    static func popOn(channel: Int, field: UInt8) -> [[UInt8]] {
        let control: UInt8 = channel == 1 ? 0x94 : 0x1C  // 0x14 / 0x1C with odd parity
        return [
            construct(type: field, control, 0x20), construct(type: field, control, 0x20),
            construct(type: field, 0xC8, 0x45),  // "HE"
            construct(type: field, control, 0x2F),
        ]
    }

    @Test func cea608Channel1OfField1IsCC1() {
        let unit = Self.accessUnit(sei: Self.seiRBSP([(4, Self.t35(Self.popOn(channel: 1, field: 0)))]))
        #expect(Self.channels([unit]) == [.cea608(1)])
    }

    @Test func dataChannel2OfField2IsCC4AndField2Channel1IsCC3() {
        let cc4 = Self.accessUnit(sei: Self.seiRBSP([(4, Self.t35(Self.popOn(channel: 2, field: 1)))]))
        #expect(Self.channels([cc4]) == [.cea608(4)])
        let cc3 = Self.accessUnit(sei: Self.seiRBSP([(4, Self.t35(Self.popOn(channel: 1, field: 1)))]))
        #expect(Self.channels([cc3]) == [.cea608(3)])
        let cc2 = Self.accessUnit(sei: Self.seiRBSP([(4, Self.t35(Self.popOn(channel: 2, field: 0)))]))
        #expect(Self.channels([cc2]) == [.cea608(2)])
    }

    @Test func textWithoutAControlCodeCountsForChannel1OfItsField() {
        let text = [Self.construct(type: 0, 0xC8, 0x45), Self.construct(type: 1, 0xC8, 0x45)]
        #expect(Self.channels([Self.accessUnit(sei: Self.seiRBSP([(4, Self.t35(text))]))]) == [.cea608(1), .cea608(3)])
    }

    @Test func paddingInvalidPairsAndXDSNameNoChannel() {
        let quiet = [
            Self.construct(type: 0, 0x80, 0x80),  // field 1 padding
            Self.construct(type: 1, 0x80, 0x80),  // field 2 padding
            Self.construct(type: 0, 0x94, 0x20, valid: false),  // cc_valid 0
            Self.construct(type: 0, 0x14, 0x20),  // even parity: dropped
            Self.construct(type: 1, 0x01, 0x03), Self.construct(type: 1, 0xC8, 0x45),  // XDS start, then XDS data
            Self.construct(type: 2, 0x00, 0x00, valid: false),  // DTVCC padding
        ]
        #expect(Self.channels([Self.accessUnit(sei: Self.seiRBSP([(4, Self.t35(quiet))]))]) == [])
    }

    @Test func cea708ServiceBlocksNameTheirServices() {
        // DTVCC packet: header (sequence 0, packet_size_code 4 = 8 bytes), service 1 block of 2 bytes, then
        // service 7 with extended number 9 and 1 byte, spread over a start construct and data constructs.
        let packet: [UInt8] = [0x04, 0x22, 0x41, 0x42, 0xE1, 0x09, 0x43, 0x00]
        let constructs = [
            Self.construct(type: 3, packet[0], packet[1]), Self.construct(type: 2, packet[2], packet[3]),
            Self.construct(type: 2, packet[4], packet[5]),
        ]
        let next = [Self.construct(type: 2, packet[6], packet[7])]
        let units = [
            Self.accessUnit(sei: Self.seiRBSP([(4, Self.t35(constructs))])),
            Self.accessUnit(sei: Self.seiRBSP([(4, Self.t35(next))]), idr: false),
        ]
        #expect(Self.channels(units) == [.cea708(service: 1), .cea708(service: 9)])
        // A packet with only a null block (service 0) names nothing.
        let empty = [Self.construct(type: 3, 0x01, 0x00)]
        #expect(Self.channels([Self.accessUnit(sei: Self.seiRBSP([(4, Self.t35(empty))]))]) == [])
    }

    @Test func hevcPrefixSEIIsReadLikeH264() {
        let sei = Self.seiRBSP([(4, Self.t35(Self.popOn(channel: 1, field: 0)))], hevc: true)
        #expect(Self.channels([Self.accessUnit(sei: sei, hevc: true)], hevc: true) == [.cea608(1)])
    }

    @Test func otherMessagesAndOtherUserDataAreSkipped() {
        let captions = Self.t35(Self.popOn(channel: 1, field: 0))
        let unregistered = (5, [UInt8](repeating: 0x00, count: 300))  // 16-byte UUID + text, 0xFF size extension
        let afd = (4, [0xB5, 0x00, 0x31] + Array("DTG1".utf8) + [0x41, 0xF8])
        let other = (4, Self.t35(Self.popOn(channel: 2, field: 0), identifier: "GA95"))
        let unit = Self.accessUnit(sei: Self.seiRBSP([unregistered, afd, other, (4, captions)]))
        #expect(Self.channels([unit]) == [.cea608(1)])
    }

    @Test func seiAfterTheFirstSliceIsNotRead() {
        let sei = Self.escaped(Self.seiRBSP([(4, Self.t35(Self.popOn(channel: 1, field: 0)))]))
        let unit: [UInt8] = [0, 0, 0, 1, 0x09, 0xF0, 0, 0, 1, 0x65, 0x88, 0x84, 0, 0, 0, 1] + sei
        #expect(Self.channels([unit]) == [])
    }

    @Test func readsAtMost64SEIUnits() {
        var scanner = CaptionSEI()
        let silent = Self.accessUnit(sei: Self.seiRBSP([(4, Self.t35([Self.construct(type: 0, 0x80, 0x80)]))]))
        for _ in 0..<CaptionSEI.maximumSEIUnits {
            silent.withUnsafeBytes { _ = scanner.consumeAnnexB($0, hevc: false) }
        }
        #expect(scanner.isExhausted)
        let late = Self.accessUnit(sei: Self.seiRBSP([(4, Self.t35(Self.popOn(channel: 1, field: 0)))]))
        late.withUnsafeBytes { _ = scanner.consumeAnnexB($0, hevc: false) }
        #expect(scanner.finish() == [])
    }

    @Test func truncatedAndHostileSEIGiveNoChannelAndNoCrash() {
        let full = Self.seiRBSP([(4, Self.t35(Self.popOn(channel: 1, field: 0)))])
        for length in 0...full.count {
            var scanner = CaptionSEI()
            scanner.consumeSEI(Array(full.prefix(length)), headerSize: 1)
            _ = scanner.finish()
        }
        var scanner = CaptionSEI()
        scanner.consumeSEI([0x06] + Array(repeating: 0xFF, count: 1000), headerSize: 1)
        scanner.consumeSEI([0x06, 0x04, 0xFF, 0xFF, 0x10], headerSize: 1)  // size beyond the RBSP
        // cc_count 31 with only one construct present.
        scanner.consumeSEI(
            Self.seiRBSP([(4, [0xB5, 0x00, 0x31, 0x47, 0x41, 0x39, 0x34, 0x03, 0xDF, 0xFF, 0xFC])]),
            headerSize: 1)
        #expect(scanner.finish() == [])
    }

    @Test func lengthPrefixedSamplesAreReadWithTheirLengthSize() {
        let sei = Self.escaped(Self.seiRBSP([(4, Self.t35(Self.popOn(channel: 1, field: 0)))]))
        let slice: [UInt8] = [0x65, 0x88, 0x84]
        for lengthSize in [1, 2, 4] {
            func prefixed(_ unit: [UInt8]) -> [UInt8] {
                (0..<lengthSize).reversed().map { UInt8(truncatingIfNeeded: unit.count >> (8 * $0)) } + unit
            }
            let sample = prefixed([0x09, 0xF0]) + prefixed(sei) + prefixed(slice)
            var scanner = CaptionSEI()
            let keyframe = sample.withUnsafeBytes {
                scanner.consumeLengthPrefixed($0, lengthSize: lengthSize, hevc: false)
            }
            #expect(keyframe == true)
            #expect(scanner.finish() == [.cea608(1)])
        }
    }

    /// libx264 re-encoded the test source's captions profile with `-a53cc` (scripts/make-probe-fixtures, step 9):
    /// SEI written by a third party, in MPEG-TS (Annex B) and fMP4 (length-prefixed samples).
    @Test func x264CaptionsAreFoundInTransportStreamAndFragmentedMP4() throws {
        let ts = try MediaProbe.probeSegment(Fixture.bytes("ts-h264-cc1.ts"))
        #expect(ts.closedCaptions == [.cea608(1)])
        let initSection = try Fixture.initSection("fmp4-h264-cc1-init.mp4")
        let fmp4 = try MediaProbe.probeSegment(Fixture.bytes("fmp4-h264-cc1-0.m4s"), initSection: initSection)
        #expect(fmp4.closedCaptions == [.cea608(1)])
        #expect(fmp4.startsWithKeyframe)
    }

    @Test func captionFreeSegmentsGiveNoChannels() throws {
        #expect(try MediaProbe.probeSegment(Fixture.bytes("ts-h264-aac-0.ts")).closedCaptions == [])
        #expect(try MediaProbe.probeSegment(Fixture.bytes("ts-hevc-aac.ts")).closedCaptions == [])
        let initSection = try Fixture.initSection("fmp4-h264-aac-init.mp4")
        #expect(initSection.nalUnitLengthSizes == [1: 4])
        let segment = try MediaProbe.probeSegment(Fixture.bytes("fmp4-h264-aac-0.m4s"), initSection: initSection)
        #expect(segment.closedCaptions == [])
        let hevc = try Fixture.initSection("fmp4-hevc-init.mp4")
        #expect(hevc.nalUnitLengthSizes == [1: 4])
        #expect(try MediaProbe.probeSegment(Fixture.bytes("fmp4-hevc-0.m4s"), initSection: hevc).closedCaptions == [])
    }
}
