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
    /// Byte ranges of the PAT and PMT sections (table_id ... CRC_32) inside the segment.
    var patRange: Range<Int>
    var pmtRange: Range<Int>

    /// Finds the first program in the PAT and reads its PMT.
    init(_ bytes: UnsafeRawBufferPointer, packets: [TransportStreamPacket]) throws(ProbeError) {
        guard let pat = try Self.section(bytes, packets: packets, pid: 0, tableID: 0x00) else {
            throw ProbeError("MPEG-TS: no program association table (PID 0) found")
        }
        patRange = pat
        let pmtPID = try Self.programMapPID(bytes, pat: pat)
        self.pmtPID = pmtPID
        guard let pmt = try Self.section(bytes, packets: packets, pid: pmtPID, tableID: 0x02) else {
            throw ProbeError("MPEG-TS: no program map table found on PID \(pmtPID)")
        }
        pmtRange = pmt
        (pcrPID, streams) = try Self.programMap(bytes, pmt: pmt)
    }

    /// The PMT PID of the first program a PAT section (table_id ... CRC) lists.
    static func programMapPID(_ bytes: UnsafeRawBufferPointer, pat: Range<Int>) throws(ProbeError) -> Int {
        var reader = ByteReader(bytes, range: pat, context: "MPEG-TS PAT")
        try reader.skip(8)
        while reader.remaining > 4 {
            let programNumber = try reader.readUInt16()
            let pid = Int(try reader.readUInt16() & 0x1FFF)
            if programNumber != 0 { return pid }
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
                    dolbyVision: Self.dolbyVision(descriptors: descriptors, in: bytes)))
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

    /// The byte range (table_id ... CRC) of the first section with `tableID` on `pid`. The section must lie in the
    /// payload of the packet that starts it (PAT and PMT of HLS segments always do).
    private static func section(
        _ bytes: UnsafeRawBufferPointer, packets: [TransportStreamPacket], pid: Int, tableID: UInt8
    ) throws(ProbeError) -> Range<Int>? {
        for (index, packet) in packets.enumerated() where packet.pid == pid && packet.payloadUnitStart {
            if let range = try sectionRange(bytes, payload: packet.payload, tableID: tableID, packet: index) {
                return range
            }
        }
        return nil
    }

    /// The byte range (table_id ... CRC) of the section with `tableID` that starts in the payload of a packet with
    /// payload_unit_start_indicator set; nil when the payload is empty or starts another table. The section must end
    /// in that payload.
    static func sectionRange(
        _ bytes: UnsafeRawBufferPointer, payload: Range<Int>, tableID: UInt8, packet index: Int
    ) throws(ProbeError) -> Range<Int>? {
        guard !payload.isEmpty else { return nil }
        let pointer = Int(bytes[payload.lowerBound])
        let start = payload.lowerBound + 1 + pointer
        guard start + 3 <= payload.upperBound else {
            throw ProbeError("MPEG-TS packet \(index): PSI pointer_field \(pointer) runs past the packet end")
        }
        guard bytes[start] == tableID else { return nil }
        let sectionLength = Int(bytes[start + 1] & 0x0F) << 8 | Int(bytes[start + 2])
        let end = start + 3 + sectionLength
        guard sectionLength >= 9, end <= payload.upperBound else {
            throw ProbeError(
                "MPEG-TS packet \(index): table 0x\(ADTSHeader.hex(tableID)) section_length \(sectionLength) "
                    + "does not fit the packet (sections spanning packets are not supported)")
        }
        return start..<end
    }
}
