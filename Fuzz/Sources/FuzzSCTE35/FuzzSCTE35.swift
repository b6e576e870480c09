import HLSPlaylist
import MediaProbe

/// SCTE-35 splice_info_section validation (the bytes of `SCTE35-OUT=0x...` / the admin API's `scte35` hex), and the
/// hex text itself. The input is validated as it is, then again with its CRC_32 fixed up, so that the fuzzer gets
/// past the checksum to the command and descriptor loops. A section that validates must re-encode to bytes that
/// validate. The input as text goes through the hexadecimal-sequence parser, too.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let text = String(validating: bytes, as: UTF8.self), let decoded = AttributeList.hexadecimalBytes(text) {
        check(decoded)
    }
    check(bytes)
    if bytes.count >= 4 {
        let crc = crc32MPEG2(bytes[..<(bytes.count - 4)])
        for index in 0..<4 { bytes[bytes.count - 4 + index] = UInt8(truncatingIfNeeded: crc >> (24 - 8 * index)) }
        check(bytes)
    }
    return 0
}

private func check(_ bytes: [UInt8]) {
    guard let section = try? SpliceInfoSection(validating: bytes) else { return }
    _ = section.spliceInsert
    let encoded = section.bytes
    do {
        _ = try SpliceInfoSection(validating: encoded)
    } catch {
        fatalError("a valid splice_info_section re-encoded to an invalid one: \(error)")
    }
}

/// CRC-32/MPEG-2 (polynomial 0x04C11DB7, initial value 0xFFFFFFFF, no reflection, no final XOR).
private func crc32MPEG2(_ bytes: ArraySlice<UInt8>) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte) << 24
        for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? crc << 1 ^ 0x04C1_1DB7 : crc << 1 }
    }
    return crc
}
