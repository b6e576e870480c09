/// The general profile, tier and level of an HEVC stream, as found in the SPS profile_tier_level() or in hvcC.
struct HEVCProfileTierLevel: Hashable {
    var profileSpace: UInt8
    var tierFlag: Bool
    var profileIDC: UInt8
    /// general_profile_compatibility_flag[0...31], flag j in bit (31 - j) as in the bitstream.
    var compatibilityFlags: UInt32
    /// The 48 bits starting with general_progressive_source_flag, as six bytes.
    var constraintBytes: [UInt8]
    var levelIDC: UInt8

    /// RFC 6381 codec string per ISO/IEC 14496-15 Annex E, as Apple writes it (e.g. `hvc1.1.6.L93.B0`):
    /// profile space letter (none, A, B, C) + profile_idc, compatibility flags in reverse bit order as hex,
    /// L or H (tier) + level_idc, then the constraint bytes as hex with trailing zero bytes omitted.
    func codec(sampleEntry: String = "hvc1") -> String {
        let space = ["", "A", "B", "C"][Int(profileSpace & 3)]
        var reversed: UInt32 = 0
        for bit in 0..<32 where compatibilityFlags & (1 << UInt32(bit)) != 0 {
            reversed |= 1 << UInt32(31 - bit)
        }
        var parts = [
            sampleEntry, "\(space)\(profileIDC)", String(reversed, radix: 16, uppercase: true),
            "\(tierFlag ? "H" : "L")\(levelIDC)",
        ]
        var constraints = constraintBytes
        while let last = constraints.last, last == 0 { constraints.removeLast() }
        parts += constraints.map { String($0, radix: 16, uppercase: true) }
        return parts.joined(separator: ".")
    }

    init(
        profileSpace: UInt8, tierFlag: Bool, profileIDC: UInt8, compatibilityFlags: UInt32, constraintBytes: [UInt8],
        levelIDC: UInt8
    ) {
        self.profileSpace = profileSpace
        self.tierFlag = tierFlag
        self.profileIDC = profileIDC
        self.compatibilityFlags = compatibilityFlags
        self.constraintBytes = constraintBytes
        self.levelIDC = levelIDC
    }

    /// Reads the general part of profile_tier_level(1, maxSubLayersMinus1) and skips the sub-layer part.
    init(_ bits: inout BitReader, maxSubLayersMinus1: Int) throws(ProbeError) {
        profileSpace = UInt8(try bits.readBits(2))
        tierFlag = try bits.readFlag()
        profileIDC = UInt8(try bits.readBits(5))
        compatibilityFlags = try bits.readBits(32)
        var constraints: [UInt8] = []
        for _ in 0..<6 { constraints.append(UInt8(try bits.readBits(8))) }
        constraintBytes = constraints
        levelIDC = UInt8(try bits.readBits(8))
        var subLayerProfilePresent: [Bool] = []
        var subLayerLevelPresent: [Bool] = []
        for _ in 0..<maxSubLayersMinus1 {
            subLayerProfilePresent.append(try bits.readFlag())
            subLayerLevelPresent.append(try bits.readFlag())
        }
        if maxSubLayersMinus1 > 0 { try bits.skipBits(2 * (8 - maxSubLayersMinus1)) }
        for layer in 0..<maxSubLayersMinus1 {
            if subLayerProfilePresent[layer] { try bits.skipBits(88) }
            if subLayerLevelPresent[layer] { try bits.skipBits(8) }
        }
    }

    /// From the 12 bytes of an hvcC record after configurationVersion.
    init(hvcC bytes: [UInt8]) throws(ProbeError) {
        guard bytes.count >= 12 else { throw ProbeError("hvcC box: \(bytes.count) bytes, needs at least 12") }
        profileSpace = bytes[0] >> 6
        tierFlag = bytes[0] & 0x20 != 0
        profileIDC = bytes[0] & 0x1F
        compatibilityFlags = bytes[1...4].reduce(0) { $0 << 8 | UInt32($1) }
        constraintBytes = Array(bytes[5...10])
        levelIDC = bytes[11]
    }
}
