/// Reads a continuous MPEG-TS byte stream (an SRT caller, a file) packet by packet, in any split: finds and keeps
/// the 188-byte packet sync, follows the PAT and PMT as they change, checks continuity counters and reads the access
/// units of the program's primary stream (the first video stream, else the first audio stream): their PTS/DTS
/// (unwrapped past the 33-bit wrap), whether a video access unit is a random access picture (H.264 IDR, HEVC IRAP)
/// and how many ADTS samples an AAC PES carries.
///
/// The segment probe (`TransportStreamProbe`) reads whole segments; this reads a stream that never ends, so it keeps
/// no per-packet history and bounds what it buffers. Nothing read from the stream can make it trap.
public struct TransportStreamDemuxer: Sendable {
    /// One elementary stream of the program's PMT.
    public struct ElementaryStream: Sendable, Hashable {
        public var pid: Int
        /// The PMT's stream_type (DVB AC-3 mapped to its ATSC type).
        public var streamType: UInt8
        public var kind: TrackKind
    }

    /// The program the stream carries: its PAT and PMT sections (table_id ... CRC_32) as received, ready to be
    /// written again at the start of each segment.
    public struct Program: Sendable, Hashable {
        public var pmtPID: Int
        public var pcrPID: Int
        /// The PMT's version_number.
        public var version: Int
        public var streams: [ElementaryStream]
        public var patSection: [UInt8]
        public var pmtSection: [UInt8]
        /// The primary stream: the first video stream, else the first audio stream; nil when there is neither.
        public var primary: ElementaryStream? {
            streams.first { $0.kind == .video } ?? streams.first { $0.kind == .audio }
        }
    }

    /// What a packet is to the program.
    public enum Role: Sendable, Hashable {
        case programAssociation, programMap
        /// The primary stream's PID.
        case primary
        /// Another elementary stream of the program.
        case elementary
        /// Null packets, SDT, PIDs the PMT does not list.
        case other
    }

    /// An access unit (a PES packet) of the primary stream, once its start is known.
    public struct AccessUnit: Sendable, Hashable {
        /// Presentation time, unwrapped (continues past 2^33 after a wrap), 90 kHz; nil when the PES carries none.
        public var pts: Int64?
        /// Decode time, unwrapped; the PTS when the PES carries no DTS.
        public var dts: Int64?
        /// Video: starts with a random access picture (H.264 IDR, HEVC IRAP). Audio: always true.
        public var randomAccess: Bool
        /// The stream's timestamps jumped here (more than `jumpTicks` from the previous access unit): an encoder
        /// restart or a splice without a discontinuity flag.
        public var jumped: Bool
    }

    /// What one packet brought.
    public struct PacketInfo: Sendable {
        public var pid: Int
        public var role: Role
        /// payload_unit_start_indicator.
        public var unitStart: Bool
        /// This packet's PMT changes the program's streams (new PIDs or types, or a PAT moved the PMT): a stream
        /// change. A new version listing the same streams only updates `program`.
        public var programChanged = false
        /// The program as of this packet, on the packets that define it (the first PMT, a change).
        public var program: Program?
        /// The primary access unit that started at the latest primary unit-start packet is now known (its PES
        /// header was read and, for video, its first slice found).
        public var accessUnit: AccessUnit?
        /// The primary access unit before this packet ended without its first slice found: it is not a random
        /// access picture. Comes before anything this packet itself starts.
        public var endedUndecided: AccessUnit?
        /// The primary audio PES that ended before this packet: its ADTS samples and sample rate.
        public var audioEnded: (samples: Int, sampleRate: Int)?
    }

    /// Counters for the status page.
    public struct Statistics: Sendable, Hashable, Codable {
        public var packets = 0
        /// Bytes dropped while looking for the sync byte.
        public var bytesSkipped = 0
        /// Times the sync was lost.
        public var syncLosses = 0
        /// Packets whose continuity_counter did not follow the PID's previous one.
        public var continuityErrors = 0
        /// PMTs that changed the program.
        public var programChanges = 0
        /// PES headers that could not be read, PSI sections that could not be parsed.
        public var malformed = 0
        public var timestampJumps = 0

