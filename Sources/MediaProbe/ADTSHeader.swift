/// One AAC ADTS frame header (ISO/IEC 13818-7 6.2, ISO/IEC 14496-3 1.A.2.2).
public struct ADTSHeader: Sendable, Hashable {
    /// MPEG-4 audio object type: ADTS profile + 1 (1 Main, 2 LC, 3 SSR, 4 LTP).
    public var audioObjectType: Int
    /// sampling_frequency_index (0 = 96 kHz ... 12 = 7350 Hz).
    public var samplingFrequencyIndex: Int
    /// Sampling rate in Hz.
    public var sampleRate: Int
    /// channel_configuration; 0 means "defined in the stream" (reported as unknown).
    public var channelConfiguration: Int
    /// Whole frame length including this header.
    public var frameLength: Int
    /// AAC frames of 1024 samples carried by this ADTS frame (number_of_raw_data_blocks_in_frame + 1).
    public var rawDataBlocks: Int

    /// PCM samples per channel the frame decodes to.
    public var samplesPerFrame: Int { rawDataBlocks * 1024 }
    /// RFC 6381 codec string, e.g. `mp4a.40.2`.
    public var codec: String { "mp4a.40.\(audioObjectType)" }

    /// Sampling rates by sampling_frequency_index.
    public static let sampleRates = [
        96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350,
    ]

    /// True when the bytes at `offset` start with the 12-bit ADTS sync word and layer 0.
    static func hasSync(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        offset >= 0 && offset + 1 < bytes.count && bytes[offset] == 0xFF && bytes[offset + 1] & 0xF6 == 0xF0
    }

    /// Reads the 7-byte fixed + variable header at `offset`; throws if it is not a valid ADTS header.
    public init(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(ProbeError) {
        guard offset >= 0, offset + 7 <= bytes.count else {
            throw ProbeError("ADTS: header at offset \(offset) is cut off (\(bytes.count - offset) bytes left)")
        }
        guard Self.hasSync(bytes, at: offset) else {
            throw ProbeError(
                "ADTS: no sync word at offset \(offset) (bytes 0x\(Self.hex(bytes[offset])) "
                    + "0x\(Self.hex(bytes[offset + 1])), expected 0xFFF)")
        }
        let b2 = Int(bytes[offset + 2])
        let b3 = Int(bytes[offset + 3])
        let b4 = Int(bytes[offset + 4])
        let b5 = Int(bytes[offset + 5])
        let b6 = Int(bytes[offset + 6])
        audioObjectType = (b2 >> 6) + 1
        let frequencyIndex = (b2 >> 2) & 0x0F
        guard frequencyIndex < Self.sampleRates.count else {
            throw ProbeError("ADTS: reserved sampling_frequency_index \(frequencyIndex) at offset \(offset)")
        }
        samplingFrequencyIndex = frequencyIndex
        sampleRate = Self.sampleRates[frequencyIndex]
        channelConfiguration = (b2 & 1) << 2 | b3 >> 6
        frameLength = (b3 & 3) << 11 | b4 << 3 | b5 >> 5
        rawDataBlocks = (b6 & 3) + 1
        let headerLength = bytes[offset + 1] & 1 == 0 ? 9 : 7
        guard frameLength >= headerLength else {
            throw ProbeError("ADTS: frame_length \(frameLength) at offset \(offset) is shorter than its header")
        }
    }

    /// Walks consecutive ADTS frames in `bytes` and returns the first header and the total sample count.
    /// Throws if the bytes do not start with ADTS or a frame runs past the end (when `allowTruncatedLast` is false).
    public static func scan(
        _ bytes: UnsafeRawBufferPointer, from start: Int = 0, allowTruncatedLast: Bool = false
    ) throws(ProbeError) -> (first: ADTSHeader, frames: Int, samples: Int) {
        var offset = start
        var first: ADTSHeader?
        var frames = 0
        var samples = 0
        while offset < bytes.count {
            if first != nil, allowTruncatedLast, bytes.count - offset < 7 { break }
            let header = try ADTSHeader(bytes, at: offset)
            if offset + header.frameLength > bytes.count {
                if allowTruncatedLast, first != nil { break }
                throw ProbeError(
                    "ADTS: frame at offset \(offset) declares \(header.frameLength) bytes but only "
                        + "\(bytes.count - offset) remain")
            }
            if first == nil { first = header }
            frames += 1
            samples += header.samplesPerFrame
            offset += header.frameLength
        }
        guard let first else { throw ProbeError("ADTS: no frames") }
        return (first, frames, samples)
    }

    static func hex(_ byte: UInt8) -> String { AVCCodecString.hex2(byte).uppercased() }
}
