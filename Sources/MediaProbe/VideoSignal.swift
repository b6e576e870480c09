/// The colour and timing facts of a video usability information (VUI) block, H.264 Annex E or HEVC Annex E.
struct VideoUsability: Hashable {
    /// transfer_characteristics when colour_description_present_flag is set.
    var transferCharacteristics: UInt8?
    /// Frames per second from the timing info, when present and plausible.
    var frameRate: Double?

    /// ITU-T H.273 TransferCharacteristics code points: 2 (unspecified) stands for a parameter set that states none;
    /// 16 (SMPTE ST 2084) and 18 (ARIB STD-B67) are the HDR transfers, PQ and HLG (RFC 8216bis VIDEO-RANGE).
    static let unspecified: UInt8 = 2
    static let pq: UInt8 = 16
    static let hlg: UInt8 = 18

    /// The transfer a picture is meant to be shown with: `stated` (the VUI's or the `colr` box's), unless it is no
    /// HDR transfer and an alternative_transfer_characteristics SEI prefers PQ or HLG: the backward-compatible HLG
    /// signalling (BT.2020's 14 in the VUI, 18 in the SEI) that HDR-capable decoders follow. A stated PQ or HLG stands.
    static func displayed(stated: UInt8, preferred: UInt8?) -> UInt8 {
        guard stated != pq, stated != hlg, let preferred, preferred == pq || preferred == hlg else { return stated }
        return preferred
    }

    /// The one rule of both containers: `stated` with the SEI's preference applied (``displayed(stated:preferred:)``),
    /// then a Dolby Vision base layer's compatibility over that
    /// (``DolbyVisionConfiguration/transferCharacteristics(otherwise:)``).
    static func shown(stated: UInt8, preferred: UInt8?, dolbyVision: DolbyVisionConfiguration?) -> UInt8 {
        let displayed = displayed(stated: stated, preferred: preferred)
        return dolbyVision?.transferCharacteristics(otherwise: displayed) ?? displayed
    }

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

    /// The transfer a Dolby Vision stream is shown with, from what its base layer is compatible with: ids 0 (profile
    /// 5, no compatible base layer) and 1 (HDR10) PQ (16), 4 HLG (18, even when the VUI states BT.2020's transfer 14,
    /// as an iPhone's profile 8.4 does), 2 SDR (BT.709's 1); for other ids `otherwise`, what the stream states.
    func transferCharacteristics(otherwise: UInt8?) -> UInt8? {
        switch compatibilityID {
        case 0, 1: VideoUsability.pq
        case 2: 1
        case 4: VideoUsability.hlg
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
