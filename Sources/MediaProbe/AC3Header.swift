/// An AC-3 or E-AC-3 syncframe header (ATSC A/52 5.3 and annex E): sample rate, channels (acmod + lfeon), frame
/// length and samples per frame. Also reads the `dac3`/`dec3` boxes of fMP4 `ac-3`/`ec-3` sample entries (ETSI TS
/// 102 366 annex F), which carry the same fields.
struct AC3Header: Hashable {
    /// `ac-3` or `ec-3`, the RFC 6381 codec string.
    var codec: String
    var sampleRate: Int
    /// Full-bandwidth channels plus the LFE channel: 6 for 5.1.
    var channelCount: Int
    /// Bytes of the whole syncframe.
    var frameLength: Int
    /// Audio samples per channel in the syncframe (1536 for AC-3); 0 for an E-AC-3 dependent substream or an
    /// independent substream other than 0, whose samples play at the same time as substream 0's.
    var samples: Int

    /// Full-bandwidth channels per audio coding mode (acmod 0 is 1+1, two independent mono channels).
    static let acmodChannels = [2, 1, 2, 3, 3, 4, 4, 5]
    static let sampleRates = [48000, 44100, 32000]
    /// AC-3 nominal bit rates in kbit/s by frmsizecod / 2.
    private static let bitRates = [
        32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 576, 640,
    ]

    /// Whether a syncword 0x0B77 starts at `offset`.
    static func hasSync(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        offset >= 0 && offset + 1 < bytes.count && bytes[offset] == 0x0B && bytes[offset + 1] == 0x77
    }

    /// Parses the syncframe header at `offset` (AC-3 when bsid <= 10, E-AC-3 when bsid is 11...16).
    init(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(ProbeError) {
        guard Self.hasSync(bytes, at: offset), offset + 8 <= bytes.count else {
            throw ProbeError("AC-3: no syncframe (0x0B77) at byte \(offset)")
        }
        let bsid = bytes[offset + 5] >> 3
        var bits = BitReader(Array(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + 8)])), context: "AC-3")
        try bits.skipBits(16)
        if bsid <= 10 {
            try bits.skipBits(16)  // crc1
            let fscod = Int(try bits.readBits(2))
            let frameSizeCode = Int(try bits.readBits(6))
            guard fscod < 3, frameSizeCode < 38 else {
                throw ProbeError("AC-3: reserved fscod \(fscod) or frmsizecod \(frameSizeCode) at byte \(offset)")
            }
            try bits.skipBits(8)  // bsid, bsmod
            let acmod = Int(try bits.readBits(3))
            if acmod & 1 != 0, acmod != 1 { try bits.skipBits(2) }  // cmixlev
            if acmod & 4 != 0 { try bits.skipBits(2) }  // surmixlev
            if acmod == 2 { try bits.skipBits(2) }  // dsurmod
            let lfe = Int(try bits.readBits(1))
            let rate = Self.bitRates[frameSizeCode >> 1]
            let words =
                switch fscod {
                case 0: rate * 2
                case 1: rate * 96_000 / 44_100 + (frameSizeCode & 1)
                default: rate * 3
                }
            self.init(
                codec: "ac-3", sampleRate: Self.sampleRates[fscod], channelCount: Self.acmodChannels[acmod] + lfe,
                frameLength: words * 2, samples: 1536)
        } else if bsid <= 16 {
            let streamType = try bits.readBits(2)
            let substream = try bits.readBits(3)
            let frameSize = Int(try bits.readBits(11))
            let fscod = Int(try bits.readBits(2))
            var blocks = 6
            var sampleRate: Int
            if fscod == 3 {
                let reduced = Int(try bits.readBits(2))
                guard reduced < 3 else { throw ProbeError("E-AC-3: reserved fscod2 at byte \(offset)") }
                sampleRate = Self.sampleRates[reduced] / 2
            } else {
                sampleRate = Self.sampleRates[fscod]
                blocks = [1, 2, 3, 6][Int(try bits.readBits(2))]
            }
            let acmod = Int(try bits.readBits(3))
            let lfe = Int(try bits.readBits(1))
            self.init(
                codec: "ec-3", sampleRate: sampleRate, channelCount: Self.acmodChannels[acmod] + lfe,
                frameLength: (frameSize + 1) * 2, samples: streamType != 1 && substream == 0 ? blocks * 256 : 0)
        } else {
            throw ProbeError("AC-3: unknown bsid \(bsid) at byte \(offset)")
        }
    }

    init(codec: String, sampleRate: Int, channelCount: Int, frameLength: Int, samples: Int) {
        self.codec = codec
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.frameLength = frameLength
        self.samples = samples
    }

    /// The syncframes of a PES payload, back to back from its first syncword: the first header and the samples of
    /// all whole frames. Nil when the payload holds no valid syncframe.
    static func scan(_ bytes: UnsafeRawBufferPointer) -> (first: AC3Header, samples: Int)? {
        var offset = 0
        while offset + 1 < bytes.count, !hasSync(bytes, at: offset) { offset += 1 }
        var first: AC3Header?
        var samples = 0
        while hasSync(bytes, at: offset), let header = try? AC3Header(bytes, at: offset), header.frameLength > 0,
            first == nil || offset + header.frameLength <= bytes.count
        {
            if first == nil { first = header }
            samples += header.samples
            offset += header.frameLength
        }
        return first.map { ($0, samples) }
    }

    /// `dac3` (AC3SpecificBox): fscod(2) bsid(5) bsmod(3) acmod(3) lfeon(1) bit_rate_code(5).
    static func readDAC3(_ box: MP4Box, _ bytes: UnsafeRawBufferPointer, into info: inout TrackInfo) throws(ProbeError)
    {
        var reader = box.reader(bytes)
        var bits = BitReader(try reader.readArray(min(3, reader.remaining)), context: "dac3")
        let fscod = Int(try bits.readBits(2))
        try bits.skipBits(8)
        let acmod = Int(try bits.readBits(3))
        let lfe = Int(try bits.readBits(1))
        if fscod < 3 { info.sampleRate = sampleRates[fscod] }
        info.channelCount = acmodChannels[acmod] + lfe
    }

    /// `dec3` (EC3SpecificBox): data_rate(13) num_ind_sub(3), then the first independent substream: fscod(2)
    /// bsid(5) reserved(1) asvc(1) bsmod(3) acmod(3) lfeon(1).
    static func readDEC3(_ box: MP4Box, _ bytes: UnsafeRawBufferPointer, into info: inout TrackInfo) throws(ProbeError)
    {
        var reader = box.reader(bytes)
        var bits = BitReader(try reader.readArray(min(5, reader.remaining)), context: "dec3")
        try bits.skipBits(16)
        let fscod = Int(try bits.readBits(2))
        try bits.skipBits(10)
        let acmod = Int(try bits.readBits(3))
        let lfe = Int(try bits.readBits(1))
        if fscod < 3 { info.sampleRate = sampleRates[fscod] }
        info.channelCount = acmodChannels[acmod] + lfe
    }
}
