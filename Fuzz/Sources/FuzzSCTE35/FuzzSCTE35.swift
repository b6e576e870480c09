import HLSPlaylist
import SCTE35

/// SCTE-35 splice_info_section validation (the bytes of `SCTE35-OUT=0x...` / the admin API's `scte35` hex), and the
/// hex text itself. The input is validated as it is, then again with its CRC_32 fixed up, so that the fuzzer gets
/// past the checksum to the command and descriptor loops. A section that validates must re-encode to bytes that
/// validate, and its cues (`cues()`: splice_insert and time_signal segmentation descriptors, as read from pushed
/// streams) are read without trapping. The input as text goes through the hexadecimal-sequence parser, too.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let text = String(validating: bytes, as: UTF8.self), let decoded = AttributeList.hexadecimalBytes(text) {
        check(decoded)
    }
    check(bytes)
    if bytes.count >= 4 {
        let crc = CRC32MPEG2.checksum(bytes[..<(bytes.count - 4)])
        for index in 0..<4 { bytes[bytes.count - 4 + index] = UInt8(truncatingIfNeeded: crc >> (24 - 8 * index)) }
        check(bytes)
    }
    return 0
}

private func check(_ bytes: [UInt8]) {
    guard let section = try? SpliceInfoSection(validating: bytes) else { return }
    _ = section.spliceInsert
    // Malformed commands and descriptors throw; nothing may trap.
    if let cues = try? section.cues() {
        for cue in cues where cue.spliceTime.map({ $0 >= 1 << 33 }) ?? false {
            fatalError("a splice time past 33 bits: \(cue)")
        }
    }
    let encoded = section.bytes
    do {
        _ = try SpliceInfoSection(validating: encoded)
    } catch {
        fatalError("a valid splice_info_section re-encoded to an invalid one: \(error)")
    }
}
