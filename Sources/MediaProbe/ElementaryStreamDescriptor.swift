/// Reads the `esds` box of an `mp4a` sample entry (ISO/IEC 14496-1 7.2.6.5, ISO/IEC 14496-3 1.6.2.1):
/// objectTypeIndication and the AudioSpecificConfig's audio object type, sample rate and channel configuration.
enum ElementaryStreamDescriptor {
    static func read(_ esds: MP4Box, _ bytes: UnsafeRawBufferPointer, into info: inout TrackInfo) throws(ProbeError) {
        var reader = esds.reader(bytes)
        try reader.skip(4)  // version, flags
        guard try reader.readUInt8() == 0x03 else { throw ProbeError("esds: no ES_Descriptor (tag 3)") }
        _ = try readLength(&reader)
        try reader.skip(2)  // ES_ID
        let flags = try reader.readUInt8()
        if flags & 0x80 != 0 { try reader.skip(2) }
        if flags & 0x40 != 0 { try reader.skip(Int(try reader.readUInt8())) }
        if flags & 0x20 != 0 { try reader.skip(2) }
        guard try reader.readUInt8() == 0x04 else { throw ProbeError("esds: no DecoderConfigDescriptor (tag 4)") }
        _ = try readLength(&reader)
        let objectType = try reader.readUInt8()
        try reader.skip(12)  // streamType, bufferSizeDB, maxBitrate, avgBitrate
        switch objectType {
        case 0x40: info.codec = "mp4a.40"
        case 0x69, 0x6B:
            info.codec = MPEGAudioHeader.codec
            return
        default:
            info.codec = "mp4a." + AVCCodecString.hex2(objectType)
            return
        }
        guard reader.remaining > 0, try reader.readUInt8() == 0x05 else { return }
        let length = try readLength(&reader)
        var bits = BitReader(try reader.readArray(length), context: "AudioSpecificConfig")
        var audioObjectType = try bits.readBits(5)
        if audioObjectType == 31 { audioObjectType = 32 + (try bits.readBits(6)) }
        let frequencyIndex = Int(try bits.readBits(4))
        let sampleRate =
            frequencyIndex == 15
            ? Int(try bits.readBits(24))
            : frequencyIndex < ADTSHeader.sampleRates.count ? ADTSHeader.sampleRates[frequencyIndex] : 0
        let channelConfiguration = Int(try bits.readBits(4))
        info.codec = "mp4a.40.\(audioObjectType)"
        if sampleRate > 0 { info.sampleRate = sampleRate }
        if (1...7).contains(channelConfiguration) {
            info.channelCount = channelConfiguration == 7 ? 8 : channelConfiguration
        }
    }

    /// The expandable descriptor length: up to four bytes of 7 bits, high bit meaning "more follows".
    private static func readLength(_ reader: inout ByteReader) throws(ProbeError) -> Int {
        var length = 0
        for _ in 0..<4 {
            let byte = try reader.readUInt8()
            length = length << 7 | Int(byte & 0x7F)
            if byte & 0x80 == 0 { break }
        }
        return length
    }
}
