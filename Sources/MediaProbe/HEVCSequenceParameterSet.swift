/// The facts read from an HEVC sequence parameter set (ITU-T H.265 7.3.2.2): profile/tier/level and picture size.
struct HEVCSequenceParameterSet: Hashable {
    var profileTierLevel: HEVCProfileTierLevel
    /// Display size: pic_width/height_in_luma_samples minus the conformance window.
    var width: Int
    var height: Int

    func codec(sampleEntry: String = "hvc1") -> String { profileTierLevel.codec(sampleEntry: sampleEntry) }

    /// Parses the SPS NAL unit given as its RBSP (two header bytes included, emulation prevention bytes removed).
    init(rbsp: [UInt8]) throws(ProbeError) {
        var bits = BitReader(rbsp, context: "HEVC SPS")
        let header = try bits.readBits(16)
        guard (header >> 9) & 0x3F == 33 else {
            throw ProbeError("HEVC SPS: NAL unit type is \((header >> 9) & 0x3F), expected 33")
        }
        try bits.skipBits(4)  // sps_video_parameter_set_id
        let maxSubLayersMinus1 = Int(try bits.readBits(3))
        guard maxSubLayersMinus1 < 7 else { throw ProbeError("HEVC SPS: sps_max_sub_layers_minus1 is 7") }
        try bits.skipBits(1)  // sps_temporal_id_nesting_flag
        profileTierLevel = try HEVCProfileTierLevel(&bits, maxSubLayersMinus1: maxSubLayersMinus1)
        _ = try bits.readUE()  // sps_seq_parameter_set_id
        let chromaFormatIDC = try bits.readUE()
        guard chromaFormatIDC <= 3 else { throw ProbeError("HEVC SPS: chroma_format_idc \(chromaFormatIDC)") }
        var separateColourPlane = false
        if chromaFormatIDC == 3 { separateColourPlane = try bits.readFlag() }
        let codedWidth = Int(try bits.readUE())
        let codedHeight = Int(try bits.readUE())
        var window = (left: 0, right: 0, top: 0, bottom: 0)
        if try bits.readFlag() {
            window = (Int(try bits.readUE()), Int(try bits.readUE()), Int(try bits.readUE()), Int(try bits.readUE()))
        }
        let chromaArrayType = separateColourPlane ? 0 : chromaFormatIDC
        let subWidth = chromaArrayType == 1 || chromaArrayType == 2 ? 2 : 1
        let subHeight = chromaArrayType == 1 ? 2 : 1
        width = codedWidth - subWidth * (window.left + window.right)
        height = codedHeight - subHeight * (window.top + window.bottom)
        guard (1...65536).contains(width), (1...65536).contains(height) else {
            throw ProbeError("HEVC SPS: implausible picture size \(width)x\(height)")
        }
    }
}
