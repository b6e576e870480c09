/// One MPEG-1/2 audio (MP1/MP2/MP3) frame header (ISO/IEC 11172-3 2.4.1.3, ISO/IEC 13818-3).
struct MPEGAudioHeader: Hashable {
    var sampleRate: Int
    var channelCount: Int
    var samplesPerFrame: Int
    var frameLength: Int

    /// Apple's HLS codec string for MP3 (and used for the other layers too).
    static let codec = "mp4a.40.34"

    private static let bitratesV1 = [
        [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],  // layer I
        [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],  // layer II
        [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],  // layer III
    ]
    private static let bitratesV2 = [
        [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],  // layer I
        [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],  // layers II and III
    ]

    init(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(ProbeError) {
        guard offset >= 0, offset + 4 <= bytes.count else {
            throw ProbeError("MPEG audio: header at offset \(offset) is cut off")
        }
        let b1 = Int(bytes[offset + 1])
        let b2 = Int(bytes[offset + 2])
        let b3 = Int(bytes[offset + 3])
        guard bytes[offset] == 0xFF, b1 & 0xE0 == 0xE0 else {
            throw ProbeError("MPEG audio: no sync word at offset \(offset)")
        }
        let version = (b1 >> 3) & 3  // 0: 2.5, 2: 2, 3: 1
        let layerBits = (b1 >> 1) & 3  // 1: III, 2: II, 3: I
        let bitrateIndex = b2 >> 4
        let rateIndex = (b2 >> 2) & 3
        guard version != 1, layerBits != 0, bitrateIndex != 0, bitrateIndex != 15, rateIndex != 3 else {
            throw ProbeError("MPEG audio: reserved or free-format header at offset \(offset)")
        }
        let layer = 4 - layerBits
        let baseRate = [44100, 48000, 32000][rateIndex]
        sampleRate = version == 3 ? baseRate : version == 2 ? baseRate / 2 : baseRate / 4
        channelCount = b3 >> 6 == 3 ? 1 : 2
        let padding = (b2 >> 1) & 1
        let kbps =
            version == 3
            ? Self.bitratesV1[layer - 1][bitrateIndex] : Self.bitratesV2[layer == 1 ? 0 : 1][bitrateIndex]
        let bitrate = kbps * 1000
        switch layer {
        case 1:
            samplesPerFrame = 384
            frameLength = (12 * bitrate / sampleRate + padding) * 4
        case 2:
            samplesPerFrame = 1152
            frameLength = 144 * bitrate / sampleRate + padding
        default:
            samplesPerFrame = version == 3 ? 1152 : 576
            frameLength = (version == 3 ? 144 : 72) * bitrate / sampleRate + padding
        }
        guard frameLength >= 4 else { throw ProbeError("MPEG audio: frame length \(frameLength) at offset \(offset)") }
    }

    /// The first header and the total samples of the consecutive frames in `bytes` (a cut-off last frame counts).
    static func scan(_ bytes: UnsafeRawBufferPointer) throws(ProbeError) -> (first: MPEGAudioHeader, samples: Int) {
        let first = try MPEGAudioHeader(bytes, at: 0)
        var samples = 0
        var offset = 0
        while offset + 4 <= bytes.count, let header = try? MPEGAudioHeader(bytes, at: offset) {
            samples += header.samplesPerFrame
            offset += header.frameLength
        }
        return (first, samples)
    }
}
