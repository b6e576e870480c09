// An MPEG-TS reader written for the tests only, independent of the modules' writer and probe: it parses what the
// test source and the gap filler wrote so the tests can check it against the standard (ISO/IEC 13818-1), and gives
// every test target the same packets, PES units, timestamps and CRC-32/MPEG-2.

public struct ReaderError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The adaptation field of one packet.
public struct AdaptationField {
    public var discontinuity = false
    public var randomAccess = false
    /// PCR in 27 MHz units.
    public var pcr: Int64?
}

/// One 188-byte transport packet.
public struct TransportPacket {
    public let index: Int
    public let pid: UInt16
    public let payloadUnitStart: Bool
    public let continuityCounter: UInt8
    public let hasPayload: Bool
    public let adaptation: AdaptationField?
    public let payload: [UInt8]
}

/// One reassembled PES packet.
public struct PESUnit {
    public let pid: UInt16
    public let streamID: UInt8
    public let pts: Int64?
    public let dts: Int64?
    public let declaredLength: Int
    public let payload: [UInt8]
    public let firstPacket: TransportPacket
}

public enum TransportStreamReader {
    public static func packets(_ bytes: [UInt8]) throws -> [TransportPacket] {
        guard bytes.count % 188 == 0 else { throw ReaderError("length \(bytes.count) is not a multiple of 188") }
        var result: [TransportPacket] = []
        for index in 0..<bytes.count / 188 {
            let packet = Array(bytes[index * 188..<(index + 1) * 188])
            guard packet[0] == 0x47 else { throw ReaderError("packet \(index): no sync byte") }
            guard packet[1] & 0x80 == 0 else { throw ReaderError("packet \(index): transport error indicator") }
            let pid = UInt16(packet[1] & 0x1F) << 8 | UInt16(packet[2])
            let control = (packet[3] >> 4) & 0x03
            guard packet[3] & 0xC0 == 0, control != 0 else {
                throw ReaderError("packet \(index): scrambled or reserved adaptation_field_control")
            }
            var offset = 4
            var adaptation: AdaptationField?
            if control & 0x02 != 0 {
                let length = Int(packet[4])
                guard 5 + length <= 188 else { throw ReaderError("packet \(index): adaptation field too long") }
                if control == 0x03, length > 182 { throw ReaderError("packet \(index): no room for payload") }
                var field = AdaptationField()
                if length > 0 {
                    let flags = packet[5]
                    field.discontinuity = flags & 0x80 != 0
                    field.randomAccess = flags & 0x40 != 0
                    if flags & 0x10 != 0 {
                        guard length >= 7 else { throw ReaderError("packet \(index): PCR flag in a short field") }
                        var base: Int64 = 0
                        for byte in packet[6...9] { base = base << 8 | Int64(byte) }
                        base = base << 1 | Int64(packet[10] >> 7)
                        let extensionValue = Int64(packet[10] & 0x01) << 8 | Int64(packet[11])
                        guard packet[10] & 0x7E == 0x7E else { throw ReaderError("packet \(index): PCR reserved bits") }
                        field.pcr = base * 300 + extensionValue
                    }
                    // Everything after the flags and the PCR must be stuffing (we use no other optional field).
                    let used = flags & 0x10 != 0 ? 7 : 1
                    if length > used, packet[5 + used..<5 + length].contains(where: { $0 != 0xFF }) {
                        throw ReaderError("packet \(index): adaptation stuffing is not 0xFF")
                    }
                    guard flags & 0x2F == 0 else { throw ReaderError("packet \(index): unexpected adaptation flags") }
                }
                adaptation = field
                offset = 5 + length
            }
            result.append(
                TransportPacket(
                    index: index, pid: pid, payloadUnitStart: packet[1] & 0x40 != 0,
                    continuityCounter: packet[3] & 0x0F, hasPayload: control & 0x01 != 0, adaptation: adaptation,
                    payload: control & 0x01 != 0 ? Array(packet[offset...]) : []))
        }
        return result
    }

    /// The PSI section that starts in this packet (pointer field honoured), checked against its CRC-32.
    public static func section(in packet: TransportPacket) throws -> [UInt8] {
        guard packet.payloadUnitStart, let pointer = packet.payload.first else {
            throw ReaderError("packet \(packet.index): no section start")
        }
        let start = 1 + Int(pointer)
        let payload = packet.payload
        guard start + 3 <= payload.count else { throw ReaderError("section header out of packet") }
        let length = Int(payload[start + 1] & 0x0F) << 8 | Int(payload[start + 2])
        guard start + 3 + length <= payload.count else { throw ReaderError("section longer than its packet") }
        let section = Array(payload[start..<start + 3 + length])
        guard crc(section) == 0 else { throw ReaderError("section CRC mismatch") }
        guard payload[(start + 3 + length)...].allSatisfy({ $0 == 0xFF }) else {
            throw ReaderError("bytes after the section are not 0xFF")
        }
        return section
    }

    /// Table-driven CRC-32/MPEG-2; over a section including its CRC the result is 0.
    public static func crc(_ bytes: [UInt8]) -> UInt32 {
        bytes.reduce(UInt32.max) { crc, byte in
            (crc << 8) ^ crcTable[Int((crc >> 24) ^ UInt32(byte))]
        }
    }

    private static let crcTable: [UInt32] = (0..<256).map { index in
        var value = UInt32(index) << 24
        for _ in 0..<8 { value = value & 0x8000_0000 != 0 ? (value << 1) ^ 0x04C1_1DB7 : value << 1 }
        return value
    }

