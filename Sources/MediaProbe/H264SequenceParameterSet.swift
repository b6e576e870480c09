/// The facts read from an H.264 sequence parameter set (ISO/IEC 14496-10 7.3.2.1.1 and Annex E VUI).
struct H264SequenceParameterSet: Hashable {
    var profileIDC: UInt8
    /// constraint_set0_flag ... constraint_set5_flag and the two reserved bits, as the byte after profile_idc.
    var constraintFlags: UInt8
    var levelIDC: UInt8
    /// Display size: coded size minus the frame cropping rectangle.
    var width: Int
    var height: Int
    /// time_scale / (2 * num_units_in_tick) when the VUI carries timing info (one tick is a field: two per
    /// frame, for progressive and interlaced streams alike); nil when absent or outside (0, 300].
    var frameRate: Double?
    /// transfer_characteristics of the VUI's colour description, nil when it has none.
    var transferCharacteristics: UInt8?

    /// RFC 6381 codec string, `avc1.PPCCLL` in lowercase hex like ffmpeg and Apple write it.
    func codec(sampleEntry: String = "avc1") -> String {
        AVCCodecString.make(
            sampleEntry: sampleEntry, profile: profileIDC, compatibility: constraintFlags, level: levelIDC)
    }

    /// Parses the SPS NAL unit given as its RBSP (header byte included, emulation prevention bytes removed).
    init(rbsp: [UInt8]) throws(ProbeError) {
        var bits = BitReader(rbsp, context: "H.264 SPS")
        let header = try bits.readBits(8)
        guard header & 0x1F == 7 else { throw ProbeError("H.264 SPS: NAL unit type is \(header & 0x1F), expected 7") }
        profileIDC = UInt8(try bits.readBits(8))
        constraintFlags = UInt8(try bits.readBits(8))
        levelIDC = UInt8(try bits.readBits(8))
        _ = try bits.readUE()  // seq_parameter_set_id
        var chromaFormatIDC: UInt32 = 1
        var separateColourPlane = false
        if [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135].contains(profileIDC) {
            chromaFormatIDC = try bits.readUE()
            guard chromaFormatIDC <= 3 else { throw ProbeError("H.264 SPS: chroma_format_idc \(chromaFormatIDC)") }
            if chromaFormatIDC == 3 { separateColourPlane = try bits.readFlag() }
            _ = try bits.readUE()  // bit_depth_luma_minus8
            _ = try bits.readUE()  // bit_depth_chroma_minus8
            try bits.skipBits(1)  // qpprime_y_zero_transform_bypass_flag
            if try bits.readFlag() {  // seq_scaling_matrix_present_flag
                let listCount = chromaFormatIDC == 3 ? 12 : 8
                for list in 0..<listCount where try bits.readFlag() {
                    try Self.skipScalingList(&bits, size: list < 6 ? 16 : 64)
                }
            }
        }
        _ = try bits.readUE()  // log2_max_frame_num_minus4
        let pictureOrderCountType = try bits.readUE()
        if pictureOrderCountType == 0 {
            _ = try bits.readUE()  // log2_max_pic_order_cnt_lsb_minus4
        } else if pictureOrderCountType == 1 {
            try bits.skipBits(1)  // delta_pic_order_always_zero_flag
            _ = try bits.readSE()  // offset_for_non_ref_pic
            _ = try bits.readSE()  // offset_for_top_to_bottom_field
            let cycle = try bits.readUE()
            guard cycle <= 255 else { throw ProbeError("H.264 SPS: num_ref_frames_in_pic_order_cnt_cycle \(cycle)") }
            for _ in 0..<cycle { _ = try bits.readSE() }
        }
        _ = try bits.readUE()  // max_num_ref_frames
        try bits.skipBits(1)  // gaps_in_frame_num_value_allowed_flag
        let widthInMacroblocks = Int(try bits.readUE()) + 1
        let heightInMapUnits = Int(try bits.readUE()) + 1
        let frameMacroblocksOnly = try bits.readFlag()
        if !frameMacroblocksOnly { try bits.skipBits(1) }  // mb_adaptive_frame_field_flag
        try bits.skipBits(1)  // direct_8x8_inference_flag
        var crop = (left: 0, right: 0, top: 0, bottom: 0)
        if try bits.readFlag() {
            crop = (Int(try bits.readUE()), Int(try bits.readUE()), Int(try bits.readUE()), Int(try bits.readUE()))
        }
        let chromaArrayType = separateColourPlane ? 0 : chromaFormatIDC
        let subWidth = chromaArrayType == 1 || chromaArrayType == 2 ? 2 : 1
        let subHeight = chromaArrayType == 1 ? 2 : 1
        let cropUnitX = chromaArrayType == 0 ? 1 : subWidth
        let cropUnitY = (chromaArrayType == 0 ? 1 : subHeight) * (frameMacroblocksOnly ? 1 : 2)
        width = widthInMacroblocks * 16 - cropUnitX * (crop.left + crop.right)
        height = (frameMacroblocksOnly ? 1 : 2) * heightInMapUnits * 16 - cropUnitY * (crop.top + crop.bottom)
        guard (1...65536).contains(width), (1...65536).contains(height) else {
            throw ProbeError("H.264 SPS: implausible picture size \(width)x\(height)")
        }
        // As for HEVC: a VUI this reader cannot follow costs the colour and rate facts, not the codec and size.
        let vuiPresent = (try? bits.readFlag()) ?? false
        let usability = vuiPresent ? (try? Self.readVUI(&bits)) ?? VideoUsability() : VideoUsability()
        frameRate = usability.frameRate
        transferCharacteristics = usability.transferCharacteristics
    }

    private static func skipScalingList(_ bits: inout BitReader, size: Int) throws(ProbeError) {
        var last: Int64 = 8
        var next: Int64 = 8
        for _ in 0..<size where next != 0 {
            let delta = try bits.readSE()
            next = (last + delta + 256) % 256
            last = next == 0 ? last : next
        }
    }

    /// Reads the VUI up to timing_info: the colour description and the frame rate it states, if any.
    private static func readVUI(_ bits: inout BitReader) throws(ProbeError) -> VideoUsability {
        var usability = VideoUsability()
        try VideoUsability.skipAspectAndOverscan(&bits)
        usability.transferCharacteristics = try VideoUsability.readVideoSignalType(&bits)
        try VideoUsability.skipChromaLocation(&bits)
        // A tick is a field: two per frame.
        usability.frameRate = try VideoUsability.readTicksPerSecond(&bits).flatMap { VideoUsability.plausible($0 / 2) }
        return usability
    }
}

/// `avc1.PPCCLL` codec strings.
enum AVCCodecString {
    static func make(sampleEntry: String, profile: UInt8, compatibility: UInt8, level: UInt8) -> String {
        "\(sampleEntry).\(hex2(profile))\(hex2(compatibility))\(hex2(level))"
    }

    /// Two lowercase hex digits.
    static func hex2(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }
}
