/// The ADTS frames of one AAC PES packet, so that a continuous stream can be cut between two frames of a PES (an
/// encoder's PES often carries several): where each frame lies in the PES and its samples.
public struct AudioPESFrames: Sendable, Hashable {
    /// One whole ADTS frame: its bytes within the PES and the samples it decodes to.
    public struct Frame: Sendable, Hashable {
        public var range: Range<Int>
        public var samples: Int
    }

    public var sampleRate: Int
    public var frames: [Frame]

    /// Reads `pes` (from its 00 00 01 start code); nil unless its payload is whole ADTS frames of one sample rate,
    /// back to back up to the PES end (a frame cut off or bytes that are not ADTS: the PES is not split).
    public init?(pes: [UInt8]) {
        guard let header = try? PESHeader(pes, pid: 0) else { return nil }
        var frames: [Frame] = []
        var rate: Int?
        var offset = header.payloadStart
        let parsed: Bool = pes.withUnsafeBytes { buffer in
            let end = min(header.payloadEnd, buffer.count)
            while offset < end {
                guard let adts = try? ADTSHeader(UnsafeRawBufferPointer(rebasing: buffer[..<end]), at: offset),
                    adts.frameLength > 0, adts.frameLength <= end - offset, rate == nil || rate == adts.sampleRate
                else { return false }
                rate = adts.sampleRate
                frames.append(Frame(range: offset..<(offset + adts.frameLength), samples: adts.samplesPerFrame))
                offset += adts.frameLength
            }
            return true
        }
        guard parsed, let rate, rate > 0, !frames.isEmpty else { return nil }
        self.sampleRate = rate
        self.frames = frames
    }
}
