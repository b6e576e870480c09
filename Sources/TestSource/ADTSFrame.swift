/// Splitting of an AAC ADTS stream into frames, checked against the one format the test source uses.
enum ADTSFrame {
    /// Samples per AAC frame.
    static let samplesPerFrame = 1024
    /// Sampling rate of the fixtures.
    static let sampleRate = 48_000
    /// Duration of one AAC frame in 90 kHz ticks: 1024 × 90 000 / 48 000.
    static let durationTicks: Int64 = 1920

    /// Splits an ADTS stream into whole frames (header included).
    /// - Throws: unless every frame is AAC-LC, 48 kHz, stereo, one raw data block, and the stream ends on a frame.
    static func split(_ data: [UInt8], name: String) throws(TestSourceError) -> [[UInt8]] {
        var frames: [[UInt8]] = []
        var offset = 0
        while offset < data.count {
            guard offset + 7 <= data.count, data[offset] == 0xFF, data[offset + 1] & 0xF6 == 0xF0 else {
                throw TestSourceError(.fixtureUnavailable, "\(name): no ADTS sync word at byte \(offset)")
            }
            let profile = data[offset + 2] >> 6  // audio object type - 1
            let samplingIndex = (data[offset + 2] >> 2) & 0x0F
            let channels = (data[offset + 2] & 0x01) << 2 | data[offset + 3] >> 6
            let length = Int(data[offset + 3] & 0x03) << 11 | Int(data[offset + 4]) << 3 | Int(data[offset + 5]) >> 5
            let rawBlocks = data[offset + 6] & 0x03
            guard profile == 1, samplingIndex == 3, channels == 2, rawBlocks == 0 else {
                throw TestSourceError(
                    .fixtureUnavailable, "\(name): frame at byte \(offset) is not AAC-LC 48 kHz stereo, one block")
            }
            guard length >= 7, offset + length <= data.count else {
                throw TestSourceError(.fixtureUnavailable, "\(name): truncated ADTS frame at byte \(offset)")
            }
            frames.append(Array(data[offset..<offset + length]))
            offset += length
        }
        return frames
    }
}
