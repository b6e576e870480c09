/// Which part of a multiplex a `TransportStreamDemuxer` reads as its program, for a stream that carries several
/// programs (an MPTS) or several audio tracks mapped each to a rendition: a PAT program number (the whole program),
/// or one elementary stream chosen by PID or by the ISO 639 language descriptor (0x0A) of its PMT entry.
/// The demuxer then reports only the chosen streams and offers a reduced PAT (that program alone) and PMT (the chosen
/// streams with their descriptors) for the segments.
public struct TransportStreamSelector: Sendable, Hashable {
    /// PAT program_number (1-65535); nil: the PAT's first program.
    public var program: Int?
    /// One elementary stream by PID.
    public var pid: Int?
    /// One elementary stream by ISO 639-2 language code (3 lowercase letters), of `kind` (default audio).
    public var language: String?
    /// With `language` or alone: the first stream of this kind.
    public var kind: TrackKind?

    public init(program: Int? = nil, pid: Int? = nil, language: String? = nil, kind: TrackKind? = nil) {
        self.program = program
        self.pid = pid
        self.language = language
        self.kind = kind
    }

    /// Whether the selector picks one elementary stream (not a whole program).
    var picksOneStream: Bool { pid != nil || language != nil || kind != nil }

    /// The PMT PID of `program` in a PAT section (table_id ... CRC); nil when the PAT does not list it.
    static func programMapPID(_ section: [UInt8], program: Int) -> Int? {
        guard section.count >= 12 else { return nil }
        var offset = 8
        while offset + 4 <= section.count - 4 {
            let number = Int(section[offset]) << 8 | Int(section[offset + 1])
            if number == program { return Int(section[offset + 2] & 0x1F) << 8 | Int(section[offset + 3]) }
            offset += 4
        }
        return nil
    }

    /// One PMT elementary-stream entry as bytes: stream_type ... descriptors.
    struct Entry {
        var pid: Int
        var bytes: ArraySlice<UInt8>
        var language: String?
    }

    /// The elementary-stream entries of a PMT section (table_id ... CRC) with their ISO 639 language; nil when the
    /// section does not parse.
    static func entries(_ section: [UInt8]) -> (programInfo: ArraySlice<UInt8>, entries: [Entry])? {
        guard section.count >= 16 else { return nil }
        let infoLength = Int(section[10] & 0x0F) << 8 | Int(section[11])
        let end = section.count - 4
        guard 12 + infoLength <= end else { return nil }
        var offset = 12 + infoLength
        var entries: [Entry] = []
        while offset + 5 <= end {
            let pid = Int(section[offset + 1] & 0x1F) << 8 | Int(section[offset + 2])
            let length = Int(section[offset + 3] & 0x0F) << 8 | Int(section[offset + 4])
            guard offset + 5 + length <= end else { return nil }
            var language: String?
            var descriptor = offset + 5
            while descriptor + 2 <= offset + 5 + length {
                let size = Int(section[descriptor + 1])
                guard descriptor + 2 + size <= offset + 5 + length else { break }
                if section[descriptor] == 0x0A, size >= 3, language == nil {
                    language = String(decoding: section[(descriptor + 2)..<(descriptor + 5)], as: UTF8.self)
                        .lowercased()
                }
                descriptor += 2 + size
            }
            entries.append(Entry(pid: pid, bytes: section[offset..<(offset + 5 + length)], language: language))
            offset += 5 + length
        }
        return (section[12..<(12 + infoLength)], entries)
    }

    /// The PIDs of `streams` this selector keeps, in PMT order: all of them for a program, else the first matching
    /// stream (none when nothing matches).
    func kept(_ streams: [TransportStreamDemuxer.ElementaryStream], languages: [Int: String]) -> [Int] {
        guard picksOneStream else { return streams.map(\.pid) }
        let match = streams.first { stream in
            if let pid { return stream.pid == pid }
            if let kind = kind ?? (language != nil ? .audio : nil), stream.kind != kind { return false }
            if let language { return languages[stream.pid] == language }
            return true
        }
        return match.map { [$0.pid] } ?? []
    }

    /// A PAT listing `program` alone on `pmtPID`.
    static func reducedPAT(from section: [UInt8], program: Int, pmtPID: Int) -> [UInt8] {
        let body: [UInt8] = [
            UInt8(truncatingIfNeeded: program >> 8), UInt8(truncatingIfNeeded: program),
            0xE0 | UInt8(truncatingIfNeeded: pmtPID >> 8), UInt8(truncatingIfNeeded: pmtPID),
        ]
        return resection(header: Array(section[0..<8]), body: body)
    }

    /// The PMT with only the entries of `pids` (each with its descriptors); the PCR PID stays when kept, else it is
    /// the first kept stream's.
    static func reducedPMT(from section: [UInt8], pids: [Int], pcrPID: Int) -> [UInt8]? {
        guard let (programInfo, entries) = entries(section) else { return nil }
        let pcr = pids.contains(pcrPID) ? pcrPID : pids.first ?? 0x1FFF
        var body: [UInt8] = [0xE0 | UInt8(truncatingIfNeeded: pcr >> 8), UInt8(truncatingIfNeeded: pcr)]
        body.append(contentsOf: section[10..<12])
        body.append(contentsOf: programInfo)
        for entry in entries where pids.contains(entry.pid) { body.append(contentsOf: entry.bytes) }
        return resection(header: Array(section[0..<8]), body: body)
    }

    /// A section from its first 8 bytes (table_id ... last_section_number) and body, its length and CRC set.
    private static func resection(header: [UInt8], body: [UInt8]) -> [UInt8] {
        var section = header
        section.append(contentsOf: body)
        let length = section.count - 3 + 4
        section[1] = section[1] & 0xF0 | UInt8(truncatingIfNeeded: length >> 8) & 0x0F
        section[2] = UInt8(truncatingIfNeeded: length)
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in section {
            crc ^= UInt32(byte) << 24
            for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
        }
        section.append(contentsOf: [
            UInt8(truncatingIfNeeded: crc >> 24), UInt8(truncatingIfNeeded: crc >> 16),
            UInt8(truncatingIfNeeded: crc >> 8), UInt8(truncatingIfNeeded: crc),
        ])
        return section
    }
}
