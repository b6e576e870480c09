/// PSI sections of a single-program transport stream, CRC-32 included.
enum ProgramSection {
    /// A PAT with one program.
    static func programAssociation(programNumber: UInt16, pmtPID: UInt16) -> [UInt8] {
        let body: [UInt8] = [
            UInt8(programNumber >> 8), UInt8(programNumber & 0xFF),
            0xE0 | UInt8(pmtPID >> 8), UInt8(pmtPID & 0xFF),
        ]
        return section(tableID: 0x00, tableIDExtension: 1, body: body)  // transport_stream_id 1
    }

    /// A PMT with no descriptors.
    static func programMap(
        programNumber: UInt16, pcrPID: UInt16, streams: [(streamType: UInt8, pid: UInt16)]
    ) -> [UInt8] {
        var body: [UInt8] = [0xE0 | UInt8(pcrPID >> 8), UInt8(pcrPID & 0xFF), 0xF0, 0x00]  // program_info_length 0
        for stream in streams {
            body += [stream.streamType, 0xE0 | UInt8(stream.pid >> 8), UInt8(stream.pid & 0xFF), 0xF0, 0x00]
        }
        return section(tableID: 0x02, tableIDExtension: programNumber, body: body)
    }

    /// A long-form section (version 0, current, section 0 of 0) around `body`, with its CRC.
    private static func section(tableID: UInt8, tableIDExtension: UInt16, body: [UInt8]) -> [UInt8] {
        let sectionLength = 5 + body.count + 4
        var bytes: [UInt8] = [
            tableID, 0xB0 | UInt8(sectionLength >> 8), UInt8(sectionLength & 0xFF),
            UInt8(tableIDExtension >> 8), UInt8(tableIDExtension & 0xFF),
            0xC1,  // reserved, version 0, current_next_indicator
            0x00, 0x00,  // section_number, last_section_number
        ]
        bytes += body
        let crc = crc32(bytes)
        bytes += [UInt8(crc >> 24), UInt8((crc >> 16) & 0xFF), UInt8((crc >> 8) & 0xFF), UInt8(crc & 0xFF)]
        return bytes
    }

    /// CRC-32/MPEG-2: polynomial 0x04C11DB7, initial value all ones, no reflection, no final XOR.
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte) << 24
            for _ in 0..<8 {
                crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1
            }
        }
        return crc
    }
}
