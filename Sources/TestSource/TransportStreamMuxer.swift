/// Writes the test source's MPEG-TS: one program, fixed PIDs, PCR on the video PID, and continuity counters that
/// run on from one segment to the next, as in one endless stream.
///
/// A value type: the generator owns one and mutates it as it writes packets.
struct TransportStreamMuxer: Sendable {
    static let packetSize = 188
    static let patPID: UInt16 = 0x0000
    static let pmtPID: UInt16 = 0x1000
    static let videoPID: UInt16 = 0x0100
    static let audioPID: UInt16 = 0x0101
    static let allPIDs: [UInt16] = [patPID, pmtPID, videoPID, audioPID]
    /// Stream types in the PMT: H.264 video and ADTS AAC audio.
    static let videoStreamType: UInt8 = 0x1B
    static let audioStreamType: UInt8 = 0x0F
    /// PES stream ids.
    static let videoStreamID: UInt8 = 0xE0
    static let audioStreamID: UInt8 = 0xC0

    /// The PAT section (program 1 → PMT PID), CRC included.
    static let patSection: [UInt8] = ProgramSection.programAssociation(programNumber: 1, pmtPID: pmtPID)
    /// The PMT section (PCR on the video PID, video then audio), CRC included.
    static let pmtSection: [UInt8] = ProgramSection.programMap(
        programNumber: 1, pcrPID: videoPID,
        streams: [(videoStreamType, videoPID), (audioStreamType, audioPID)])

    /// The continuity counter each PID's next packet carries, indexed like ``allPIDs``.
    private var continuityCounters: [UInt8] = [0, 0, 0, 0]
    /// PIDs whose next packet carries the discontinuity indicator.
    private var pendingDiscontinuity: Set<UInt16> = []

    /// Starts over: continuity counters from 0, and the next packet of every PID flags the discontinuity.
    mutating func restart() {
        continuityCounters = [0, 0, 0, 0]
        pendingDiscontinuity = Set(Self.allPIDs)
    }

    /// Appends one PAT packet and one PMT packet.
    mutating func writeProgramTables(into output: inout [UInt8]) {
        writeSection(Self.patSection, pid: Self.patPID, into: &output)
        writeSection(Self.pmtSection, pid: Self.pmtPID, into: &output)
    }

    /// Appends one video access unit as a PES packet, with the PCR in its first transport packet.
    /// - Parameters:
    ///   - accessUnit: Annex B bytes, starting with the AUD.
    ///   - pts: presentation time in 90 kHz ticks (any value; written modulo 2^33); DTS equals it (no B-frames).
    ///   - pcr: program clock reference base in 90 kHz ticks (written modulo 2^33).
    ///   - randomAccess: sets the random access indicator (an IDR with its SPS and PPS).
    mutating func writeVideo(
        _ accessUnit: [UInt8], pts: Int64, pcr: Int64, randomAccess: Bool, into output: inout [UInt8]
    ) {
        var pes = Self.pesHeader(streamID: Self.videoStreamID, pts: pts, payloadLength: nil)
        pes += accessUnit
        writePES(pes, pid: Self.videoPID, pcr: pcr, randomAccess: randomAccess, into: &output)
    }

    /// Appends ADTS frames as one audio PES packet.
    /// - Parameters:
    ///   - frames: whole ADTS frames.
    ///   - pts: presentation time of the first frame in 90 kHz ticks (written modulo 2^33).
    mutating func writeAudio(_ frames: some Sequence<[UInt8]>, pts: Int64, into output: inout [UInt8]) {
        let payload = frames.flatMap { $0 }
        var pes = Self.pesHeader(streamID: Self.audioStreamID, pts: pts, payloadLength: payload.count)
        pes += payload
        writePES(pes, pid: Self.audioPID, pcr: nil, randomAccess: false, into: &output)
    }

    // MARK: - Packets

    private mutating func nextContinuityCounter(for pid: UInt16) -> UInt8 {
        let index = Self.allPIDs.firstIndex(of: pid)!
        let counter = continuityCounters[index]
        continuityCounters[index] = (counter + 1) & 0x0F
        return counter
    }

