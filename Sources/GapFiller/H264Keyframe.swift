import MediaProbe

/// Finds the last IDR access unit of an H.264 elementary stream and rebuilds it so it decodes on its own: an access
/// unit delimiter, the parameter sets in force, and the IDR slices. SEI and other NAL units are left out (captions
/// or timecodes in SEI must not repeat).
enum H264Keyframe {
    static let accessUnitDelimiter: UInt8 = 9
    static let idrSlice: UInt8 = 5
    static let sequenceParameterSet: UInt8 = 7
    static let pictureParameterSet: UInt8 = 8

    /// The rebuilt last IDR access unit of `packets` (Annex B, 4-byte start codes).
    /// - Throws: when no PES carries an IDR slice, or no SPS and PPS precede it in the segment.
    static func lastIDR(in packets: [TransportStreamContents.PESPacket]) throws(GapFillerError) -> [UInt8] {
        var sequenceSets: [[UInt8]] = []
        var pictureSets: [[UInt8]] = []
        var found: (sequenceSets: [[UInt8]], pictureSets: [[UInt8]], slices: [[UInt8]])?
        for packet in packets {
            let units = TransportStreamContents.annexBNALUnits(in: packet.payload).map { Array(packet.payload[$0]) }
            let sps = units.filter { $0[0] & 0x1F == sequenceParameterSet }
            let pps = units.filter { $0[0] & 0x1F == pictureParameterSet }
            if !sps.isEmpty { sequenceSets = sps }
            if !pps.isEmpty { pictureSets = pps }
            let slices = units.filter { $0[0] & 0x1F == idrSlice }
            if !slices.isEmpty { found = (sequenceSets, pictureSets, slices) }
        }
        guard let found else { throw GapFillerError("no H.264 IDR access unit in the segment") }
        guard !found.sequenceSets.isEmpty, !found.pictureSets.isEmpty else {
            throw GapFillerError("the segment's last H.264 IDR has no SPS and PPS before it")
        }
        let startCode: [UInt8] = [0, 0, 0, 1]
        var accessUnit = startCode + [accessUnitDelimiter, 0x10]  // primary_pic_type 0 (I slices), stop bit
        for unit in found.sequenceSets + found.pictureSets + found.slices {
            accessUnit += startCode
            accessUnit += unit
        }
        return accessUnit
    }
}
