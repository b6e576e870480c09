import SCTE35
import TestSupport
import Testing

/// Writes fields MSB first, bit by bit: the expected bytes are built here from the field table of SCTE 35
/// (splice_info_section 9.6, splice_insert 9.7.3, splice_time 9.4.1, break_duration 9.4.2), independently of the
/// byte-wise encoder under test.
struct BitWriter {
    private(set) var bytes: [UInt8] = []
    private var bitCount = 0

    mutating func write(_ value: UInt64, bits: Int) {
        for shift in stride(from: bits - 1, through: 0, by: -1) {
            if bitCount % 8 == 0 { bytes.append(0) }
            if value >> UInt64(shift) & 1 == 1 { bytes[bytes.count - 1] |= 0x80 >> UInt8(bitCount % 8) }
            bitCount += 1
        }
    }
}

/// Builds a splice_info_section carrying a splice_insert from the standard's field layout.
func expectedSpliceInsertSection(
    eventId: UInt32, outOfNetwork: Bool, breakDuration: UInt64?, spliceTime: UInt64? = nil, autoReturn: Bool = true
) -> [UInt8] {
    var command = BitWriter()
    command.write(UInt64(eventId), bits: 32)  // splice_event_id
    command.write(0, bits: 1)  // splice_event_cancel_indicator
    command.write(0x7F, bits: 7)  // reserved
    command.write(outOfNetwork ? 1 : 0, bits: 1)  // out_of_network_indicator
    command.write(1, bits: 1)  // program_splice_flag
    command.write(breakDuration == nil ? 0 : 1, bits: 1)  // duration_flag
    command.write(spliceTime == nil ? 1 : 0, bits: 1)  // splice_immediate_flag
    command.write(1, bits: 1)  // event_id_compliance_flag
    command.write(0x7, bits: 3)  // reserved
    if let spliceTime {
        command.write(1, bits: 1)  // time_specified_flag
        command.write(0x3F, bits: 6)  // reserved
        command.write(spliceTime, bits: 33)  // pts_time
    }
    if let breakDuration {
        command.write(autoReturn ? 1 : 0, bits: 1)  // auto_return
        command.write(0x3F, bits: 6)  // reserved
        command.write(breakDuration, bits: 33)  // duration
    }
    command.write(0, bits: 16)  // unique_program_id
    command.write(0, bits: 8)  // avail_num
    command.write(0, bits: 8)  // avails_expected
    let commandBytes = command.bytes

    var section = BitWriter()
    section.write(0xFC, bits: 8)  // table_id
    section.write(0, bits: 1)  // section_syntax_indicator
    section.write(0, bits: 1)  // private_indicator
    section.write(3, bits: 2)  // sap_type
    section.write(UInt64(11 + commandBytes.count + 2 + 4), bits: 12)  // section_length
    section.write(0, bits: 8)  // protocol_version
    section.write(0, bits: 1)  // encrypted_packet
    section.write(0, bits: 6)  // encryption_algorithm
    section.write(0, bits: 33)  // pts_adjustment
    section.write(0xFF, bits: 8)  // cw_index
    section.write(0xFFF, bits: 12)  // tier
    section.write(UInt64(commandBytes.count), bits: 12)  // splice_command_length
    section.write(0x05, bits: 8)  // splice_command_type
    for byte in commandBytes { section.write(UInt64(byte), bits: 8) }
    section.write(0, bits: 16)  // descriptor_loop_length
    var bytes = section.bytes
    let crc = CRC32MPEG2.checksum(bytes)
    for shift in [24, 16, 8, 0] { bytes.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift))) }
    return bytes
}

func hexBytes(_ text: String) -> [UInt8] {
    let digits = Array(text.dropFirst(2).utf8)
    return stride(from: 0, to: digits.count, by: 2).map {
        UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)!
    }
}

func hexString(_ bytes: [UInt8]) -> String {
    "0x" + bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined()
}