    /// PMT entries (stream type, PID) and the PCR PID.
    public static func programMap(_ section: [UInt8]) throws -> (pcrPID: UInt16, streams: [(UInt8, UInt16)]) {
        guard section[0] == 0x02 else { throw ReaderError("not a PMT") }
        let pcrPID = UInt16(section[8] & 0x1F) << 8 | UInt16(section[9])
        let infoLength = Int(section[10] & 0x0F) << 8 | Int(section[11])
        var offset = 12 + infoLength
        var streams: [(UInt8, UInt16)] = []
        while offset < section.count - 4 {
            let pid = UInt16(section[offset + 1] & 0x1F) << 8 | UInt16(section[offset + 2])
            streams.append((section[offset], pid))
            offset += 5 + (Int(section[offset + 3] & 0x0F) << 8 | Int(section[offset + 4]))
        }
        return (pcrPID, streams)
    }

    /// Reassembles the PES packets of one PID (the stream must start with a payload unit start).
    public static func pesUnits(_ packets: [TransportPacket], pid: UInt16) throws -> [PESUnit] {
        var units: [PESUnit] = []
        var current: [UInt8] = []
        var first: TransportPacket?
        func finish() throws {
            guard let first else { return }
            units.append(try pes(current, first: first))
        }
        for packet in packets where packet.pid == pid && packet.hasPayload {
            if packet.payloadUnitStart {
                try finish()
                current = []
                first = packet
            } else if first == nil {
                throw ReaderError("PID \(pid): payload before the first unit start")
            }
            current += packet.payload
        }
        try finish()
        return units
    }

    private static func pes(_ bytes: [UInt8], first: TransportPacket) throws -> PESUnit {
        guard bytes.count >= 9, bytes[0] == 0, bytes[1] == 0, bytes[2] == 1 else {
            throw ReaderError("packet \(first.index): no PES start code")
        }
        let declared = Int(bytes[4]) << 8 | Int(bytes[5])
        guard bytes[6] & 0xC0 == 0x80 else { throw ReaderError("PES header marker bits") }
        let flags = bytes[7] >> 6
        let headerLength = Int(bytes[8])
        var pts: Int64?
        var dts: Int64?
        if flags & 0x02 != 0 { pts = try timestamp(bytes[9..<14], prefix: flags == 0x03 ? 0x3 : 0x2) }
        if flags == 0x03 { dts = try timestamp(bytes[14..<19], prefix: 0x1) }
        let payload = Array(bytes[(9 + headerLength)...])
        if declared != 0, declared != bytes.count - 6 {
            throw ReaderError("PES_packet_length \(declared), actual \(bytes.count - 6)")
        }
        return PESUnit(
            pid: first.pid, streamID: bytes[3], pts: pts, dts: dts, declaredLength: declared, payload: payload,
            firstPacket: first)
    }

    private static func timestamp(_ bytes: ArraySlice<UInt8>, prefix: UInt8) throws -> Int64 {
        let b = Array(bytes)
        guard b[0] >> 4 == prefix, b[0] & 1 == 1, b[2] & 1 == 1, b[4] & 1 == 1 else {
            throw ReaderError("timestamp prefix or marker bits wrong")
        }
        let high = Int64(b[0] >> 1 & 0x07) << 30
        let middle = (Int64(b[1]) << 7 | Int64(b[2] >> 1)) << 15
        return high | middle | (Int64(b[3]) << 7 | Int64(b[4] >> 1))
    }

    /// Byte lengths of the ADTS frames in an audio payload.
    public static func adtsFrameLengths(_ payload: [UInt8]) throws -> [Int] {
        var lengths: [Int] = []
        var offset = 0
        while offset < payload.count {
            guard payload[offset] == 0xFF, payload[offset + 1] >> 4 == 0xF else {
                throw ReaderError("no ADTS sync at \(offset)")
            }
            let length =
                Int(payload[offset + 3] & 0x03) << 11 | Int(payload[offset + 4]) << 3
                | Int(payload[offset + 5] >> 5)
            lengths.append(length)
            offset += length
        }
        guard offset == payload.count else { throw ReaderError("ADTS frames overrun the PES payload") }
        return lengths
    }

    /// The first PAT, the first PMT and the packets of the first video access unit (H.264 or HEVC) of `bytes`, no
    /// other stream: what a stream killed just after a keyframe got out (one frame, no audio).
    public static func tablesAndFirstVideoAccessUnit(of bytes: [UInt8]) throws -> [UInt8] {
        let all = try packets(bytes)
        guard let pat = all.first(where: { $0.pid == 0 && $0.payloadUnitStart }) else { throw ReaderError("no PAT") }
        let association = try section(in: pat)
        // The first program's PMT PID (after the 8-byte header: program_number, then the PID).
        let pmtPID = UInt16(association[10] & 0x1F) << 8 | UInt16(association[11])
        guard let pmt = all.first(where: { $0.pid == pmtPID && $0.payloadUnitStart }) else {
            throw ReaderError("no PMT")
        }
        guard let video = try programMap(section(in: pmt)).streams.first(where: { $0.0 == 0x1B || $0.0 == 0x24 })?.1
        else { throw ReaderError("no video stream") }
        var result = [pat, pmt].flatMap { bytes[$0.index * 188..<($0.index + 1) * 188] }
        var starts = 0
        for packet in all where packet.pid == video {
            if packet.payloadUnitStart { starts += 1 }
            if starts > 1 { break }
            result += bytes[packet.index * 188..<(packet.index + 1) * 188]
        }
        return result
    }

    /// H.264 NAL unit types in an Annex B payload.
    public static func nalUnitTypes(_ payload: [UInt8]) -> [UInt8] {
        var types: [UInt8] = []
        var index = 0
        while index + 3 < payload.count {
            if payload[index] == 0, payload[index + 1] == 0, payload[index + 2] == 1 {
                types.append(payload[index + 3] & 0x1F)
                index += 3
            } else {
                index += 1
            }
        }
        return types
    }
}
