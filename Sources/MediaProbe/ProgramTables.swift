/// The PAT and PMT of an MPEG-TS segment (ISO/IEC 13818-1 2.4.4): where the program's elementary streams are.
struct ProgramTables {
    struct Stream {
        var pid: Int
        /// The PMT's stream_type.
        var streamType: UInt8
        /// For DVB private data (0x06) that a descriptor marks as AC-3 or E-AC-3: the ATSC type it stands for
        /// (0x81 / 0x87); else `streamType`.
        var payloadType: UInt8
        /// The DOVI video stream descriptor (tag 0xB0) of a video stream, when the PMT carries one.
        var dolbyVision: DolbyVisionConfiguration? = nil
    }

    var pmtPID: Int
    var streams: [Stream]
    /// PID of the packets carrying the program's PCR.
    var pcrPID: Int
    /// The PAT and PMT sections (table_id ... CRC_32) as sent, reassembled when they span packets.
    var patSection: [UInt8]
    var pmtSection: [UInt8]

    /// Finds the first program in the PAT and reads its PMT.
    init(_ bytes: UnsafeRawBufferPointer, packets: [TransportStreamPacket]) throws(ProbeError) {
        guard let pat = try Self.section(bytes, packets: packets, pid: 0, tableID: 0x00) else {
            throw ProbeError("MPEG-TS: no program association table (PID 0) found")
        }
        patSection = pat
        let pmtPID = try Self.programMapPID(pat)
        self.pmtPID = pmtPID
        guard let pmt = try Self.section(bytes, packets: packets, pid: pmtPID, tableID: 0x02) else {
            throw ProbeError("MPEG-TS: no program map table found on PID \(pmtPID)")
        }
        pmtSection = pmt
        (pcrPID, streams) = try Self.programMap(pmt)
    }

    /// The PMT PID of the first program a PAT section (table_id ... CRC) lists.
    static func programMapPID(_ section: [UInt8]) throws(ProbeError) -> Int {
        let result = section.withUnsafeBytes { buffer in
            Result { () throws(ProbeError) in try programMapPID(buffer, pat: 0..<buffer.count) }
        }
        return try result.get()
    }

    /// The PCR PID and the elementary streams a PMT section (table_id ... CRC) lists.
    static func programMap(_ section: [UInt8]) throws(ProbeError) -> (pcrPID: Int, streams: [Stream]) {
        let result = section.withUnsafeBytes { buffer in
            Result { () throws(ProbeError) in try programMap(buffer, pmt: 0..<buffer.count) }
        }
        return try result.get()
    }

    /// The PMT PID of the first program a PAT section (table_id ... CRC) lists.
    static func programMapPID(_ bytes: UnsafeRawBufferPointer, pat: Range<Int>) throws(ProbeError) -> Int {
        try firstProgram(bytes, pat: pat).pmtPID
    }

    /// The program_number and PMT PID of the first program a PAT section (table_id ... CRC) lists.
    static func firstProgram(_ section: [UInt8]) throws(ProbeError) -> (number: Int, pmtPID: Int) {
        let result = section.withUnsafeBytes { buffer in
            Result { () throws(ProbeError) in try firstProgram(buffer, pat: 0..<buffer.count) }
        }
        return try result.get()
    }

    static func firstProgram(
        _ bytes: UnsafeRawBufferPointer, pat: Range<Int>
    ) throws(ProbeError) -> (number: Int, pmtPID: Int) {
        var reader = ByteReader(bytes, range: pat, context: "MPEG-TS PAT")
        try reader.skip(8)
        while reader.remaining > 4 {
            let programNumber = try reader.readUInt16()
            let pid = Int(try reader.readUInt16() & 0x1FFF)
            if programNumber != 0 { return (Int(programNumber), pid) }
        }
        throw ProbeError("MPEG-TS: the PAT lists no program")
    }

