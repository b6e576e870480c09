/// Helpers for H.264/HEVC NAL units in Annex B byte streams (MPEG-TS) and length-prefixed form (avcC/hvcC).
enum NALUnits {
    /// The byte ranges of the NAL units (header included, start codes excluded) in an Annex B byte stream.
    static func annexBUnits(in bytes: UnsafeRawBufferPointer) -> [Range<Int>] {
        var starts: [Int] = []
        var index = 0
        let count = bytes.count
        while index + 2 < count {
            if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1 {
                starts.append(index + 3)
                index += 3
            } else {
                index += 1
            }
        }
        var units: [Range<Int>] = []
        for (position, start) in starts.enumerated() {
            var end = position + 1 < starts.count ? starts[position + 1] - 3 : count
            // A four-byte start code (00 00 00 01) leaves a zero byte that belongs to it, not to the unit.
            while end > start, bytes[end - 1] == 0, position + 1 < starts.count { end -= 1 }
            if end > start { units.append(start..<end) }
        }
        return units
    }

    /// Whether the first slice of an Annex B access unit (a video PES payload) is a random access picture: H.264 IDR
    /// (type 5), HEVC IRAP (16...21). Reads NAL unit headers only, up to that first slice; nil when there is none.
    static func firstSliceIsRandomAccess(in bytes: UnsafeRawBufferPointer, hevc: Bool) -> Bool? {
        var index = 0
        let count = bytes.count
        while index + 3 < count {
            if bytes[index + 2] > 1 {
                index += 3
            } else if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1 {
                let header = bytes[index + 3]
                if hevc {
                    let type = hevcType(header)
                    if type < 32 { return hevcIRAP.contains(type) }
                } else {
                    let type = h264Type(header)
                    if (1...5).contains(type) { return type == h264IDR }
                }
                index += 3
            } else {
                index += 1
            }
        }
        return nil
    }

    /// The NAL unit without emulation prevention bytes (00 00 03 -> 00 00), i.e. its RBSP including the header.
    static func rbsp(_ unit: UnsafeRawBufferPointer) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(unit.count)
        var zeros = 0
        for byte in unit {
            if zeros >= 2, byte == 3 {
                zeros = 0
                continue
            }
            zeros = byte == 0 ? zeros + 1 : 0
            output.append(byte)
        }
        return output
    }

    /// H.264 nal_unit_type (low 5 bits of the first header byte).
    static func h264Type(_ header: UInt8) -> UInt8 { header & 0x1F }

    /// HEVC nal_unit_type (bits 1...6 of the first header byte).
    static func hevcType(_ header: UInt8) -> UInt8 { (header >> 1) & 0x3F }

    static let h264IDR: UInt8 = 5
    static let h264SPS: UInt8 = 7
    /// HEVC IRAP pictures: BLA_W_LP ... CRA_NUT (16...21).
    static let hevcIRAP: ClosedRange<UInt8> = 16...21
    static let hevcSPS: UInt8 = 33
}