        public init() {}
    }

    /// The program once a PAT and its PMT were read.
    public private(set) var program: Program?
    public private(set) var statistics = Statistics()
    /// A primary timestamp this far from the previous one (90 kHz ticks) is a jump. Default: 5 s.
    public var jumpTicks: Int64 = 5 * 90_000

    /// The start of a packet (or of a resync candidate) split between two calls.
    private var carry: [UInt8] = []
    private var synced = false
    private var patSection: [UInt8]?
    private var pmtPID = -1
    /// The program_number the PAT chose: PMT sections of other programs sharing its PID are skipped.
    private var programNumber = -1
    /// Continuity counter of the last payload-carrying packet per PID (-1: none yet); PIDs are 13 bits.
    private var continuity = [Int8](repeating: -1, count: 8192)
    /// The primary PES in progress.
    private var primaryPID = -1
    private var primaryIsVideo = false
    private var primaryIsHEVC = false
    private var primaryIsAAC = false
    private var pes: [UInt8] = []
    private var pesActive = false
    /// The PES header was read: `current` holds its times.
    private var headerRead = false
    private var current = AccessUnit(pts: nil, dts: nil, randomAccess: false, jumped: false)
    private var decided = false
    /// Where the next random-access scan of `pes` starts.
    private var scanFrom = 0
    /// The primary's last decode time; kept across a program change, so a step there is seen as a jump.
    private var lastTimestamp: Int64?
    /// A PAT moved the PMT of a program already read: the next PMT is a program change.
    private var programReplaced = false
    /// The PAT's and the PMT's sections being reassembled (a section may span packets).
    private var patAssembler = PSISectionAssembler()
    private var pmtAssembler = PSISectionAssembler()

    /// Bytes of a PES kept for its header and, video, up to its first slice; audio, whole (ADTS frames counted).
    static let maximumPESBytes = 1 << 20

    /// What part of the multiplex is read (nil: the PAT's first program, all its streams).
    public let selector: TransportStreamSelector?
    /// The PMT section as received (`program` holds the reduced one when a selector picks streams).
    private var receivedPMT: [UInt8]?

    public init(selector: TransportStreamSelector? = nil) {
        self.selector = selector
    }

    /// Reads the next bytes of the stream; appends every whole packet, in order, to `packets` (188 bytes each) and
    /// what it brought to `infos`.
    public mutating func consume(
        _ bytes: UnsafeRawBufferPointer, packets: inout [UInt8], infos: inout [PacketInfo]
    ) {
        if carry.isEmpty {
            let used = scan(bytes, packets: &packets, infos: &infos)
            if used < bytes.count { carry = Array(bytes[used...]) }
        } else {
            var joined = carry
            joined.append(contentsOf: bytes)
            carry = []
            let used = joined.withUnsafeBytes { scan($0, packets: &packets, infos: &infos) }
            if used < joined.count { carry = Array(joined[used...]) }
        }
    }

    /// Ends the stream: the primary access unit in progress, if undecided, ends as not a random access picture.
    public mutating func finish() -> AccessUnit? {
        defer {
            pesActive = false
            carry = []
        }
        guard pesActive, headerRead, !decided else { return nil }
        decided = true
        return current
    }