    /// One PSI section in one packet: pointer field 0, the section, 0xFF fill.
    private mutating func writeSection(_ section: [UInt8], pid: UInt16, into output: inout [UInt8]) {
        let discontinuity = pendingDiscontinuity.remove(pid) != nil
        let start = output.count
        let adaptationControl: UInt8 = discontinuity ? 0x30 : 0x10
        output += Self.header(pid: pid, payloadUnitStart: true, adaptationControl: adaptationControl,
                              continuityCounter: nextContinuityCounter(for: pid))
        if discontinuity {
            output += [1, 0x80]  // adaptation field: length 1, discontinuity_indicator
        }
        output.append(0)  // pointer_field
        output += section
        output += repeatElement(0xFF, count: start + Self.packetSize - output.count)
    }

    /// Splits a PES packet into transport packets; the last one is padded with adaptation-field stuffing.
    private mutating func writePES(
        _ pes: [UInt8], pid: UInt16, pcr: Int64?, randomAccess: Bool, into output: inout [UInt8]
    ) {
        var offset = 0
        var first = true
        while offset < pes.count {
            var flags: UInt8 = 0
            if first {
                if pendingDiscontinuity.remove(pid) != nil { flags |= 0x80 }
                if randomAccess { flags |= 0x40 }
                if pcr != nil { flags |= 0x10 }
            }
            // Adaptation field body after its length byte: the flags byte, then the PCR.
            var fieldBody: [UInt8] = []
            if flags != 0 {
                fieldBody.append(flags)
                if first, let pcr { fieldBody += Self.pcrBytes(pcr) }
            }
            let remaining = pes.count - offset
            var room = Self.packetSize - 4 - (fieldBody.isEmpty ? 0 : 1 + fieldBody.count)
            var hasField = !fieldBody.isEmpty
            if remaining < room {
                var stuffing = room - remaining
                if !hasField {
                    // An adaptation field of length 0 takes one byte; longer ones need the flags byte.
                    hasField = true
                    stuffing -= 1
                    if stuffing > 0 {
                        fieldBody.append(0)
                        stuffing -= 1
                    }
                }
                fieldBody += repeatElement(0xFF, count: stuffing)
                room = remaining
            }
            output += Self.header(pid: pid, payloadUnitStart: first, adaptationControl: hasField ? 0x30 : 0x10,
                                  continuityCounter: nextContinuityCounter(for: pid))
            if hasField {
                output.append(UInt8(fieldBody.count))
                output += fieldBody
            }
            output += pes[offset..<offset + room]
            offset += room
            first = false
        }
    }

    private static func header(
        pid: UInt16, payloadUnitStart: Bool, adaptationControl: UInt8, continuityCounter: UInt8
    ) -> [UInt8] {
        [
            0x47, (payloadUnitStart ? 0x40 : 0) | UInt8(pid >> 8), UInt8(pid & 0xFF),
            adaptationControl | continuityCounter,
        ]
    }

    /// PCR: 33-bit base, 6 reserved bits, 9-bit extension 0.
    private static func pcrBytes(_ pcr: Int64) -> [UInt8] {
        let base = UInt64(bitPattern: pcr) & Timestamp.mask
        return [
            UInt8(truncatingIfNeeded: base >> 25), UInt8(truncatingIfNeeded: base >> 17),
            UInt8(truncatingIfNeeded: base >> 9), UInt8(truncatingIfNeeded: base >> 1),
            UInt8(truncatingIfNeeded: (base & 1) << 7) | 0x7E, 0x00,
        ]
    }

    /// A PES header with a PTS only (PTS_DTS_flags '10'), data alignment set.
    /// - Parameter payloadLength: the payload size for PES_packet_length, or `nil` for 0 (unbounded, video only).
    private static func pesHeader(streamID: UInt8, pts: Int64, payloadLength: Int?) -> [UInt8] {
        let headerDataLength = 5
        let packetLength = payloadLength.map { $0 + 3 + headerDataLength } ?? 0
        precondition(packetLength <= 0xFFFF, "PES packet too long")
        let value = UInt64(bitPattern: pts) & Timestamp.mask
        return [
            0x00, 0x00, 0x01, streamID, UInt8(packetLength >> 8), UInt8(packetLength & 0xFF),
            0x84,  // '10', not scrambled, data_alignment_indicator
            0x80,  // PTS only
            UInt8(headerDataLength),
            0x21 | UInt8(truncatingIfNeeded: (value >> 29) & 0x0E),
            UInt8(truncatingIfNeeded: value >> 22),
            0x01 | UInt8(truncatingIfNeeded: (value >> 14) & 0xFE),
            UInt8(truncatingIfNeeded: value >> 7),
            0x01 | UInt8(truncatingIfNeeded: (value << 1) & 0xFE),
        ]
    }
}