@Suite("SCTE-35 splice_info_section", .offThePool)
struct SCTE35Tests {
    @Test("CRC-32/MPEG-2 check value and a section's CRC")
    func crc() throws {
        #expect(CRC32MPEG2.checksum(Array("123456789".utf8)) == 0x0376_E6E7)
        #expect(CRC32MPEG2.checksum([UInt8]()) == 0xFFFF_FFFF)
        // A splice_insert from a broadcast (time specified, 60.293567 s break, avail descriptor): its CRC is right.
        let broadcast = hexBytes(
            "0xFC302F000000000000FFFFF014054800008F7FEFFE7369C02EFE0052CCF500000000000A0008435545490000013562DBA30A")
        #expect(CRC32MPEG2.checksum(broadcast) == 0)
        let section = try SpliceInfoSection(validating: broadcast)
        #expect(section.commandType == 0x05)
        #expect(section.descriptors == hexBytes("0x0008435545490000013562DBA30A").dropLast(4).map { $0 })
        let insert = try #require(section.spliceInsert)
        #expect(insert.eventId == 0x4800_008F)
        #expect(insert.outOfNetwork)
        #expect(insert.spliceTime == 0x0_7369_C02E)
        #expect(insert.breakDuration == 0x0_0052_CCF5)
        #expect(insert.autoReturn)
    }