    /// Reads the whole packets of `bytes`, resyncing as needed; returns how many bytes were used up (the rest waits
    /// for more).
    private mutating func scan(
        _ bytes: UnsafeRawBufferPointer, packets: inout [UInt8], infos: inout [PacketInfo]
    ) -> Int {
        let size = TransportStreamPacket.size
        var index = 0
        while index < bytes.count {
            if synced {
                guard bytes.count - index >= size else { return index }
                if bytes[index] == TransportStreamPacket.syncByte {
                    let packet = UnsafeRawBufferPointer(rebasing: bytes[index..<(index + size)])
                    infos.append(read(packet))
                    packets.append(contentsOf: packet)
                    index += size
                    continue
                }
                synced = false
                statistics.syncLosses += 1
                lostSync()
            }
            // Looking for sync: a 0x47 with 0x47 again one and two packets on.
            guard let candidate = bytes[index...].firstIndex(of: TransportStreamPacket.syncByte) else {
                statistics.bytesSkipped += bytes.count - index
                return bytes.count
            }
            statistics.bytesSkipped += candidate - index
            index = candidate
            guard bytes.count - index > 2 * size else { return index }
            if bytes[index + size] == TransportStreamPacket.syncByte
                && bytes[index + 2 * size] == TransportStreamPacket.syncByte
            {
                synced = true
            } else {
                statistics.bytesSkipped += 1
                index += 1
            }
        }
        return index
    }

    /// The sync was lost: what was being assembled is incomplete.
    private mutating func lostSync() {
        pesActive = false
        patAssembler.reset()
        pmtAssembler.reset()
        for pid in continuity.indices { continuity[pid] = -1 }
    }

    /// Reads one packet (188 bytes, sync byte checked).
    private mutating func read(_ packet: UnsafeRawBufferPointer) -> PacketInfo {
        statistics.packets += 1
        let pid = Int(packet[1] & 0x1F) << 8 | Int(packet[2])
        let unitStart = packet[1] & 0x40 != 0
        let adaptationFieldControl = (packet[3] >> 4) & 3
        var info = PacketInfo(pid: pid, role: role(of: pid), unitStart: unitStart)
        var payloadStart = 4
        var discontinuityIndicator = false
        if adaptationFieldControl & 2 != 0 {
            let length = Int(packet[4])
            guard length <= (adaptationFieldControl == 2 ? 183 : 182) else {
                statistics.malformed += 1
                return info
            }
            if length > 0 { discontinuityIndicator = packet[5] & 0x80 != 0 }
            payloadStart = 5 + length
        }
        let hasPayload = adaptationFieldControl & 1 != 0
        guard pid != 0x1FFF, hasPayload else { return info }
        // Continuity: the next counter, or a repeat of the last one (a duplicate packet) is fine.
        let counter = Int8(packet[3] & 0x0F)
        let last = continuity[pid]
        continuity[pid] = counter
        var broken = false
        if last >= 0, !discontinuityIndicator, counter != (last + 1) & 0x0F {
            if counter == last { return info }
            statistics.continuityErrors += 1
            broken = true
        }
        let payload = UnsafeRawBufferPointer(rebasing: packet[payloadStart..<TransportStreamPacket.size])
        let changesBefore = statistics.programChanges
        switch info.role {
        case .programAssociation:
            if broken { patAssembler.reset() }
            var sections: [[UInt8]] = []
            patAssembler.consume(payload, unitStart: unitStart) { sections.append($0) }
            for section in sections { readPAT(section) }
        case .programMap:
            if broken { pmtAssembler.reset() }
            var sections: [[UInt8]] = []
            pmtAssembler.consume(payload, unitStart: unitStart) { sections.append($0) }
            for section in sections where readPMT(section) {
                info.program = program
                info.programChanged = statistics.programChanges > changesBefore
            }
        case .primary: readPrimary(payload, unitStart: unitStart, broken: broken, info: &info)
        case .elementary, .other: break
        }
        statistics.malformed += patAssembler.takeDropped() + pmtAssembler.takeDropped()
        return info
    }

    private func role(of pid: Int) -> Role {
        if pid == 0 { return .programAssociation }
        if pid == pmtPID { return .programMap }
        if pid == primaryPID { return .primary }
        if let program, program.streams.contains(where: { $0.pid == pid }) { return .elementary }
        return .other
    }

