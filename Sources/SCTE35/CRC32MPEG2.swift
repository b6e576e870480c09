/// CRC-32/MPEG-2, the checksum of MPEG-2 PSI sections and of SCTE-35 `splice_info_section`.
///
/// Polynomial 0x04C11DB7, initial value 0xFFFFFFFF, no reflection of input or output, no final XOR. Its check
/// value (the CRC of the ASCII bytes `123456789`) is 0x0376E6E7; the CRC of a section including its own CRC field
/// is 0.
public enum CRC32MPEG2 {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index) << 24
        for _ in 0..<8 {
            value = value & 0x8000_0000 != 0 ? (value << 1) ^ 0x04C1_1DB7 : value << 1
        }
        return value
    }

    /// The CRC of `bytes`.
    /// - Parameter bytes: the bytes, in order.
    /// - Returns: the 32-bit CRC, to be written big-endian after the bytes.
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc = (crc << 8) ^ table[Int((crc >> 24) ^ UInt32(byte))]
        }
        return crc
    }
}
