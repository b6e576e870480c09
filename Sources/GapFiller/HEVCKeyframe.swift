import MediaProbe

/// Finds the last IRAP access unit (IDR, CRA or BLA) of an HEVC elementary stream and rebuilds it so it decodes on
/// its own: an access unit delimiter, the VPS, SPS and PPS in force, the picture's slices and an end of sequence. SEI and other NAL
/// units are left out (captions or timecodes in SEI must not repeat).
enum HEVCKeyframe {
    static let videoParameterSet: UInt8 = 32
    static let sequenceParameterSet: UInt8 = 33
    static let pictureParameterSet: UInt8 = 34
    /// IRAP pictures: BLA_W_LP (16) ... CRA_NUT (21).
    static let irapTypes: ClosedRange<UInt8> = 16...21

    /// EOS_NUT (36): ends the coded video sequence, so the repeated picture starts a new one each time (a CRA
    /// repeated without it would repeat its picture order count in one sequence, which decoders refuse).
    static let endOfSequence: [UInt8] = [0x48, 0x01]

    /// The NAL unit type of an HEVC NAL unit starting with its two-byte header.
    static func type(_ unit: some Collection<UInt8>) -> UInt8 { (unit.first ?? 0) >> 1 & 0x3F }

    /// The rebuilt last IRAP access unit of `packets` (Annex B, 4-byte start codes).
    /// - Throws: when no PES carries an IRAP slice, or no VPS, SPS and PPS precede it in the segment.
    static func lastIRAP(in packets: [TransportStreamContents.PESPacket]) throws(GapFillerError) -> [UInt8] {
        var parameterSets: [UInt8: [[UInt8]]] = [:]
        var found: (parameterSets: [UInt8: [[UInt8]]], slices: [[UInt8]])?
        for packet in packets {
            let units = TransportStreamContents.annexBNALUnits(in: packet.payload).map { Array(packet.payload[$0]) }
                .filter { $0.count >= 2 }
            for kind in [videoParameterSet, sequenceParameterSet, pictureParameterSet] {
                let sets = units.filter { type($0) == kind }
                if !sets.isEmpty { parameterSets[kind] = sets }
            }
            let slices = units.filter { irapTypes.contains(type($0)) }
            if !slices.isEmpty { found = (parameterSets, slices) }
        }
        guard let found else { throw GapFillerError("no HEVC IRAP access unit in the segment") }
        let sets = [videoParameterSet, sequenceParameterSet, pictureParameterSet].map { found.parameterSets[$0] ?? [] }
        guard sets.allSatisfy({ !$0.isEmpty }) else {
            throw GapFillerError("the segment's last HEVC IRAP picture has no VPS, SPS and PPS before it")
        }
        let startCode: [UInt8] = [0, 0, 0, 1]
        // AUD_NUT (35), nuh_layer_id 0, nuh_temporal_id_plus1 1; pic_type 0 (I slices), stop bit.
        var accessUnit = startCode + [0x46, 0x01, 0x10]
        for unit in sets.joined() + found.slices + [endOfSequence] {
            accessUnit += startCode
            accessUnit += unit
        }
        return accessUnit
    }

    /// Whether an Annex B access unit holds an IRAP slice.
    static func isIRAP(_ accessUnit: [UInt8]) -> Bool {
        TransportStreamContents.annexBNALUnits(in: accessUnit).contains {
            irapTypes.contains(type(accessUnit[$0]))
        }
    }
}