    @Test("cue-out with a 30 s break: known bytes from the field layout")
    func cueOutKnownAnswer() throws {
        let insert = SpliceInsert(eventId: 0x1234_ABCD, outOfNetwork: true, breakDuration: 2_700_000)
        let bytes = SpliceInfoSection(spliceInsert: insert).bytes
        #expect(
            bytes == expectedSpliceInsertSection(eventId: 0x1234_ABCD, outOfNetwork: true, breakDuration: 2_700_000))
        #expect(bytes.count == 35)
        // The same bytes written out: header, splice_insert, descriptor_loop_length, CRC_32.
        // header, splice_event_id, flags, break_duration (30 s = 2,700,000 ticks), program/avails, loop length.
        let written = "0xFC3020000000000000FFFFF00F05" + "1234ABCD7FFF" + "FE002932E0" + "00000000" + "0000"
        #expect(hexString(bytes).hasPrefix(written))
        #expect(CRC32MPEG2.checksum(bytes) == 0)
        #expect(SpliceInsert.ticks(seconds: 30) == 2_700_000)
    }

    @Test("cue-in without duration, and a splice time, match the field layout")
    func otherLayouts() throws {
        let cueIn = SpliceInfoSection(spliceInsert: SpliceInsert(eventId: 7, outOfNetwork: false)).bytes
        #expect(cueIn == expectedSpliceInsertSection(eventId: 7, outOfNetwork: false, breakDuration: nil))
        #expect(cueIn.count == 30)
        #expect(hexString(cueIn).hasPrefix("0xFC301B000000000000FFFFF00A05000000077F5F0000000000"))

        let timed = SpliceInsert(
            eventId: 0xFFFF_FFFF, outOfNetwork: true, breakDuration: 0x1_0000_0001, autoReturn: false,
            spliceTime: 0x1_2345_6789)
        let bytes = SpliceInfoSection(spliceInsert: timed).bytes
        #expect(
            bytes
                == expectedSpliceInsertSection(
                    eventId: 0xFFFF_FFFF, outOfNetwork: true, breakDuration: 0x1_0000_0001,
                    spliceTime: 0x1_2345_6789, autoReturn: false))
        let read = try #require(try SpliceInfoSection(validating: bytes).spliceInsert)
        #expect(read == timed)
    }

    @Test("round trip: what is encoded reads back the same")
    func roundTrip() throws {
        for insert in [
            SpliceInsert(eventId: 1, outOfNetwork: true, breakDuration: SpliceInsert.ticks(seconds: 12.5)),
            SpliceInsert(eventId: 2, outOfNetwork: false),
            SpliceInsert(eventId: 3, outOfNetwork: true, uniqueProgramId: 0xBEEF, availNum: 1, availsExpected: 2),
        ] {
            let section = try SpliceInfoSection(validating: SpliceInfoSection(spliceInsert: insert).bytes)
            #expect(section.spliceInsert == insert)
        }
    }

    @Test("a splice_null and a time_signal with a descriptor are valid")
    func otherCommands() throws {
        let null = SpliceInfoSection(commandType: 0x00, command: []).bytes
        #expect(null.count == 20)
        #expect(try SpliceInfoSection(validating: null).commandType == 0)
        let timeSignal = SpliceInfoSection(
            commandType: 0x06, command: [0xFE, 0x00, 0x00, 0x00, 0x10],
            descriptors: [0x02, 0x06, 0x43, 0x55, 0x45, 0x49, 0x00, 0x01]
        ).bytes
        let read = try SpliceInfoSection(validating: timeSignal)
        #expect(read.commandType == 0x06)
        #expect(read.descriptors.count == 8)
        #expect(read.spliceInsert == nil)
    }

    @Test("invalid sections are refused with the field at fault")
    func invalid() throws {
        let good = SpliceInfoSection(spliceInsert: SpliceInsert(eventId: 9, outOfNetwork: true)).bytes
        func message(_ bytes: [UInt8]) -> String {
            do {
                _ = try SpliceInfoSection(validating: bytes)
                return "accepted"
            } catch {
                return error.message
            }
        }
        var wrongTable = good
        wrongTable[0] = 0xFD
        #expect(message(wrongTable).hasPrefix("table_id is 0xFD"))
        #expect(message(Array(good.dropLast())).hasPrefix("section_length is"))
        #expect(message(good + [0]).hasPrefix("section_length is"))
        var badCRC = good
        badCRC[badCRC.count - 1] ^= 0x01
        #expect(message(badCRC).hasPrefix("CRC_32 is"))
        var flipped = good
        flipped[15] ^= 0x10
        #expect(message(flipped).hasPrefix("CRC_32 is"))
        #expect(message([0xFC, 0x30, 0x00]).hasPrefix("a splice_info_section has at least 20 bytes"))
        #expect(message([]).hasPrefix("a splice_info_section has at least 20 bytes"))
        // A command length that does not match the descriptor loop: rebuild with a correct CRC so only it is wrong.
        var lengths = Array(good.dropLast(4))
        lengths[12] -= 1
        let crc = CRC32MPEG2.checksum(lengths)
        for shift in [24, 16, 8, 0] { lengths.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift))) }
        #expect(message(lengths).hasPrefix("descriptor_loop_length"))
        var syntax = Array(good.dropLast(4))
        syntax[1] |= 0x80
        let syntaxCRC = CRC32MPEG2.checksum(syntax)
        for shift in [24, 16, 8, 0] { syntax.append(UInt8(truncatingIfNeeded: syntaxCRC >> UInt32(shift))) }
        #expect(message(syntax) == "section_syntax_indicator must be 0")
    }

    @Test("an encrypted section keeps its encrypted part: what validates re-encodes to the same, valid bytes")
    func encryptedRoundTrip() throws {
        // Found by Fuzz/FuzzSCTE35: the broadcast splice_insert with encrypted_packet set (encryption_algorithm
        // 0x2A, cw_index 0xFF) validated, but `bytes` re-encoded it as an unencrypted section with an empty
        // splice_insert, which does not validate ("splice_insert: cut short").
        let read = hexBytes(
            "0xFC302F00D5000000F7FFFFF014054800008F7FEFFE7369095613" + "0052CCF500000000000A00084355454900000135")
        let crc = CRC32MPEG2.checksum(read)
        let section = read + [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: crc >> UInt32($0)) }
        let parsed = try SpliceInfoSection(validating: section)
        #expect(parsed.encrypted)
        #expect(parsed.command.isEmpty)
        #expect(parsed.descriptors.isEmpty)
        #expect(parsed.spliceInsert == nil)
        #expect(parsed.ptsAdjustment == 0x1_0000_00F7)
        #expect(parsed.bytes == section)
        #expect(try SpliceInfoSection(validating: parsed.bytes) == parsed)
    }
}
