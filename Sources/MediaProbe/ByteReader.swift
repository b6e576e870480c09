/// A big-endian cursor over a window of bytes. Every read is bounds-checked and throws `ProbeError` when it would run
/// past the end of the window, so hostile input can never make the probe read outside the buffer.
struct ByteReader {
    let bytes: UnsafeRawBufferPointer
    /// Absolute offset of the next byte to read.
    private(set) var offset: Int
    /// Absolute offset one past the last readable byte.
    let end: Int
    /// What is being read, for error messages (e.g. "tkhd box", "PES header").
    let context: String

    /// A reader over `bytes[range]` (the whole buffer when `range` is nil); `range` is clamped to the buffer.
    init(_ bytes: UnsafeRawBufferPointer, range: Range<Int>? = nil, context: String) {
        self.bytes = bytes
        let lower = max(0, min(range?.lowerBound ?? 0, bytes.count))
        let upper = max(lower, min(range?.upperBound ?? bytes.count, bytes.count))
        self.offset = lower
        self.end = upper
        self.context = context
    }

    var remaining: Int { end - offset }
    var isAtEnd: Bool { offset >= end }

    private func require(_ count: Int) throws(ProbeError) {
        guard count >= 0, count <= end - offset else {
            throw ProbeError("\(context): needs \(count) bytes at offset \(offset) but only \(end - offset) remain")
        }
    }

    mutating func readUInt8() throws(ProbeError) -> UInt8 {
        try require(1)
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readUInt16() throws(ProbeError) -> UInt16 {
        try require(2)
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    mutating func readUInt24() throws(ProbeError) -> UInt32 {
        try require(3)
        defer { offset += 3 }
        return UInt32(bytes[offset]) << 16 | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2])
    }

    mutating func readUInt32() throws(ProbeError) -> UInt32 {
        try require(4)
        var value: UInt32 = 0
        for index in offset..<(offset + 4) { value = value << 8 | UInt32(bytes[index]) }
        offset += 4
        return value
    }

    mutating func readUInt64() throws(ProbeError) -> UInt64 {
        try require(8)
        var value: UInt64 = 0
        for index in offset..<(offset + 8) { value = value << 8 | UInt64(bytes[index]) }
        offset += 8
        return value
    }

    /// Reads a four-character code such as a box type.
    mutating func readFourCC() throws(ProbeError) -> String {
        try require(4)
        defer { offset += 4 }
        return FourCC.string(bytes, at: offset)
    }

    mutating func skip(_ count: Int) throws(ProbeError) {
        try require(count)
        offset += count
    }

    /// The next `count` bytes as absolute offsets into `bytes`, and advances past them.
    mutating func readRange(_ count: Int) throws(ProbeError) -> Range<Int> {
        try require(count)
        defer { offset += count }
        return offset..<(offset + count)
    }

    /// Copies the next `count` bytes.
    mutating func readArray(_ count: Int) throws(ProbeError) -> [UInt8] {
        let range = try readRange(count)
        return Array(UnsafeRawBufferPointer(rebasing: bytes[range]))
    }
}

/// Four-character codes (box types, sample entry types, handler types).
enum FourCC {
    /// The four bytes at `offset` as text; non-printable bytes become `?`. The caller guarantees 4 bytes exist.
    static func string(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> String {
        var scalars = String.UnicodeScalarView()
        for index in offset..<(offset + 4) {
            let byte = bytes[index]
            scalars.append(Unicode.Scalar((0x20...0x7E).contains(byte) ? byte : 0x3F))
        }
        return String(scalars)
    }
}