    /// Whether a reassembled section is a current one of `tableID` whose CRC matches (else counted malformed).
    private mutating func accepts(_ section: [UInt8], tableID: UInt8) -> Bool {
        guard section[0] == tableID else { return false }
        // PAT and PMT are long-form sections (section_syntax_indicator set): one without is malformed, its CRC
        // unchecked otherwise.
        guard section.count >= 12, section[1] & 0x80 != 0, PSISectionAssembler.crcIsValid(section) else {
            statistics.malformed += 1
            return false
        }
        return section[5] & 1 != 0  // current_next_indicator: a "next" table is not in force yet
    }

    private mutating func readPAT(_ section: [UInt8]) {
        guard accepts(section, tableID: 0x00), section != patSection else { return }
        do throws(ProbeError) {
            let pid: Int
            let number: Int
            if let selected = selector?.program {
                // A PAT without the selected program: nothing is read until one lists it.
                guard let listed = TransportStreamSelector.programMapPID(section, program: selected) else { return }
                (number, pid) = (selected, listed)
            } else {
                (number, pid) = try ProgramTables.firstProgram(section)
            }
            patSection = section
            if pid != pmtPID || number != programNumber {
                pmtPID = pid
                programNumber = number
                pmtAssembler.reset()
                if program != nil { programReplaced = true }
                program = nil
                setPrimary(nil)
            }
        } catch {
            statistics.malformed += 1
        }
    }

    /// Reads a PMT section; returns whether it defined the program (the first one, or a change).
    private mutating func readPMT(_ section: [UInt8]) -> Bool {
        guard let patSection, accepts(section, tableID: 0x02) else { return false }
        // Programs may share a PMT PID: only the chosen program's section is read (program_number, bytes 3-4).
        guard Int(section[3]) << 8 | Int(section[4]) == programNumber else { return false }
        if let program, receivedPMT == section, program.patSection == patSection || selector != nil {
            return false
        }
        do throws(ProbeError) {
            let (pcrPID, streams) = try ProgramTables.programMap(section)
            let version = Int(section[5] >> 1 & 0x1F)
            var next = Program(
                pmtPID: pmtPID, pcrPID: pcrPID, version: version,
                streams: streams.map {
                    ElementaryStream(
                        pid: $0.pid, streamType: $0.payloadType,
                        kind: ElementaryStreamState(pid: $0.pid, streamType: $0.payloadType).kind)
                },
                patSection: patSection, pmtSection: section)
            receivedPMT = section
            if let selector {
                // The selected program or stream alone, in tables of its own.
                let languages = TransportStreamSelector.entries(section).map { parsed in
                    Dictionary(parsed.entries.compactMap { e in e.language.map { (e.pid, $0) } }) { a, _ in a }
                } ?? [:]
                let kept = selector.kept(next.streams, languages: languages)
                let number = Int(section[3]) << 8 | Int(section[4])
                guard
                    let pmt = TransportStreamSelector.reducedPMT(from: section, pids: kept, pcrPID: pcrPID),
                    let reduced = try? ProgramTables.programMap(pmt)
                else { throw ProbeError("MPEG-TS: PMT entries unreadable") }
                next.streams = next.streams.filter { kept.contains($0.pid) }
                next.pcrPID = reduced.pcrPID
                next.pmtSection = pmt
                next.patSection = TransportStreamSelector.reducedPAT(
                    from: patSection, program: number, pmtPID: pmtPID)
            }
            // A new version listing the same streams (a descriptor, a language changed) is no stream change: the
            // program's sections are updated, nothing is cut.
            if let program, !programReplaced, program.streams == next.streams, program.pcrPID == next.pcrPID {
                self.program = next
                return true
            }
            if program != nil || programReplaced { statistics.programChanges += 1 }
            programReplaced = false
            program = next
            setPrimary(next.primary)
            return true
        } catch {
            statistics.malformed += 1
            return false
        }
    }

