import MediaProbe

/// Writes MPEG-TS: one program, PAT and PMT (each in as many packets as its section needs), PES packets split into transport packets, PCR in
/// the adaptation field, and continuity counters that run on from one segment to the next, as in one endless stream.
///
/// A value type: the owner (the test source generator, a gap filler) keeps one and mutates it as it writes packets.
///
/// ```swift
/// var muxer = TransportStreamMuxer()  // the test source's layout
/// var output: [UInt8] = []
/// muxer.writeProgramTables(into: &output)
/// muxer.writeVideo(idr, pts: 126_000, pcr: 117_000, randomAccess: true, into: &output)
/// ```
public struct TransportStreamMuxer: Sendable {
    /// Where a program's tables and streams go: the PSI sections written as they are, and the PIDs.
    public struct Layout: Sendable, Hashable {
        /// The PAT section, table_id through CRC_32 (a long one spans packets).
        public var patSection: [UInt8]
        /// PID of the PMT.
        public var pmtPID: UInt16
        /// The PMT section, table_id through CRC_32 (a long one spans packets).
        public var pmtSection: [UInt8]
        /// PID of the video elementary stream.
        public var videoPID: UInt16
        /// PID of the audio elementary stream.
        public var audioPID: UInt16
        /// PID carrying the PCR (``TransportStreamMuxer/writePCR(_:into:)`` writes on it).
        public var pcrPID: UInt16

        /// A layout from sections the caller built or copied from another stream.
        public init(
            patSection: [UInt8], pmtPID: UInt16, pmtSection: [UInt8], videoPID: UInt16, audioPID: UInt16,
            pcrPID: UInt16
        ) {
            self.patSection = patSection
            self.pmtPID = pmtPID
            self.pmtSection = pmtSection
            self.videoPID = videoPID
            self.audioPID = audioPID
            self.pcrPID = pcrPID
        }

        /// The test source's layout: program 1, PMT on PID 0x1000, H.264 on 0x100 (carrying the PCR), ADTS AAC on
        /// 0x101.
        public static let testSource = Layout(
            patSection: ProgramSection.programAssociation(programNumber: 1, pmtPID: 0x1000),
            pmtPID: 0x1000,
            pmtSection: ProgramSection.programMap(
                programNumber: 1, pcrPID: 0x0100,
                streams: [(videoStreamType, 0x0100), (audioStreamType, 0x0101)]),
            videoPID: 0x0100, audioPID: 0x0101, pcrPID: 0x0100)
    }

    static let packetSize = 188
    static let patPID: UInt16 = 0x0000
    /// Stream types in the PMT: H.264 video and ADTS AAC audio.
    static let videoStreamType: UInt8 = 0x1B
    static let audioStreamType: UInt8 = 0x0F
    /// PES stream ids.
    static let videoStreamID: UInt8 = 0xE0
    static let audioStreamID: UInt8 = 0xC0
    /// The largest PES_packet_length (16 bits): the bytes after the length field.
    static let maximumPESPacketLength = 0xFFFF
    /// The most ADTS bytes ``writeAudio(_:pts:into:)`` puts in one PES (PES_packet_length less the header's 8 bytes).
    public static let maximumAudioPayload = maximumPESPacketLength - 8

    /// The program's tables and PIDs.
    public let layout: Layout
    /// The continuity counter each PID's next payload-carrying packet carries.
    private var continuityCounters: [UInt16: UInt8]
    /// PIDs whose next packet carries the discontinuity indicator.
    private var pendingDiscontinuity: Set<UInt16> = []

    /// A muxer whose first packets continue a stream that ended on `lastContinuityCounters`.
    /// - Parameters:
    ///   - layout: tables and PIDs; the test source's by default.
    ///   - lastContinuityCounters: per PID, the continuity_counter of the last payload-carrying packet written
    ///     before; PIDs not listed start at 0.
    public init(layout: Layout = .testSource, continuingAfter lastContinuityCounters: [UInt16: UInt8] = [:]) {
        self.layout = layout
        self.continuityCounters = lastContinuityCounters.mapValues { ($0 + 1) & 0x0F }
    }

    /// Starts over: continuity counters from 0, and the next packet of every PID flags the discontinuity.
    public mutating func restart() {
        continuityCounters = [:]
        pendingDiscontinuity = [Self.patPID, layout.pmtPID, layout.videoPID, layout.audioPID]
    }

    /// Appends the PAT and the PMT (one packet each unless a section is longer than a packet's payload).
    public mutating func writeProgramTables(into output: inout [UInt8]) {
        writeSection(layout.patSection, pid: Self.patPID, into: &output)
        writeSection(layout.pmtSection, pid: layout.pmtPID, into: &output)
    }

    /// Appends one video access unit as a PES packet, with the PCR in its first transport packet.
    /// - Parameters:
    ///   - accessUnit: Annex B bytes, starting with the AUD.
    ///   - pts: presentation time in 90 kHz ticks (any value; written modulo 2^33); DTS equals it (no B-frames).
    ///   - pcr: program clock reference base in 90 kHz ticks (written modulo 2^33), or nil for none; give one only
    ///     when the video PID carries the PCR.
    ///   - randomAccess: sets the random access indicator (an IDR with its SPS and PPS).
    public mutating func writeVideo(
        _ accessUnit: [UInt8], pts: Int64, pcr: Int64?, randomAccess: Bool, into output: inout [UInt8]
    ) {
        // PES_packet_length 0 (unbounded): the header always fits.
        var pes = Self.pesHeader(streamID: Self.videoStreamID, pts: pts, payloadLength: nil) ?? []
        pes += accessUnit
        writePES(pes, pid: layout.videoPID, pcr: pcr, randomAccess: randomAccess, into: &output)
    }

