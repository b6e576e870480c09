/// An MPEG-TS segment taken apart: its program tables, the PES packets of every elementary stream, and the
/// continuity counter each PID ended on. For code that builds media continuing a segment (the gap filler);
/// the ingest path uses `MediaProbe.probeSegment`.
///
/// ```swift
/// let contents = try TransportStreamContents(bytes)
/// let video = contents.streams.first { $0.streamType == 0x1B }
/// let frames = video.map { contents.pesPackets[$0.pid] ?? [] }
/// ```
public struct TransportStreamContents: Sendable {
    /// One elementary stream as the PMT lists it.
    public struct Stream: Sendable, Hashable {
        /// Elementary PID.
        public let pid: Int
        /// stream_type (0x1B H.264, 0x24 HEVC, 0x0F AAC ADTS, ...).
        public let streamType: UInt8
    }

    /// One reassembled PES packet.
    public struct PESPacket: Sendable, Hashable {
        /// PTS as written (33 bits, not unwrapped); nil when the header carries none.
        public let pts: Int64?
        /// The elementary stream bytes (PES header removed).
        public let payload: [UInt8]
    }

    /// The PAT section as written: table_id through CRC_32.
    public let patSection: [UInt8]
    /// PID of the PMT of the first program.
    public let pmtPID: Int
    /// The PMT section as written: table_id through CRC_32.
    public let pmtSection: [UInt8]
    /// PID carrying the program clock reference.
    public let pcrPID: Int
    /// Elementary streams in PMT order.
    public let streams: [Stream]
    /// PES packets by elementary PID, in the order they appear. A PES cut off at the segment end is included.
    public let pesPackets: [Int: [PESPacket]]
    /// For every PID with a payload-carrying packet: the continuity_counter of its last such packet.
    public let lastContinuityCounters: [Int: UInt8]

    /// Takes a segment apart.
    /// - Parameter bytes: whole 188-byte transport packets, with a PAT and PMT somewhere among them.
    /// - Throws: `ProbeError` when the bytes are not MPEG-TS or a table or PES header is malformed.
    public init(_ bytes: UnsafeRawBufferPointer) throws(ProbeError) {
        let size = TransportStreamPacket.size
        guard bytes.count >= size, bytes.count % size == 0 else {
            throw ProbeError("MPEG-TS: \(bytes.count) bytes is not a whole, non-zero number of 188-byte packets")
        }
        var packets: [TransportStreamPacket] = []
        packets.reserveCapacity(bytes.count / size)
        var counters: [Int: UInt8] = [:]
        for index in 0..<(bytes.count / size) {
            let packet = try TransportStreamPacket(bytes, at: index * size, index: index)
            if !packet.payload.isEmpty { counters[packet.pid] = bytes[index * size + 3] & 0x0F }
            packets.append(packet)
        }
        let tables = try ProgramTables(bytes, packets: packets)
        patSection = tables.patSection
        pmtPID = tables.pmtPID
        pmtSection = tables.pmtSection
        pcrPID = tables.pcrPID
        streams = tables.streams.map { Stream(pid: $0.pid, streamType: $0.streamType) }
        lastContinuityCounters = counters

        let elementary = Set(streams.map(\.pid))
        var pending: [Int: [UInt8]] = [:]
        var reassembled: [Int: [PESPacket]] = [:]
        func finish(_ pes: [UInt8], pid: Int) throws(ProbeError) {
            let header = try PESHeader(pes, pid: pid)
            reassembled[pid, default: []].append(
                PESPacket(pts: header.pts, payload: Array(pes[header.payloadStart..<header.payloadEnd])))
        }
        for packet in packets where elementary.contains(packet.pid) {
            let payload = bytes[packet.payload]
            if packet.payloadUnitStart {
                if let previous = pending[packet.pid] { try finish(previous, pid: packet.pid) }
                pending[packet.pid] = Array(payload)
            } else if pending[packet.pid] != nil {
                pending[packet.pid]?.append(contentsOf: payload)
            }
        }
        for (pid, pes) in pending.sorted(by: { $0.key < $1.key }) { try finish(pes, pid: pid) }
        pesPackets = reassembled
    }

    /// `init(_:)` for an array.
    public init(_ bytes: [UInt8]) throws(ProbeError) {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(ProbeError) in try TransportStreamContents(buffer) }
        }
        self = try result.get()
    }

    /// The byte ranges of the NAL units (header included, start codes excluded) in an Annex B byte stream, such as
    /// the payload of an H.264 PES packet.
    public static func annexBNALUnits(in bytes: [UInt8]) -> [Range<Int>] {
        bytes.withUnsafeBytes { NALUnits.annexBUnits(in: $0) }
    }
}