    private mutating func setPrimary(_ stream: ElementaryStream?) {
        let type = stream?.streamType ?? 0
        let pid = stream?.pid ?? -1
        let video = stream?.kind == .video
        let hevc = type == 0x24
        let aac = type == 0x0F
        guard pid != primaryPID || video != primaryIsVideo || hevc != primaryIsHEVC || aac != primaryIsAAC else {
            return
        }
        (primaryPID, primaryIsVideo, primaryIsHEVC, primaryIsAAC) = (pid, video, hevc, aac)
        pesActive = false
    }

    private mutating func readPrimary(
        _ payload: UnsafeRawBufferPointer, unitStart: Bool, broken: Bool, info: inout PacketInfo
    ) {
        if unitStart {
            if pesActive { endPES(info: &info) }
            pes.removeAll(keepingCapacity: true)
            pesActive = true
            headerRead = false
            decided = false
            scanFrom = 0
        } else if broken {
            // Bytes of this access unit were lost: it is not cut at, and its audio frames are not counted.
            if pesActive, headerRead, !decided {
                decided = true
                current.randomAccess = false
                info.accessUnit = current
            }
            pesActive = false
            return
        }
        guard pesActive else { return }
        let keep = (primaryIsVideo && decided) ? 0 : min(payload.count, Self.maximumPESBytes - pes.count)
        if keep > 0 { pes.append(contentsOf: payload[0..<keep]) }
        if !headerRead { readHeader(info: &info) }
        if headerRead, !decided, primaryIsVideo { decideVideo(info: &info) }
    }

    /// Reads the PES header once its bytes are in.
    private mutating func readHeader(info: inout PacketInfo) {
        guard pes.count >= 9 else { return }
        let headerEnd = 9 + Int(pes[8])
        guard pes.count >= headerEnd else { return }
        headerRead = true
        guard let header = try? PESHeader(pes, pid: primaryPID) else {
            statistics.malformed += 1
            pesActive = false
            return
        }
        var unit = AccessUnit(pts: nil, dts: nil, randomAccess: !primaryIsVideo, jumped: false)
        if let raw = header.pts {
            let reference = lastTimestamp ?? raw
            let pts = MPEGTimestamp.unwrap(raw, near: reference)
            let dts = header.dts.map { MPEGTimestamp.unwrap($0, near: pts) } ?? pts
            if let last = lastTimestamp, abs(dts - last) > jumpTicks {
                unit.jumped = true
                statistics.timestampJumps += 1
            }
            lastTimestamp = dts
            unit.pts = pts
            unit.dts = dts
        }
        current = unit
        scanFrom = header.payloadStart
        if !primaryIsVideo {
            decided = true
            info.accessUnit = current
        }
    }

    /// Looks for the first slice of the video access unit in the bytes read so far.
    private mutating func decideVideo(info: inout PacketInfo) {
        let start = max(scanFrom - 3, 0)
        let found = pes.withUnsafeBytes { buffer in
            NALUnits.firstSliceIsRandomAccess(
                in: UnsafeRawBufferPointer(rebasing: buffer[start...]), hevc: primaryIsHEVC)
        }
        scanFrom = pes.count
        if let found {
            decided = true
            current.randomAccess = found
            info.accessUnit = current
        } else if pes.count >= Self.maximumPESBytes {
            decided = true
            current.randomAccess = false
            info.accessUnit = current
        }
    }

    /// The primary PES in progress ends (a new one starts on this packet).
    private mutating func endPES(info: inout PacketInfo) {
        if primaryIsVideo {
            if headerRead, !decided {
                decided = true
                current.randomAccess = false
                info.endedUndecided = current
            }
        } else if primaryIsAAC, headerRead {
            let start = 9 + Int(pes[8])
            if start < pes.count {
                let scan = pes.withUnsafeBytes { buffer in
                    try? ADTSHeader.scan(UnsafeRawBufferPointer(rebasing: buffer[start...]), allowTruncatedLast: true)
                }
                if let scan { info.audioEnded = (scan.samples, scan.first.sampleRate) }
            }
        }
        pesActive = false
    }
}
