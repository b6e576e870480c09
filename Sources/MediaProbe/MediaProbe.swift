/// Bytes in, facts out: detects the container of a pushed file and reads the facts the origin needs (timing, codecs,
/// keyframes) from MPEG-TS, fMP4, ADTS and WebVTT. No I/O, no dependencies; every read is bounds-checked and
/// malformed input throws `ProbeError` with a message fit for the encoder.
public enum MediaProbe {
    /// Which container the bytes are: 0x47 sync every 188 bytes -> MPEG-TS; a top-level moov (or a leading ftyp
    /// without moof) -> fMP4 init; styp/moof/sidx -> fMP4 segment; ADTS sync 0xFFF (optionally after an ID3 tag)
    /// -> ADTS; "WEBVTT" -> WebVTT. Nil if none.
    /// - Parameter bytes: the whole file or at least its first few hundred bytes.
    public static func detectContainer(_ bytes: UnsafeRawBufferPointer) -> MediaContainer? {
        let count = bytes.count
        if count >= 188, bytes[0] == 0x47,
            stride(from: 188, to: min(count, 188 * 5), by: 188).allSatisfy({ bytes[$0] == 0x47 })
        {
            return .mpegTS
        }
        if let container = detectMP4(bytes) { return container }
        if ADTSHeader.hasSync(bytes, at: 0) { return .adts }
        if let tag = try? ID3Tag.find(bytes), ADTSHeader.hasSync(bytes, at: tag.end) { return .adts }
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        let textStart = count >= 3 && bom.indices.allSatisfy({ bytes[$0] == bom[$0] }) ? 3 : 0
        let magic = Array("WEBVTT".utf8)
        if count >= textStart + magic.count, magic.indices.allSatisfy({ bytes[textStart + $0] == magic[$0] }) {
            let next = textStart + magic.count
            if next == count || [0x20, 0x09, 0x0A, 0x0D].contains(bytes[next]) { return .webVTT }
        }
        return nil
    }

    /// Probes a media segment (MPEG-TS, fMP4 segment, ADTS or WebVTT).
    /// - Parameters:
    ///   - bytes: the complete segment.
    ///   - initSection: the rendition's init section facts; needed for fMP4 segments (track timescales, kinds,
    ///     trex defaults) unless the segment carries its own moov.
    /// - Throws: `ProbeError` when the bytes are not a supported segment or are malformed.
    public static func probeSegment(
        _ bytes: UnsafeRawBufferPointer, initSection: InitSectionInfo? = nil
    ) throws(ProbeError) -> SegmentInfo {
        switch detectContainer(bytes) {
        case .mpegTS:
            return try TransportStreamProbe.probe(bytes)
        case .fragmentedMP4Segment:
            return try FragmentedMP4SegmentProbe.probe(bytes, initSection: initSection)
        case .fragmentedMP4Init:
            let top = try MP4Box.children(of: 0..<bytes.count, in: bytes, context: "fMP4", topLevel: true)
            guard top.first("moof") != nil else {
                throw ProbeError("this is an fMP4 initialization section (ftyp/moov), not a media segment")
            }
            return try FragmentedMP4SegmentProbe.probe(bytes, initSection: initSection)
        case .adts:
            return try PackedAudioProbe.probe(bytes)
        case .webVTT:
            return try WebVTTProbe.probe(bytes)
        case nil:
            // A TS that loses sync after the first packet: let the TS probe say exactly where.
            if bytes.count > 0, bytes[0] == 0x47 { return try TransportStreamProbe.probe(bytes) }
            throw ProbeError(
                "not a media segment: first bytes \(hexPrefix(bytes)) are not MPEG-TS (sync byte 0x47), "
                    + "fMP4 (styp/moof), ADTS (sync 0xFFF) or WEBVTT")
        }
    }

    /// Probes an fMP4 initialization section (ftyp + moov): tracks, codecs, timescales, resolution, trex defaults.
    /// - Parameter bytes: the complete init section.
    /// - Throws: `ProbeError` when there is no valid moov or a box is malformed.
    public static func probeInitSection(_ bytes: UnsafeRawBufferPointer) throws(ProbeError) -> InitSectionInfo {
        guard bytes.count >= 8 else {
            throw ProbeError("not an fMP4 initialization section: only \(bytes.count) bytes")
        }
        switch detectContainer(bytes) {
        case .fragmentedMP4Init, .fragmentedMP4Segment:
            return try FragmentedMP4InitProbe.probe(bytes)
        default:
            throw ProbeError(
                "not an fMP4 initialization section: first bytes \(hexPrefix(bytes)) are not an ftyp or moov box")
        }
    }

    /// `detectContainer(_:)` for an array.
    public static func detectContainer(_ bytes: [UInt8]) -> MediaContainer? {
        bytes.withUnsafeBytes { detectContainer($0) }
    }

    /// `probeSegment(_:initSection:)` for an array.
    public static func probeSegment(
        _ bytes: [UInt8], initSection: InitSectionInfo? = nil
    ) throws(ProbeError) -> SegmentInfo {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(ProbeError) in try probeSegment(buffer, initSection: initSection) }
        }
        return try result.get()
    }

    /// `probeInitSection(_:)` for an array.
    public static func probeInitSection(_ bytes: [UInt8]) throws(ProbeError) -> InitSectionInfo {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(ProbeError) in try probeInitSection(buffer) }
        }
        return try result.get()
    }

    /// The top-level box types decide between init section and media segment.
    private static func detectMP4(_ bytes: UnsafeRawBufferPointer) -> MediaContainer? {
        let known: Set<String> = ["ftyp", "styp", "moov", "moof", "sidx", "emsg", "prft", "free", "skip", "mdat"]
        var types: [String] = []
        var offset = 0
        while offset + 8 <= bytes.count, types.count < 64 {
            let type = FourCC.string(bytes, at: offset + 4)
            guard known.contains(type) else { break }
            types.append(type)
            var reader = ByteReader(bytes, range: offset..<bytes.count, context: "box")
            guard let size32 = try? reader.readUInt32() else { break }
            var size = UInt64(size32)
            if size32 == 1 {
                guard offset + 16 <= bytes.count else { break }
                try? reader.skip(4)
                guard let large = try? reader.readUInt64() else { break }
                size = large
            }
            guard size >= 8, size <= UInt64(bytes.count - offset) else { break }
            offset += Int(size)
        }
        guard let first = types.first, ["ftyp", "styp", "moov", "moof", "sidx", "emsg", "prft"].contains(first)
        else { return nil }
        if types.contains("moov") { return .fragmentedMP4Init }
        if types.contains(where: { ["moof", "styp", "sidx", "emsg", "prft"].contains($0) }) {
            return .fragmentedMP4Segment
        }
        return first == "ftyp" ? .fragmentedMP4Init : nil
    }

    private static func hexPrefix(_ bytes: UnsafeRawBufferPointer) -> String {
        bytes.prefix(8).map { ADTSHeader.hex($0) }.joined(separator: " ")
    }
}
