/// One ISO BMFF box (ISO/IEC 14496-12 4.2): its type and where its header and content lie in the file.
struct MP4Box {
    var type: String
    /// Absolute offset of the box header.
    var start: Int
    /// Absolute offset of the content (after size, type and any largesize).
    var contentStart: Int
    /// Absolute offset one past the box.
    var end: Int

    var content: Range<Int> { contentStart..<end }

    /// The boxes that exactly fill `range`. Size 1 means a 64-bit largesize follows; size 0 ("to the end of the
    /// file") is accepted only for a top-level `mdat`. Throws on any size that is too small or runs past `range`.
    static func children(
        of range: Range<Int>, in bytes: UnsafeRawBufferPointer, context: String, topLevel: Bool = false
    ) throws(ProbeError) -> [MP4Box] {
        var boxes: [MP4Box] = []
        var offset = range.lowerBound
        while offset < range.upperBound {
            let remaining = range.upperBound - offset
            guard remaining >= 8 else {
                throw ProbeError("\(context): \(remaining) stray bytes at offset \(offset), too few for a box header")
            }
            var reader = ByteReader(bytes, range: offset..<range.upperBound, context: context)
            let size32 = try reader.readUInt32()
            let type = try reader.readFourCC()
            let size: UInt64
            switch size32 {
            case 0:
                guard topLevel, type == "mdat" else {
                    throw ProbeError("\(context): box '\(type)' at offset \(offset) has size 0 (only a last mdat may)")
                }
                size = UInt64(remaining)
            case 1:
                size = try reader.readUInt64()
                guard size >= 16 else {
                    throw ProbeError(
                        "\(context): box '\(type)' at offset \(offset) has largesize \(size), smaller than its "
                            + "16-byte header")
                }
            default:
                size = UInt64(size32)
                guard size >= 8 else {
                    throw ProbeError(
                        "\(context): box '\(type)' at offset \(offset) has size \(size), smaller than its 8-byte "
                            + "header")
                }
            }
            guard size <= UInt64(remaining) else {
                throw ProbeError(
                    "\(context): box '\(type)' at offset \(offset) declares \(size) bytes but only \(remaining) remain")
            }
            let end = offset + Int(size)
            boxes.append(MP4Box(type: type, start: offset, contentStart: reader.offset, end: end))
            offset = end
        }
        return boxes
    }

    /// The child boxes of this box, starting `skip` bytes into its content (for full boxes and sample entries).
    func children(in bytes: UnsafeRawBufferPointer, skip: Int = 0) throws(ProbeError) -> [MP4Box] {
        guard skip <= end - contentStart else {
            throw ProbeError("'\(type)' box at offset \(start): \(end - contentStart) bytes, needs at least \(skip)")
        }
        return try Self.children(of: (contentStart + skip)..<end, in: bytes, context: "'\(type)' box")
    }

    /// A reader over this box's content.
    func reader(_ bytes: UnsafeRawBufferPointer) -> ByteReader {
        ByteReader(bytes, range: content, context: "'\(type)' box at offset \(start)")
    }
}

extension Array where Element == MP4Box {
    func first(_ type: String) -> MP4Box? { first { $0.type == type } }

    /// Like `first(_:)` but throws a clear message when the box is missing.
    func required(_ type: String, in parent: String) throws(ProbeError) -> MP4Box {
        guard let box = first(type) else {
            throw ProbeError("\(parent): no '\(type)' box (found \(map(\.type).joined(separator: ", ")))")
        }
        return box
    }
}
