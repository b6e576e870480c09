/// The header of one 188-byte MPEG-TS packet (ISO/IEC 13818-1 2.4.3.2) and where its payload lies.
struct TransportStreamPacket {
    static let size = 188
    static let syncByte: UInt8 = 0x47

    var pid: Int
    var payloadUnitStart: Bool
    var randomAccess: Bool
    /// Absolute byte range of the payload inside the segment (empty when the packet carries none).
    var payload: Range<Int>

    /// Parses the packet starting at `offset`; the caller guarantees 188 bytes are available.
    init(_ bytes: UnsafeRawBufferPointer, at offset: Int, index: Int) throws(ProbeError) {
        guard bytes[offset] == Self.syncByte else {
            throw ProbeError(
                "not an MPEG-TS segment: byte \(offset) is 0x\(ADTSHeader.hex(bytes[offset])), expected sync byte "
                    + "0x47 (packet \(index))")
        }
        let b1 = Int(bytes[offset + 1])
        pid = (b1 & 0x1F) << 8 | Int(bytes[offset + 2])
        payloadUnitStart = b1 & 0x40 != 0
        let adaptationFieldControl = (bytes[offset + 3] >> 4) & 3
        var payloadStart = offset + 4
        randomAccess = false
        if adaptationFieldControl & 2 != 0 {
            let length = Int(bytes[offset + 4])
            let maximum = adaptationFieldControl == 2 ? 183 : 182
            guard length <= maximum else {
                throw ProbeError(
                    "MPEG-TS packet \(index) (byte \(offset)): adaptation_field_length \(length) runs past the "
                        + "188-byte packet end (at most \(maximum))")
            }
            if length > 0 { randomAccess = bytes[offset + 5] & 0x40 != 0 }
            payloadStart = offset + 5 + length
        }
        let end = offset + Self.size
        payload = adaptationFieldControl & 1 != 0 ? payloadStart..<end : end..<end
    }
}

/// Packets left out of an MPEG-TS.
public enum TransportStreamPackets {
    /// `bytes` without the 188-byte packets starting at `offsets` (ascending; an offset that is not a packet start
    /// inside `bytes` is ignored).
    public static func removing(packetsAt offsets: [Int], from bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var next = offsets.startIndex
        var offset = 0
        while offset < bytes.count {
            while next < offsets.endIndex, offsets[next] < offset { next += 1 }
            let end = min(offset + TransportStreamPacket.size, bytes.count)
            if next < offsets.endIndex, offsets[next] == offset, end - offset == TransportStreamPacket.size {
                next += 1
            } else {
                result.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
            }
            offset = end
        }
        return result
    }
}
