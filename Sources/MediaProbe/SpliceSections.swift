/// Collects the SCTE-35 splice_info_sections of an MPEG-TS segment, in both forms pushes carry them:
/// - the standard one (SCTE 35 section 8): PMT stream_type 0x86, sections on the PID as PSI (pointer_field, sections
///   spanning packets, 0xFF stuffing), often with a `CUEI` registration descriptor;
/// - ffmpeg's re-mux (`-c copy` to mpegts or hls): stream_type 0x06 (private data, no registration), each section in
///   the payload of a PES packet with stream_id 0xFC.
///
/// Only the framing is read here (table_id 0xFC, section_length); the sections are kept as bytes for the SCTE35
/// module to validate. At most ``maximumSections`` per segment, each at most 4096 bytes.
struct SpliceSectionCollector {
    enum Carriage {
        /// PSI sections on the PID (stream_type 0x86).
        case sections
        /// PES packets (stream_id 0xFC) whose payload is a section (stream_type 0x06).
        case pes
    }

    /// The PIDs read and how each carries its sections.
    private(set) var pids: [Int] = []
    private var carriage: [Carriage] = []
    /// Bytes of the PES being assembled per PID; nil: waiting for a payload_unit_start.
    private var pending: [[UInt8]?] = []
    /// The sections being reassembled per PID (PSI carriage).
    private var assemblers: [PSISectionAssembler] = []
    /// The sections found, in the order they ended.
    private(set) var sections: [[UInt8]] = []

    /// Most sections kept per segment (a cue is typically repeated a few times).
    static let maximumSections = 64
    /// `table_id` of splice_info_section, and the PES stream_id ffmpeg gives them.
    static let tableId: UInt8 = 0xFC
    static let streamId: UInt8 = 0xFC
    /// Largest section: 3 header bytes + section_length (12 bits, at most 4093 for SCTE-35).
    static let maximumSectionBytes = 4096

    /// Picks the PIDs that can carry SCTE-35 from the PMT.
    init(streams: [ProgramTables.Stream]) {
        for stream in streams where !pids.contains(stream.pid) {
            if stream.streamType == 0x86 {
                pids.append(stream.pid)
                carriage.append(.sections)
            } else if stream.streamType == 0x06, stream.payloadType == 0x06 {
                pids.append(stream.pid)
                carriage.append(.pes)
            }
        }
        pending = Array(repeating: nil, count: pids.count)
        assemblers = Array(repeating: PSISectionAssembler(), count: pids.count)
    }

    /// Takes one transport packet's payload on the PID at `index` of ``pids``.
    mutating func consume(_ payload: UnsafeRawBufferPointer, unitStart: Bool, index: Int) {
        switch carriage[index] {
        case .pes:
            if unitStart {
                finishPES(index)
                pending[index] = Array(payload)
            } else if pending[index] != nil {
                guard pending[index]!.count + payload.count <= Self.maximumSectionBytes + 64 else {
                    pending[index] = nil
                    return
                }
                pending[index]!.append(contentsOf: payload)
            }
        case .sections:
            var found: [[UInt8]] = []
            assemblers[index].consume(payload, unitStart: unitStart) { if $0[0] == Self.tableId { found.append($0) } }
            for section in found { keep(section) }
        }
    }

    /// Ends the segment: a PES still open is read (its packets all came); a section cut short is dropped.
    mutating func finish() {
        for index in pids.indices where carriage[index] == .pes { finishPES(index) }
    }

    /// Reads a PES packet: stream_id 0xFC, its payload one section (a leading pointer_field is allowed).
    private mutating func finishPES(_ index: Int) {
        guard let pes = pending[index] else { return }
        pending[index] = nil
        guard pes.count >= 6, pes[0] == 0, pes[1] == 0, pes[2] == 1, pes[3] == Self.streamId,
            let header = try? PESHeader(pes, pid: pids[index])
        else { return }
        var start = header.payloadStart
        let end = header.payloadEnd
        guard start < end else { return }
        if pes[start] != Self.tableId {
            let pointer = Int(pes[start])
            guard start + 1 + pointer < end, pes[start + 1 + pointer] == Self.tableId else { return }
            start += 1 + pointer
        }
        guard start + 3 <= end else { return }
        let length = 3 + (Int(pes[start + 1] & 0x0F) << 8 | Int(pes[start + 2]))
        guard start + length <= end else { return }
        keep(Array(pes[start..<(start + length)]))
    }

    private mutating func keep(_ section: [UInt8]) {
        guard sections.count < Self.maximumSections else { return }
        sections.append(section)
    }
}
