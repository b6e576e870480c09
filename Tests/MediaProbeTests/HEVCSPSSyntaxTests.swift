import TestSupport
import Testing

@testable import MediaProbe

/// Hand-built HEVC SPS bitstreams (ITU-T H.265 7.3.2.2) for the syntax the encoders in the fixtures never write:
/// inter-predicted short-term reference picture sets and a set count over the limit (docs/media-probe.md).
@Suite("HEVC SPS: short-term reference picture sets before the VUI", .offThePool)
struct HEVCSPSSyntaxTests {
    /// Writes bits most significant first, exp-Golomb codes, and the RBSP trailing bits.
    struct BitWriter {
        var bytes: [UInt8] = []
        var used = 0  // bits used in the last byte (0 = start a new byte)

        mutating func bits(_ value: UInt64, _ count: Int) {
            for shift in stride(from: count - 1, through: 0, by: -1) { flag((value >> UInt64(shift)) & 1 == 1) }
        }

        mutating func flag(_ set: Bool) {
            if used == 0 { bytes.append(0) }
            if set { bytes[bytes.count - 1] |= 0x80 >> UInt8(used) }
            used = (used + 1) % 8
        }

        /// ue(v): value + 1 in binary, preceded by as many zeros as it has bits after the first.
        mutating func ue(_ value: UInt64) {
            let coded = value + 1
            let length = 64 - coded.leadingZeroBitCount
            bits(0, length - 1)
            bits(coded, length)
        }

        /// rbsp_trailing_bits, then `padding` zero bytes.
        mutating func finish(padding: Int = 0) {
            flag(true)
            while used != 0 { flag(false) }
            bytes += [UInt8](repeating: 0, count: padding)
        }
    }

    /// An SPS of Main profile, level 3.1, 1280x720, 4:2:0, up to num_short_term_ref_pic_sets; `shortTermSets`
    /// writes the count and the sets.
    static func spsPrefix(shortTermSets: (inout BitWriter) -> Void) -> BitWriter {
        var w = BitWriter()
        w.bits(0x4201, 16)  // nal_unit_type 33, nuh_temporal_id_plus1 1
        w.bits(0, 4)  // sps_video_parameter_set_id
        w.bits(0, 3)  // sps_max_sub_layers_minus1
        w.flag(true)  // sps_temporal_id_nesting_flag
        w.bits(1, 8)  // profile_space 0, tier 0, profile_idc 1
        w.bits(0x6000_0000, 32)  // profile compatibility flags 1, 2
        w.bits(0x9000_0000_0000, 48)  // progressive, frame-only
        w.bits(93, 8)  // general_level_idc (3.1)
        w.ue(0)  // sps_seq_parameter_set_id
        w.ue(1)  // chroma_format_idc
        w.ue(1280)
        w.ue(720)
        w.flag(false)  // conformance_window_flag
        w.ue(0)  // bit_depth_luma_minus8
        w.ue(0)  // bit_depth_chroma_minus8
        w.ue(4)  // log2_max_pic_order_cnt_lsb_minus4
        w.flag(true)  // sps_sub_layer_ordering_info_present_flag
        w.ue(4)
        w.ue(2)
        w.ue(0)
        for value: UInt64 in [0, 2, 0, 3, 1, 1] { w.ue(value) }  // block sizes, hierarchy depths
        w.flag(false)  // scaling_list_enabled_flag
        w.flag(true)  // amp_enabled_flag
        w.flag(true)  // sample_adaptive_offset_enabled_flag
        w.flag(false)  // pcm_enabled_flag
        shortTermSets(&w)
        return w
    }

    @Test func interPredictedShortTermSetIsFollowedToAPQVUI() throws {
        var w = Self.spsPrefix { w in
            w.ue(2)  // num_short_term_ref_pic_sets
            // Set 0: two negative pictures, both used.
            w.ue(2)
            w.ue(0)
            for _ in 0..<2 {
                w.ue(0)
                w.flag(true)
            }
            // Set 1, predicted from set 0: NumDeltaPocs + 1 = 3 entries.
            w.flag(true)  // inter_ref_pic_set_prediction_flag
            w.flag(false)  // delta_rps_sign
            w.ue(0)  // abs_delta_rps_minus1
            w.flag(true)  // used_by_curr_pic_flag[0]
            w.flag(false)  // used_by_curr_pic_flag[1]
            w.flag(true)  // use_delta_flag[1]
            w.flag(false)  // used_by_curr_pic_flag[2]
            w.flag(false)  // use_delta_flag[2]
        }
        w.flag(false)  // long_term_ref_pics_present_flag
        w.flag(true)  // sps_temporal_mvp_enabled_flag
        w.flag(true)  // strong_intra_smoothing_enabled_flag
        w.flag(true)  // vui_parameters_present_flag
        w.flag(false)  // aspect_ratio_info_present_flag
        w.flag(false)  // overscan_info_present_flag
        w.flag(true)  // video_signal_type_present_flag
        w.bits(5, 3)  // video_format
        w.flag(false)  // video_full_range_flag
        w.flag(true)  // colour_description_present_flag
        w.bits(9, 8)  // colour_primaries BT.2020
        w.bits(16, 8)  // transfer_characteristics SMPTE ST 2084
        w.bits(9, 8)  // matrix_coeffs
        w.flag(false)  // chroma_loc_info_present_flag
        w.flag(false)  // neutral_chroma_indication_flag
        w.flag(false)  // field_seq_flag
        w.flag(false)  // frame_field_info_present_flag
        w.flag(false)  // default_display_window_flag
        w.flag(true)  // vui_timing_info_present_flag
        w.bits(1001, 32)
        w.bits(60000, 32)
        w.flag(false)  // vui_poc_proportional_to_timing_flag
        w.flag(false)  // vui_hrd_parameters_present_flag
        w.flag(false)  // bitstream_restriction_flag
        w.flag(false)  // sps_extension_present_flag
        w.finish()
        let sps = try HEVCSequenceParameterSet(rbsp: w.bytes)
        #expect(sps.codec() == "hvc1.1.6.L93.90")
        #expect(sps.width == 1280)
        #expect(sps.height == 720)
        #expect(sps.transferCharacteristics == 16)
        #expect(sps.frameRate == 60000.0 / 1001)
    }

    @Test func sixtyFiveShortTermSetsKeepCodecAndSizeButNoVUI() throws {
        var w = Self.spsPrefix { w in w.ue(65) }  // over the limit of 64
        w.finish(padding: 32)
        let sps = try HEVCSequenceParameterSet(rbsp: w.bytes)
        #expect(sps.codec() == "hvc1.1.6.L93.90")
        #expect(sps.width == 1280)
        #expect(sps.height == 720)
        #expect(sps.transferCharacteristics == nil)
        #expect(sps.frameRate == nil)
    }
}
