/// An MSB-first bit cursor over an RBSP (emulation prevention bytes already removed), with exp-Golomb codes as used by
/// H.264 and HEVC parameter sets. Reads past the end throw `ProbeError`.
struct BitReader {
    private let bytes: [UInt8]
    private var bitOffset = 0
    private let context: String

    init(_ bytes: [UInt8], context: String) {
        self.bytes = bytes
        self.context = context
    }

    var bitsRemaining: Int { bytes.count * 8 - bitOffset }

    mutating func readBit() throws(ProbeError) -> UInt32 {
        guard bitOffset < bytes.count * 8 else {
            throw ProbeError("\(context): ran out of bits after \(bitOffset) bits")
        }
        let bit = (bytes[bitOffset >> 3] >> (7 - UInt8(bitOffset & 7))) & 1
        bitOffset += 1
        return UInt32(bit)
    }

    mutating func readFlag() throws(ProbeError) -> Bool { try readBit() == 1 }

    /// Reads `count` bits (0...32) as an unsigned value.
    mutating func readBits(_ count: Int) throws(ProbeError) -> UInt32 {
        precondition((0...32).contains(count), "BitReader reads at most 32 bits at once")
        guard count <= bitsRemaining else {
            throw ProbeError("\(context): needs \(count) bits but only \(bitsRemaining) remain")
        }
        var value: UInt32 = 0
        for _ in 0..<count { value = value << 1 | (try readBit()) }
        return value
    }

    mutating func skipBits(_ count: Int) throws(ProbeError) {
        guard count >= 0, count <= bitsRemaining else {
            throw ProbeError("\(context): cannot skip \(count) bits, only \(bitsRemaining) remain")
        }
        bitOffset += count
    }

    /// Unsigned exp-Golomb `ue(v)`; values need at most 32 bits.
    mutating func readUE() throws(ProbeError) -> UInt32 {
        var leadingZeros = 0
        while try readBit() == 0 {
            leadingZeros += 1
            guard leadingZeros < 32 else { throw ProbeError("\(context): exp-Golomb code longer than 32 bits") }
        }
        let suffix = try readBits(leadingZeros)
        return UInt32((UInt64(1) << UInt64(leadingZeros)) - 1 + UInt64(suffix))
    }

    /// Signed exp-Golomb `se(v)`.
    mutating func readSE() throws(ProbeError) -> Int64 {
        let code = Int64(try readUE())
        return code % 2 == 1 ? (code + 1) / 2 : -(code / 2)
    }
}