    /// Appends ADTS frames as one audio PES packet.
    /// - Parameters:
    ///   - frames: whole ADTS frames.
    ///   - pts: presentation time of the first frame in 90 kHz ticks (written modulo 2^33).
    ///   - streamID: the PES stream_id (an MPEG audio one, 0xC0-0xDF; a rewritten PES keeps its own).
    ///   - randomAccess: sets the random access indicator (a PES that starts a segment).
    ///   - pcr: program clock reference base in 90 kHz ticks for the first packet, when the audio PID carries it.
    /// - Returns: false, with nothing written, when the frames are more than a PES_packet_length holds (an audio
    ///   PES must give its length): the caller writes them in smaller PES packets or not at all.
    @discardableResult
    public mutating func writeAudio(
        _ frames: some Sequence<[UInt8]>, pts: Int64, streamID: UInt8 = 0xC0, randomAccess: Bool = false,
        pcr: Int64? = nil, into output: inout [UInt8]
    ) -> Bool {
        let payload = frames.flatMap { $0 }
        guard let header = Self.pesHeader(streamID: streamID, pts: pts, payloadLength: payload.count) else {
            return false
        }
        writePES(header + payload, pid: layout.audioPID, pcr: pcr, randomAccess: randomAccess, into: &output)
        return true
    }

    /// Appends one packet on the PCR PID that carries only an adaptation field with the PCR (no payload, so its
    /// continuity counter repeats the previous packet's, as ISO/IEC 13818-1 requires).
    /// - Parameter pcr: program clock reference base in 90 kHz ticks (written modulo 2^33).
    public mutating func writePCR(_ pcr: Int64, into output: inout [UInt8]) {
        let pid = layout.pcrPID
        var flags: UInt8 = 0x10
        if pendingDiscontinuity.remove(pid) != nil { flags |= 0x80 }
        let counter = ((continuityCounters[pid] ?? 0) + 15) & 0x0F
        output += Self.header(pid: pid, payloadUnitStart: false, adaptationControl: 0x20, continuityCounter: counter)
        output.append(183)  // adaptation_field_length: the rest of the packet
        output.append(flags)
        output += Self.pcrBytes(pcr)
        output += repeatElement(0xFF, count: 183 - 1 - 6)
    }

    /// Counts a packet on `pid` written by someone else (a stream's own PAT or PMT copied after
    /// ``writeProgramTables(into:)``): returns the continuity_counter it must carry to follow on.
    public mutating func takeContinuityCounter(for pid: UInt16) -> UInt8 { nextContinuityCounter(for: pid) }

    /// The continuity_counter a packet on `pid` without payload (an adaptation field alone) copied after the last
    /// counted one carries: the same as that one (ISO/IEC 13818-1 counts payload-carrying packets only).
    public func lastContinuityCounter(for pid: UInt16) -> UInt8 { ((continuityCounters[pid] ?? 0) + 15) & 0x0F }

    // MARK: - Packets

    private mutating func nextContinuityCounter(for pid: UInt16) -> UInt8 {
        let counter = continuityCounters[pid] ?? 0
        continuityCounters[pid] = (counter + 1) & 0x0F
        return counter
    }

    /// One PSI section: pointer field 0, the section (over as many packets as it needs), 0xFF fill.
    private mutating func writeSection(_ section: [UInt8], pid: UInt16, into output: inout [UInt8]) {
        var offset = 0
        var first = true
        repeat {
            let discontinuity = first && pendingDiscontinuity.remove(pid) != nil
            let start = output.count
            output += Self.header(
                pid: pid, payloadUnitStart: first, adaptationControl: discontinuity ? 0x30 : 0x10,
                continuityCounter: nextContinuityCounter(for: pid))
            if discontinuity {
                output += [1, 0x80]  // adaptation field: length 1, discontinuity_indicator
            }
            if first { output.append(0) }  // pointer_field
            let room = start + Self.packetSize - output.count
            let taken = min(room, section.count - offset)
            output += section[offset..<(offset + taken)]
            offset += taken
            output += repeatElement(0xFF, count: start + Self.packetSize - output.count)
            first = false
        } while offset < section.count
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
            output += Self.header(
                pid: pid, payloadUnitStart: first, adaptationControl: hasField ? 0x30 : 0x10,
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
        let base = UInt64(bitPattern: pcr) & MPEGTimestamp.mask
        return [
            UInt8(truncatingIfNeeded: base >> 25), UInt8(truncatingIfNeeded: base >> 17),
            UInt8(truncatingIfNeeded: base >> 9), UInt8(truncatingIfNeeded: base >> 1),
            UInt8(truncatingIfNeeded: (base & 1) << 7) | 0x7E, 0x00,
        ]
    }

    /// A PES header with a PTS only (PTS_DTS_flags '10'), data alignment set.
    /// - Parameter payloadLength: the payload size for PES_packet_length, or `nil` for 0 (unbounded, video only).
    /// - Returns: nil when `payloadLength` is more than PES_packet_length can say.
    static func pesHeader(streamID: UInt8, pts: Int64, payloadLength: Int?) -> [UInt8]? {
        let headerDataLength = 5
        let packetLength = payloadLength.map { $0 + 3 + headerDataLength } ?? 0
        guard packetLength <= maximumPESPacketLength else { return nil }
        let value = UInt64(bitPattern: pts) & MPEGTimestamp.mask
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
