/// The facts read from an HEVC sequence parameter set (ITU-T H.265 7.3.2.2): profile/tier/level, picture size, and
/// from the VUI (Annex E.2.1) the colour description and frame rate.
struct HEVCSequenceParameterSet: Hashable {
    var profileTierLevel: HEVCProfileTierLevel
    /// Display size: pic_width/height_in_luma_samples minus the conformance window.
    var width: Int
    var height: Int
    /// vui_time_scale / vui_num_units_in_tick (halved when field_seq_flag says pictures are fields); nil when the
    /// VUI has no timing info or states a rate outside (0, 300].
    var frameRate: Double?
    /// transfer_characteristics of the VUI's colour description, nil when it has none.
    var transferCharacteristics: UInt8?

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
        // A VUI this reader cannot follow costs the colour and rate facts, never the codec and size read above.
        let usability = (try? Self.readToVUI(&bits, maxSubLayersMinus1: maxSubLayersMinus1)) ?? VideoUsability()
        frameRate = usability.frameRate
        transferCharacteristics = usability.transferCharacteristics
    }

    /// Reads the SPS from bit_depth_luma_minus8 to vui_parameters_present_flag and the VUI up to its timing info.
    /// Every count that sizes a loop is bounded by the limits H.265 sets, so a hostile SPS cannot make it spin.
    private static func readToVUI(
        _ bits: inout BitReader, maxSubLayersMinus1: Int
    ) throws(ProbeError) -> VideoUsability {
        _ = try bits.readUE()  // bit_depth_luma_minus8
        _ = try bits.readUE()  // bit_depth_chroma_minus8
        let log2MaxPOCLsbMinus4 = try bits.readUE()
        guard log2MaxPOCLsbMinus4 <= 12 else {
            throw ProbeError("HEVC SPS: log2_max_pic_order_cnt_lsb_minus4 \(log2MaxPOCLsbMinus4)")
        }
        let orderingInfoForAll = try bits.readFlag()  // sps_sub_layer_ordering_info_present_flag
        for _ in (orderingInfoForAll ? 0 : maxSubLayersMinus1)...maxSubLayersMinus1 {
            _ = try bits.readUE()  // sps_max_dec_pic_buffering_minus1
            _ = try bits.readUE()  // sps_max_num_reorder_pics
            _ = try bits.readUE()  // sps_max_latency_increase_plus1
        }
        for _ in 0..<6 { _ = try bits.readUE() }  // coding block, transform block sizes, hierarchy depths
        if try bits.readFlag(), try bits.readFlag() {  // scaling_list_enabled, sps_scaling_list_data_present
            try skipScalingListData(&bits)
        }
        try bits.skipBits(2)  // amp_enabled_flag, sample_adaptive_offset_enabled_flag
        if try bits.readFlag() {  // pcm_enabled_flag
            try bits.skipBits(8)  // pcm_sample_bit_depth_luma_minus1, pcm_sample_bit_depth_chroma_minus1
            _ = try bits.readUE()  // log2_min_pcm_luma_coding_block_size_minus3
            _ = try bits.readUE()  // log2_diff_max_min_pcm_luma_coding_block_size
            try bits.skipBits(1)  // pcm_loop_filter_disabled_flag
        }
        let shortTermSets = try bits.readUE()
        guard shortTermSets <= 64 else { throw ProbeError("HEVC SPS: num_short_term_ref_pic_sets \(shortTermSets)") }
        var deltaPOCCounts: [Int] = []
        for index in 0..<Int(shortTermSets) {
            deltaPOCCounts.append(try skipShortTermRefPicSet(&bits, index: index, previousCounts: deltaPOCCounts))
        }
        if try bits.readFlag() {  // long_term_ref_pics_present_flag
            let longTerm = try bits.readUE()
            guard longTerm <= 32 else { throw ProbeError("HEVC SPS: num_long_term_ref_pics_sps \(longTerm)") }
            for _ in 0..<longTerm {
                try bits.skipBits(Int(log2MaxPOCLsbMinus4) + 4)  // lt_ref_pic_poc_lsb_sps
                try bits.skipBits(1)  // used_by_curr_pic_lt_sps_flag
            }
        }
        try bits.skipBits(2)  // sps_temporal_mvp_enabled_flag, strong_intra_smoothing_enabled_flag
        guard try bits.readFlag() else { return VideoUsability() }  // vui_parameters_present_flag
        var usability = VideoUsability()
        try VideoUsability.skipAspectAndOverscan(&bits)
        usability.transferCharacteristics = try VideoUsability.readVideoSignalType(&bits)
        try VideoUsability.skipChromaLocation(&bits)
        try bits.skipBits(1)  // neutral_chroma_indication_flag
        let fieldSequence = try bits.readFlag()
        try bits.skipBits(1)  // frame_field_info_present_flag
        if try bits.readFlag() {  // default_display_window_flag
            for _ in 0..<4 { _ = try bits.readUE() }
        }
        usability.frameRate = try VideoUsability.readTicksPerSecond(&bits).flatMap {
            VideoUsability.plausible($0 / (fieldSequence ? 2 : 1))
        }
        return usability
    }

    /// scaling_list_data() (7.3.4).
    private static func skipScalingListData(_ bits: inout BitReader) throws(ProbeError) {
        for sizeID in 0..<4 {
            for _ in stride(from: 0, to: 6, by: sizeID == 3 ? 3 : 1) {
                if try bits.readFlag() {  // scaling_list_pred_mode_flag
                    if sizeID > 1 { _ = try bits.readSE() }  // scaling_list_dc_coef_minus8
                    for _ in 0..<min(64, 1 << (4 + (sizeID << 1))) { _ = try bits.readSE() }
                } else {
                    _ = try bits.readUE()  // scaling_list_pred_matrix_id_delta
                }
            }
        }
    }

    /// st_ref_pic_set(index) (7.3.7) as it appears in the SPS; returns its NumDeltaPocs. `previousCounts` holds
    /// NumDeltaPocs of the sets before it (an inter-predicted set in the SPS refers to the one just before).
    private static func skipShortTermRefPicSet(
        _ bits: inout BitReader, index: Int, previousCounts: [Int]
    ) throws(ProbeError) -> Int {
        if index > 0, try bits.readFlag() {  // inter_ref_pic_set_prediction_flag
            try bits.skipBits(1)  // delta_rps_sign
            _ = try bits.readUE()  // abs_delta_rps_minus1
            var count = 0
            for _ in 0...previousCounts[index - 1] {
                // use_delta_flag is only sent when used_by_curr_pic_flag is 0 (and is inferred 1 otherwise).
                var used = try bits.readFlag()
                if !used { used = try bits.readFlag() }
                if used { count += 1 }
            }
            return count
        }
        let negative = try bits.readUE()
        let positive = try bits.readUE()
        // sps_max_dec_pic_buffering_minus1 is at most 15, so each list holds at most 16 pictures.
        guard negative <= 16, positive <= 16 else {
            throw ProbeError("HEVC SPS: short-term reference picture set with \(negative)+\(positive) pictures")
        }
        for _ in 0..<(negative + positive) {
            _ = try bits.readUE()  // delta_poc_s0/s1_minus1
            try bits.skipBits(1)  // used_by_curr_pic_s0/s1_flag
        }
        return Int(negative + positive)
    }
}