    /// The PCR PID and the elementary streams a PMT section (table_id ... CRC) lists.
    static func programMap(
        _ bytes: UnsafeRawBufferPointer, pmt: Range<Int>
    ) throws(ProbeError) -> (pcrPID: Int, streams: [Stream]) {
        var reader = ByteReader(bytes, range: pmt, context: "MPEG-TS PMT")
        try reader.skip(8)
        let pcrPID = Int(try reader.readUInt16() & 0x1FFF)
        let programInfoLength = Int(try reader.readUInt16() & 0x0FFF)
        try reader.skip(programInfoLength)
        var streams: [Stream] = []
        while reader.remaining > 4 {
            let streamType = try reader.readUInt8()
            let pid = Int(try reader.readUInt16() & 0x1FFF)
            let infoLength = Int(try reader.readUInt16() & 0x0FFF)
            let descriptors = try reader.readRange(infoLength)
            let dolby = streamType == 0x06 ? Self.dolbyStreamType(descriptors: descriptors, in: bytes) : nil
            streams.append(
                Stream(
                    pid: pid, streamType: streamType, payloadType: dolby ?? streamType,
                    dolbyVision: Self.dolbyVisionStreamTypes.contains(streamType)
                        ? Self.dolbyVision(descriptors: descriptors, in: bytes) : nil))
        }
        return (pcrPID, streams)
    }

    /// DVB carries AC-3 / E-AC-3 as private PES (stream type 0x06) tagged by an AC-3 (0x6A) or enhanced AC-3
    /// (0x7A) descriptor, or a registration descriptor (0x05) `AC-3` / `EAC3`: the ATSC stream type (0x81 / 0x87)
    /// it stands for, nil when none.
    private static func dolbyStreamType(descriptors: Range<Int>, in bytes: UnsafeRawBufferPointer) -> UInt8? {
        var offset = descriptors.lowerBound
        while offset + 2 <= descriptors.upperBound {
            let tag = bytes[offset]
            let length = Int(bytes[offset + 1])
            let body = offset + 2
            guard body + length <= descriptors.upperBound else { return nil }
            switch tag {
            case 0x6A: return 0x81
            case 0x7A: return 0x87
            case 0x05 where length >= 4:
                let identifier = FourCC.string(bytes, at: body)
                if identifier == "AC-3" { return 0x81 }
                if identifier == "EAC3" { return 0x87 }
            default: break
            }
            offset = body + length
        }
        return nil
    }

    /// The stream types a DOVI descriptor is taken on: H.264 (0x1B) and HEVC (0x24), the video this probe reads.
    static let dolbyVisionStreamTypes: Set<UInt8> = [0x1B, 0x24]

    /// The DOVI video stream descriptor (0xB0, Dolby Vision streams within MPEG-2 TS) among a stream's descriptors;
    /// nil when absent or malformed.
    private static func dolbyVision(
        descriptors: Range<Int>, in bytes: UnsafeRawBufferPointer
    ) -> DolbyVisionConfiguration? {
        var offset = descriptors.lowerBound
        while offset + 2 <= descriptors.upperBound {
            let length = Int(bytes[offset + 1])
            let body = offset + 2
            guard body + length <= descriptors.upperBound else { return nil }
            if bytes[offset] == 0xB0 {
                return try? DolbyVisionConfiguration(record: Array(bytes[body..<body + length]), transportStream: true)
            }
            offset = body + length
        }
        return nil
    }

    /// The first section with `tableID` on `pid` (table_id ... CRC), reassembled across packets, its CRC checked.
    private static func section(
        _ bytes: UnsafeRawBufferPointer, packets: [TransportStreamPacket], pid: Int, tableID: UInt8
    ) throws(ProbeError) -> [UInt8]? {
        var assembler = PSISectionAssembler()
        var found: [UInt8]?
        for packet in packets where packet.pid == pid {
            let payload = UnsafeRawBufferPointer(rebasing: bytes[packet.payload])
            assembler.consume(payload, unitStart: packet.payloadUnitStart) {
                if found == nil, $0[0] == tableID { found = $0 }
            }
            if let found {
                guard PSISectionAssembler.crcIsValid(found) else {
                    throw ProbeError(
                        "MPEG-TS: table 0x\(ADTSHeader.hex(tableID)) on PID \(pid): CRC_32 does not match the section")
                }
                guard found.count >= 12 else {
                    throw ProbeError(
                        "MPEG-TS: table 0x\(ADTSHeader.hex(tableID)) on PID \(pid): section_length "
                            + "\(found.count - 3) is too short (at least 9)")
                }
                return found
            }
        }
        return nil
    }
}
