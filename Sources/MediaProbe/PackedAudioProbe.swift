/// Probes a raw ADTS AAC segment (HLS packed audio): an optional ID3v2 tag carrying the Apple
/// `com.apple.streaming.transportStreamTimestamp` PRIV frame, then consecutive ADTS frames.
enum PackedAudioProbe {
    static let timestampOwner = "com.apple.streaming.transportStreamTimestamp"

    static func probe(_ bytes: UnsafeRawBufferPointer) throws(ProbeError) -> SegmentInfo {
        let tag = try ID3Tag.find(bytes)
        let scan = try ADTSHeader.scan(bytes, from: tag?.end ?? 0)
        let header = scan.first
        let track = TrackInfo(
            kind: .audio, codec: header.codec, sampleRate: header.sampleRate,
            channelCount: header.channelConfiguration == 0
                ? nil : header.channelConfiguration == 7 ? 8 : header.channelConfiguration,
            trackID: 1, timescale: Int64(header.sampleRate))
        return SegmentInfo(
            container: .adts, tracks: [track],
            startTime: MediaTime(ticks: tag?.transportStreamTimestamp ?? 0, timescale: 90000),
            duration: MediaTime(ticks: Int64(scan.samples), timescale: Int64(header.sampleRate)),
            startsWithKeyframe: true, byteCount: bytes.count)
    }
}

/// A leading ID3v2 tag (id3.org ID3v2.3/2.4): its extent and the HLS transport stream timestamp if it has one.
struct ID3Tag {
    /// Offset one past the tag (and its footer).
    var end: Int
    /// The 33-bit 90 kHz timestamp of a `com.apple.streaming.transportStreamTimestamp` PRIV frame.
    var transportStreamTimestamp: Int64?

    /// The ID3v2 tag at the start of `bytes`, nil when the bytes do not start with "ID3".
    static func find(_ bytes: UnsafeRawBufferPointer) throws(ProbeError) -> ID3Tag? {
        guard bytes.count >= 3, bytes[0] == 0x49, bytes[1] == 0x44, bytes[2] == 0x33 else { return nil }
        var reader = ByteReader(bytes, context: "ID3 tag")
        try reader.skip(3)
        let version = try reader.readUInt8()
        try reader.skip(1)
        let flags = try reader.readUInt8()
        guard let size = syncSafe(try reader.readUInt32()) else { throw ProbeError("ID3 tag: size is not sync-safe") }
        let bodyEnd = 10 + size
        let end = bodyEnd + (flags & 0x10 != 0 ? 10 : 0)
        guard end <= bytes.count else {
            throw ProbeError("ID3 tag: declares \(end) bytes but the segment has only \(bytes.count)")
        }
        var tag = ID3Tag(end: end)
        guard version == 3 || version == 4, flags & 0x40 == 0 else { return tag }
        var frames = ByteReader(bytes, range: 10..<bodyEnd, context: "ID3 frame")
        while frames.remaining >= 10 {
            let idRange = try frames.readRange(4)
            guard bytes[idRange.lowerBound] != 0 else { break }  // padding
            let rawSize = try frames.readUInt32()
            guard let frameSize = version == 4 ? syncSafe(rawSize) : Int(rawSize), frameSize <= frames.remaining - 2
            else { break }
            try frames.skip(2)
            let body = try frames.readRange(frameSize)
            guard FourCC.string(bytes, at: idRange.lowerBound) == "PRIV" else { continue }
            let owner = Array(PackedAudioProbe.timestampOwner.utf8) + [0]
            guard body.count >= owner.count + 8,
                owner.enumerated().allSatisfy({ bytes[body.lowerBound + $0.offset] == $0.element })
            else { continue }
            var value = ByteReader(bytes, range: (body.lowerBound + owner.count)..<body.upperBound, context: "PRIV")
            tag.transportStreamTimestamp = Int64(try value.readUInt64() & MPEGTimestamp.mask)
        }
        return tag
    }

    /// Four 7-bit bytes as one 28-bit number; nil when a high bit is set.
    private static func syncSafe(_ value: UInt32) -> Int? {
        guard value & 0x8080_8080 == 0 else { return nil }
        return Int((value & 0x7F) | (value >> 8 & 0x7F) << 7 | (value >> 16 & 0x7F) << 14 | (value >> 24 & 0x7F) << 21)
    }
}
