/// An SCTE-35 `splice_info_section()` (SCTE 35 section 9.6): the message HLS carries as SCTE35-CMD, SCTE35-OUT and
/// SCTE35-IN (RFC 8216 section 4.3.2.7.1).
///
/// ``bytes`` encodes an unencrypted section: table_id 0xFC, section_syntax_indicator 0, private_indicator 0,
/// sap_type 3 (not specified), protocol_version 0, encrypted_packet 0, cw_index 0xFF, the command, an optional
/// descriptor loop and the CRC_32 (``CRC32MPEG2``). ``init(validating:)`` reads any section and checks its framing;
/// an encrypted section read that way keeps its encrypted part, and ``bytes`` writes it back as read.
public struct SpliceInfoSection: Sendable, Hashable {
    /// `pts_adjustment`, 33 bits.
    public var ptsAdjustment: UInt64
    /// `tier`, 12 bits (0xFFF: no tier).
    public var tier: UInt16
    /// `splice_command_type`, e.g. 0x05 for splice_insert, 0x06 for time_signal.
    public var commandType: UInt8
    /// The `splice_command()` bytes.
    public var command: [UInt8]
    /// The bytes of the descriptor loop (without `descriptor_loop_length`).
    public var descriptors: [UInt8]
    /// `encrypted_packet` of a read section (always false for sections built here).
    public var encrypted: Bool { encryptedPart != nil }
    /// What an encrypted section read by ``init(validating:)`` carries that cannot be decoded here: written back as
    /// read by ``bytes`` (``command`` and ``descriptors`` are empty then).
    private var encryptedPart: EncryptedPart?

    private struct EncryptedPart: Sendable, Hashable {
        /// `encryption_algorithm`, 6 bits.
        var algorithm: UInt8
        /// `cw_index`.
        var cwIndex: UInt8
        /// `splice_command_length`, 12 bits (sent in the clear).
        var commandLength: Int
        /// Everything from `splice_command_type` up to the CRC_32: the command, descriptors, alignment stuffing and
        /// E_CRC_32, encrypted.
        var payload: [UInt8]
    }

    /// `table_id` of every splice_info_section.
    public static let tableId: UInt8 = 0xFC
    /// Largest `section_length` the standard allows.
    public static let maximumSectionLength = 4093

    /// A section carrying one command.
    /// - Parameters:
    ///   - commandType: `splice_command_type`.
    ///   - command: the command bytes.
    ///   - descriptors: descriptor loop bytes. Default: none.
    ///   - ptsAdjustment: `pts_adjustment`. Default: 0.
    ///   - tier: `tier`. Default: 0xFFF.
    public init(
        commandType: UInt8, command: [UInt8], descriptors: [UInt8] = [], ptsAdjustment: UInt64 = 0,
        tier: UInt16 = 0xFFF
    ) {
        self.commandType = commandType
        self.command = command
        self.descriptors = descriptors
        self.ptsAdjustment = ptsAdjustment
        self.tier = tier
        self.encryptedPart = nil
    }

    /// A section carrying a splice_insert.
    public init(spliceInsert: SpliceInsert) {
        self.init(commandType: SpliceInsert.commandType, command: spliceInsert.commandBytes)
    }

    /// The encoded section, CRC_32 included.
    public var bytes: [UInt8] {
        let sectionLength =
            if let encryptedPart { 10 + encryptedPart.payload.count + 4 } else {
                11 + command.count + 2 + descriptors.count + 4
            }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(3 + sectionLength)
        bytes.append(Self.tableId)
        // section_syntax_indicator 0, private_indicator 0, sap_type 3, section_length 12 bits.
        bytes.append(0x30 | UInt8(truncatingIfNeeded: sectionLength >> 8 & 0x0F))
        bytes.append(UInt8(truncatingIfNeeded: sectionLength))
        bytes.append(0)  // protocol_version
        // encrypted_packet, encryption_algorithm 6 bits, pts_adjustment 33 bits.
        let encryption = encryptedPart.map { 0x80 | ($0.algorithm & 0x3F) << 1 } ?? 0
        bytes.append(encryption | UInt8(truncatingIfNeeded: ptsAdjustment >> 32 & 1))
        SpliceInsert.appendBigEndian(ptsAdjustment & 0xFFFF_FFFF, byteCount: 4, to: &bytes)
        bytes.append(encryptedPart?.cwIndex ?? 0xFF)  // cw_index
        // tier 12 bits, splice_command_length 12 bits.
        let commandLength = encryptedPart?.commandLength ?? command.count
        let tierAndLength = UInt64(tier & 0xFFF) << 12 | UInt64(commandLength & 0xFFF)
        SpliceInsert.appendBigEndian(tierAndLength, byteCount: 3, to: &bytes)
        if let encryptedPart {
            bytes += encryptedPart.payload
        } else {
            bytes.append(commandType)
            bytes += command
            SpliceInsert.appendBigEndian(UInt64(descriptors.count), byteCount: 2, to: &bytes)
            bytes += descriptors
        }
        SpliceInsert.appendBigEndian(UInt64(CRC32MPEG2.checksum(bytes)), byteCount: 4, to: &bytes)
        return bytes
    }

