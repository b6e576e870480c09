/// The dynamic range of a video track: EXT-X-STREAM-INF's VIDEO-RANGE (RFC 8216bis section 4.4.6.2).
public enum VideoRange: String, Sendable, Hashable, CaseIterable {
    case sdr = "SDR"
    case hlg = "HLG"
    case pq = "PQ"

    /// The range an ITU-T H.273 TransferCharacteristics code point stands for: 16 (SMPTE ST 2084) is PQ, 18
    /// (ARIB STD-B67) is HLG, every other value (1, 6, 13, 14, 15 named by RFC 8216bis, and unspecified) SDR.
    public init(transferCharacteristics: UInt8) {
        switch transferCharacteristics {
        case 16: self = .pq
        case 18: self = .hlg
        default: self = .sdr
        }
    }
}

/// The colour and timing facts of a video usability information (VUI) block, H.264 Annex E or HEVC Annex E.
struct VideoUsability: Hashable {
    /// transfer_characteristics when colour_description_present_flag is set.
    var transferCharacteristics: UInt8?
    /// Frames per second from the timing info, when present and plausible.
    var frameRate: Double?

    /// The highest VUI frame rate believed (HLS players and encoders top out at 240).
    static let maximumFrameRate = 300.0

    /// Frame rates outside (0, 300] are taken as garbage and ignored (the PTS deltas decide then).
    static func plausible(_ rate: Double) -> Double? { rate > 0 && rate <= maximumFrameRate ? rate : nil }

    /// Reads the video_signal_type part of a VUI (after overscan info): video_format, video_full_range_flag,
    /// colour_description_present_flag and the three colour code points. Returns transfer_characteristics.
    static func readVideoSignalType(_ bits: inout BitReader) throws(ProbeError) -> UInt8? {
        guard try bits.readFlag() else { return nil }  // video_signal_type_present_flag
        try bits.skipBits(4)  // video_format, video_full_range_flag
        guard try bits.readFlag() else { return nil }  // colour_description_present_flag
        try bits.skipBits(8)  // colour_primaries
        let transfer = UInt8(try bits.readBits(8))
        try bits.skipBits(8)  // matrix_coeffs
        return transfer
    }

    /// Skips chroma_loc_info (same in H.264 and HEVC).
    static func skipChromaLocation(_ bits: inout BitReader) throws(ProbeError) {
        guard try bits.readFlag() else { return }  // chroma_loc_info_present_flag
        _ = try bits.readUE()  // chroma_sample_loc_type_top_field
        _ = try bits.readUE()  // chroma_sample_loc_type_bottom_field
    }

    /// Reads timing_info_present_flag, num_units_in_tick and time_scale: ticks per second (`time_scale /
    /// num_units_in_tick`), nil when absent or either is 0.
    static func readTicksPerSecond(_ bits: inout BitReader) throws(ProbeError) -> Double? {
        guard try bits.readFlag() else { return nil }
        let unitsInTick = try bits.readBits(32)
        let timeScale = try bits.readBits(32)
        guard unitsInTick > 0, timeScale > 0 else { return nil }
        return Double(timeScale) / Double(unitsInTick)
    }

    /// Skips aspect_ratio_info and overscan_info, the VUI's first fields (same in H.264 and HEVC).
    static func skipAspectAndOverscan(_ bits: inout BitReader) throws(ProbeError) {
        if try bits.readFlag() {  // aspect_ratio_info_present_flag
            if try bits.readBits(8) == 255 { try bits.skipBits(32) }  // Extended_SAR: sar_width, sar_height
        }
        if try bits.readFlag() { try bits.skipBits(1) }  // overscan_info_present -> overscan_appropriate
    }
}

/// A Dolby Vision decoder configuration record: the `dvcC`/`dvvC`/`dvwC` box of an fMP4 visual sample entry, or the
/// body of an MPEG-TS DOVI video stream descriptor (tag 0xB0).
public struct DolbyVisionConfiguration: Sendable, Hashable {
    /// dv_profile (5, 8, 10, ...).
    public var profile: Int
    /// dv_level.
    public var level: Int
    /// dv_bl_signal_compatibility_id: 0 none (a Dolby Vision only stream), 1 HDR10, 2 SDR, 4 HLG, 6 Blu-ray.
    public var compatibilityID: Int

    public init(profile: Int, level: Int, compatibilityID: Int) {
        self.profile = profile
        self.level = level
        self.compatibilityID = compatibilityID
    }

    /// Reads dv_version_major, dv_version_minor, dv_profile, dv_level, the three presence flags, and
    /// dv_bl_signal_compatibility_id (after the 16 bits of dependency_pid + reserved when `transportStream` and the
    /// base layer is absent).
    init(record: [UInt8], transportStream: Bool = false) throws(ProbeError) {
        var bits = BitReader(record, context: "Dolby Vision configuration")
        let major = try bits.readBits(8)
        guard (1...2).contains(major) else { throw ProbeError("Dolby Vision configuration: version \(major)") }
        try bits.skipBits(8)  // dv_version_minor
        profile = Int(try bits.readBits(7))
        level = Int(try bits.readBits(6))
        try bits.skipBits(2)  // rpu_present_flag, el_present_flag
        let baseLayerPresent = try bits.readFlag()
        if transportStream, !baseLayerPresent { try bits.skipBits(16) }  // dependency_pid, reserved
        compatibilityID = Int(try bits.readBits(4))
    }

    /// VIDEO-RANGE of a Dolby Vision stream, from what its base layer is compatible with: ids 0 (profile 5, no
    /// compatible base layer) and 1 (HDR10) PQ, 4 HLG (even when the VUI states BT.2020's transfer 14, as an iPhone's
    /// profile 8.4 does), 2 SDR; for other ids `otherwise`, the range the SPS or `colr` box states.
    func videoRange(otherwise: VideoRange?) -> VideoRange? {
        switch compatibilityID {
        case 0, 1: .pq
        case 2: .sdr
        case 4: .hlg
        default: otherwise
        }
    }

    /// The Dolby Vision sample entry for a base layer codec: `dvh1`/`dvhe` for `hvc1`/`hev1`, `dva1`/`dvav` for
    /// `avc1`/`avc3`, `dav1` for AV1; nil for others.
    static func sampleEntry(forBase base: String) -> String? {
        switch base {
        case "hvc1": "dvh1"
        case "hev1": "dvhe"
        case "avc1": "dva1"
        case "avc3": "dvav"
        case "av01": "dav1"
        default: nil
        }
    }

    /// `dvh1.08.07` style: sample entry, two-digit profile, two-digit level (Dolby Vision in HLS).
    public func codec(sampleEntry: String) -> String {
        "\(sampleEntry).\(Self.twoDigits(profile)).\(Self.twoDigits(level))"
    }

    /// The compatibility brand of the base layer: `db1p` (HDR10), `db2g` (SDR), `db4h` (HLG) or `db4g` (id 4 with a
    /// BT.2020 SDR transfer, 14); nil for the other ids.
    func compatibilityBrand(transferCharacteristics: UInt8?) -> String? {
        switch compatibilityID {
        case 1: "db1p"
        case 2: "db2g"
        case 4: transferCharacteristics == 14 ? "db4g" : "db4h"
        default: nil
        }
    }

    /// The SUPPLEMENTAL-CODECS entry of a backward-compatible stream whose CODECS names the base layer
    /// (`dvh1.08.07/db1p`): only for compatibility ids 1, 2 and 4, which have a brand. nil for id 0 (profile 5:
    /// CODECS is the Dolby Vision codec itself), 6 (Blu-ray) and reserved ids, or when the base codec has no Dolby
    /// Vision sample entry.
    func supplementalCodec(baseSampleEntry: String, transferCharacteristics: UInt8?) -> String? {
        guard let entry = Self.sampleEntry(forBase: baseSampleEntry),
            let brand = compatibilityBrand(transferCharacteristics: transferCharacteristics)
        else { return nil }
        return codec(sampleEntry: entry) + "/" + brand
    }

    private static func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
}