    /// The splice_event_id of the splice_insert in a section, or nil when the bytes are not a valid section carrying
    /// a splice_insert.
    public static func eventId(of bytes: [UInt8]) -> UInt32? {
        (try? SpliceInfoSection(validating: bytes))?.spliceInsert?.eventId
    }

    /// The splice_insert this section carries, or nil for another command (or one this type cannot read).
    public var spliceInsert: SpliceInsert? {
        guard commandType == SpliceInsert.commandType, !encrypted else { return nil }
        return try? SpliceInsert(command: command)
    }

    /// Reads a section and checks its framing: table_id 0xFC, section_syntax_indicator 0, section_length equal to
    /// the bytes that follow it (at most 4093), protocol_version 0, the command and descriptor loop lengths adding up
    /// (unless encrypted, or splice_command_length is the legacy 0xFFF) and the CRC_32.
    /// - Parameter bytes: one whole section, nothing before or after it.
    /// - Throws: ``SCTE35Error`` naming the first field at fault.
    public init(validating bytes: [UInt8]) throws(SCTE35Error) {
        guard bytes.count >= 20 else {
            throw SCTE35Error("a splice_info_section has at least 20 bytes, this one has \(bytes.count)")
        }
        guard bytes[0] == Self.tableId else {
            throw SCTE35Error("table_id is 0x\(Self.hex(UInt64(bytes[0]), digits: 2)), expected 0xFC")
        }
        guard bytes[1] & 0x80 == 0 else { throw SCTE35Error("section_syntax_indicator must be 0") }
        let sectionLength = Int(bytes[1] & 0x0F) << 8 | Int(bytes[2])
        guard sectionLength == bytes.count - 3 else {
            throw SCTE35Error("section_length is \(sectionLength) but \(bytes.count - 3) bytes follow it")
        }
        guard sectionLength <= Self.maximumSectionLength else {
            throw SCTE35Error("section_length \(sectionLength) is over \(Self.maximumSectionLength)")
        }
        let expectedCRC = CRC32MPEG2.checksum(bytes[..<(bytes.count - 4)])
        let givenCRC = bytes[(bytes.count - 4)...].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard expectedCRC == givenCRC else {
            throw SCTE35Error(
                "CRC_32 is 0x\(Self.hex(UInt64(givenCRC), digits: 8)), expected 0x\(Self.hex(UInt64(expectedCRC), digits: 8))"
            )
        }
        guard bytes[3] == 0 else { throw SCTE35Error("protocol_version is \(bytes[3]), expected 0") }
        let encrypted = bytes[4] & 0x80 != 0
        let ptsAdjustment = UInt64(bytes[4] & 1) << 32 | bytes[5...8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let tier = UInt16(bytes[10]) << 4 | UInt16(bytes[11] >> 4)
        let commandLength = Int(bytes[11] & 0x0F) << 8 | Int(bytes[12])
        let commandType = bytes[13]
        var command: [UInt8] = []
        var descriptors: [UInt8] = []
        if !encrypted {
            let commandEnd: Int
            if commandLength == 0xFFF {
                // Legacy: the command length is unknown; only a splice_null (empty) can be delimited here.
                guard commandType == 0x00 else {
                    throw SCTE35Error("splice_command_length 0xFFF (unknown) is only accepted for splice_null")
                }
                commandEnd = 14
            } else {
                commandEnd = 14 + commandLength
            }
            guard commandEnd + 2 + 4 <= bytes.count else {
                throw SCTE35Error("splice_command_length \(commandLength) runs past the end of the section")
            }
            command = Array(bytes[14..<commandEnd])
            let loopLength = Int(bytes[commandEnd]) << 8 | Int(bytes[commandEnd + 1])
            guard commandEnd + 2 + loopLength + 4 == bytes.count else {
                throw SCTE35Error(
                    "descriptor_loop_length \(loopLength) does not fit: the command, descriptors and CRC_32 must fill "
                        + "section_length exactly")
            }
            descriptors = Array(bytes[(commandEnd + 2)..<(commandEnd + 2 + loopLength)])
        }
        self.init(
            commandType: commandType, command: command, descriptors: descriptors, ptsAdjustment: ptsAdjustment,
            tier: tier)
        if encrypted {
            encryptedPart = EncryptedPart(
                algorithm: bytes[4] >> 1 & 0x3F, cwIndex: bytes[9], commandLength: commandLength,
                payload: Array(bytes[13..<(bytes.count - 4)]))
        }
        if commandType == SpliceInsert.commandType, !encrypted {
            do {
                _ = try SpliceInsert(command: command)
            } catch let error where error.message.contains("cut short") {
                throw error
            } catch {
                // Cancelled events and component mode are valid SCTE-35: they pass through unread.
            }
        }
    }

    private static func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
