/// Probes an fMP4 initialization section: moov/trak (tkhd, mdia/mdhd, hdlr, minf/stbl/stsd) and mvex/trex.
enum FragmentedMP4InitProbe {
    static func probe(_ bytes: UnsafeRawBufferPointer) throws(ProbeError) -> InitSectionInfo {
        let top = try MP4Box.children(of: 0..<bytes.count, in: bytes, context: "fMP4", topLevel: true)
        return try probe(bytes, topLevel: top)
    }

    static func probe(_ bytes: UnsafeRawBufferPointer, topLevel top: [MP4Box]) throws(ProbeError) -> InitSectionInfo {
        let moov = try top.required("moov", in: "fMP4 init section")
        let moovChildren = try moov.children(in: bytes)
        var tracks: [TrackInfo] = []
        var lengthSizes: [Int: Int] = [:]
        for trak in moovChildren where trak.type == "trak" {
            var lengthSize: Int?
            let info = try track(trak, bytes, nalUnitLengthSize: &lengthSize)
            tracks.append(info)
            if let lengthSize { lengthSizes[info.trackID] = lengthSize }
        }
        guard !tracks.isEmpty else { throw ProbeError("fMP4 init section: the moov box has no trak") }
        var defaults: [Int: TrackFragmentDefaults] = [:]
        if let mvex = moovChildren.first("mvex") {
            for trex in try mvex.children(in: bytes) where trex.type == "trex" {
                var reader = trex.reader(bytes)
                try reader.skip(4)
                let trackID = Int(try reader.readUInt32())
                try reader.skip(4)  // default_sample_description_index
                defaults[trackID] = TrackFragmentDefaults(
                    sampleDuration: try reader.readUInt32(), sampleSize: try reader.readUInt32(),
                    sampleFlags: try reader.readUInt32())
            }
        }
        return InitSectionInfo(tracks: tracks, fragmentDefaults: defaults, nalUnitLengthSizes: lengthSizes)
    }

    private static func track(
        _ trak: MP4Box, _ bytes: UnsafeRawBufferPointer, nalUnitLengthSize: inout Int?
    ) throws(ProbeError) -> TrackInfo {
        let trakChildren = try trak.children(in: bytes)
        var tkhd = try trakChildren.required("tkhd", in: "trak").reader(bytes)
        let tkhdVersion = try tkhd.readUInt8()
        try tkhd.skip(3 + (tkhdVersion == 1 ? 16 : 8))
        let trackID = Int(try tkhd.readUInt32())

        let mdia = try trakChildren.required("mdia", in: "trak \(trackID)").children(in: bytes)
        var mdhd = try mdia.required("mdhd", in: "trak \(trackID) mdia").reader(bytes)
        let mdhdVersion = try mdhd.readUInt8()
        try mdhd.skip(3 + (mdhdVersion == 1 ? 16 : 8))
        let timescale = Int64(try mdhd.readUInt32())
        guard timescale > 0 else { throw ProbeError("fMP4 init section: track \(trackID) has mdhd timescale 0") }
        var hdlr = try mdia.required("hdlr", in: "trak \(trackID) mdia").reader(bytes)
        try hdlr.skip(8)
        let handler = try hdlr.readFourCC()
        let kind: TrackKind =
            switch handler {
            case "vide": .video
            case "soun": .audio
            case "subt", "text", "sbtl": .subtitles
            default: .data
            }
        var info = TrackInfo(kind: kind, trackID: trackID, timescale: timescale)

        let minf = try mdia.required("minf", in: "trak \(trackID) mdia").children(in: bytes)
        let stbl = try minf.required("stbl", in: "trak \(trackID) minf").children(in: bytes)
        let stsd = try stbl.required("stsd", in: "trak \(trackID) stbl")
        let entries = try stsd.children(in: bytes, skip: 8)
        if let entry = entries.first {
            switch kind {
            case .video: try readVisualEntry(entry, bytes, into: &info, nalUnitLengthSize: &nalUnitLengthSize)
            case .audio: try readAudioEntry(entry, bytes, into: &info)
            case .subtitles, .data:
                info.codec = ["wvtt": "wvtt", "stpp": "stpp.ttml.im1t"][entry.type]
            }
        }
        return info
    }

    private static func readVisualEntry(
        _ entry: MP4Box, _ bytes: UnsafeRawBufferPointer, into info: inout TrackInfo, nalUnitLengthSize: inout Int?
    ) throws(ProbeError) {
        var reader = entry.reader(bytes)
        try reader.skip(24)  // reserved, data_reference_index, pre_defined, reserved
        let width = Int(try reader.readUInt16())
        let height = Int(try reader.readUInt16())
        if width > 0, height > 0 {
            info.width = width
            info.height = height
        }
        let children = try entry.children(in: bytes, skip: 78)
        var transfer: UInt8?
        var spsRead = false
        switch entry.type {
        case "avc1", "avc3":
            guard let avcC = children.first("avcC") else { break }
            var config = avcC.reader(bytes)
            try config.skip(1)
            let profile = try config.readUInt8()
            let compatibility = try config.readUInt8()
            let level = try config.readUInt8()
            info.codec = AVCCodecString.make(
                sampleEntry: entry.type, profile: profile, compatibility: compatibility, level: level)
            nalUnitLengthSize = Int(try config.readUInt8() & 0x03) + 1
            if try config.readUInt8() & 0x1F > 0 {
                let length = Int(try config.readUInt16())
                let sps = try config.readArray(length)
                let parsed = sps.withUnsafeBytes { try? H264SequenceParameterSet(rbsp: NALUnits.rbsp($0)) }
                if let parsed {
                    info.frameRate = parsed.frameRate
                    transfer = parsed.transferCharacteristics
                    spsRead = true
                    if info.width == nil {
                        info.width = parsed.width
                        info.height = parsed.height
                    }
                }
            }
        case "hvc1", "hev1", "dvh1", "dvhe":
            guard let hvcC = children.first("hvcC") else { break }
            var config = hvcC.reader(bytes)
            try config.skip(1)
            let profileTierLevel = try HEVCProfileTierLevel(hvcC: try config.readArray(12))
            // A Dolby Vision entry is named by its HEVC base until a readable dvcC names it (below).
            let base = ["dvh1": "hvc1", "dvhe": "hev1"][entry.type] ?? entry.type
            info.codec = profileTierLevel.codec(sampleEntry: base)
            if config.remaining >= 9 {
                try config.skip(8)  // min_spatial_segmentation ... avgFrameRate
                nalUnitLengthSize = Int(try config.readUInt8() & 0x03) + 1
                if let sps = try? hevcSPS(&config) {
                    info.frameRate = sps.frameRate
                    transfer = sps.transferCharacteristics
                    spsRead = true
                }
            }
        default:
            info.codec = entry.type
        }
        // The container's colour description (the first colr of type nclx/nclc, ICC profiles skipped) states what the
        // SPS does; it wins when both are there, unless its transfer is 2 (unspecified).
        let colours = children.lazy.filter { $0.type == "colr" }
        let colrTransfer = colours.compactMap { try? colourTransfer($0, bytes) }.first
        if let colrTransfer {
            if colrTransfer != 2 { transfer = colrTransfer }
            spsRead = true
        }
        if spsRead {
            info.transferCharacteristics = transfer ?? VideoUsability.unspecified
            info.statedTransferCharacteristics = info.transferCharacteristics
        }
        let dolby = children.first { ["dvcC", "dvvC", "dvwC"].contains($0.type) }
        if let dolby, info.codec != nil {
            var recordReader = dolby.reader(bytes)
            let record = try recordReader.readArray(dolby.content.count)
            if let config = try? DolbyVisionConfiguration(record: record) {
                info.transferCharacteristics = config.transferCharacteristics(otherwise: info.transferCharacteristics)
                info.dolbyVision = config
                if entry.type.hasPrefix("dv") {
                    info.codec = config.codec(sampleEntry: entry.type)  // Dolby Vision only (profile 5)
                } else {
                    info.supplementalCodec = config.supplementalCodec(
                        baseSampleEntry: entry.type, transferCharacteristics: transfer)
                }
            }
        }
    }

    /// The first SPS NAL unit of an hvcC's arrays (the reader stands at numOfArrays), parsed; nil when there is none.
    private static func hevcSPS(_ config: inout ByteReader) throws(ProbeError) -> HEVCSequenceParameterSet? {
        let arrays = try config.readUInt8()
        for _ in 0..<arrays {
            let type = try config.readUInt8() & 0x3F
            let count = try config.readUInt16()
            for _ in 0..<count {
                let unit = try config.readArray(Int(try config.readUInt16()))
                if type == NALUnits.hevcSPS {
                    let rbsp = unit.withUnsafeBytes { NALUnits.rbsp($0) }
                    return try HEVCSequenceParameterSet(rbsp: rbsp)
                }
            }
        }
        return nil
    }

    /// transfer_characteristics of a `colr` box of colour type `nclx` (ISO/IEC 14496-12) or QuickTime's `nclc`;
    /// nil for ICC profiles.
    private static func colourTransfer(_ colr: MP4Box, _ bytes: UnsafeRawBufferPointer) throws(ProbeError) -> UInt8? {
        var reader = colr.reader(bytes)
        let colourType = try reader.readFourCC()
        guard colourType == "nclx" || colourType == "nclc" else { return nil }
        _ = try reader.readUInt16()  // colour_primaries
        let transfer = try reader.readUInt16()
        return transfer <= 255 ? UInt8(transfer) : nil
    }

    private static func readAudioEntry(
        _ entry: MP4Box, _ bytes: UnsafeRawBufferPointer, into info: inout TrackInfo
    ) throws(ProbeError) {
        var reader = entry.reader(bytes)
        try reader.skip(8)  // reserved, data_reference_index
        let version = try reader.readUInt16()
        try reader.skip(6)
        let channels = Int(try reader.readUInt16())
        try reader.skip(6)  // samplesize, pre_defined, reserved
        let sampleRate = Int(try reader.readUInt32() >> 16)
        info.channelCount = channels > 0 ? channels : nil
        info.sampleRate = sampleRate > 0 ? sampleRate : nil
        let extra = version == 1 ? 16 : version == 2 ? 36 : 0
        let children = try entry.children(in: bytes, skip: 28 + extra)
        switch entry.type {
        case "mp4a":
            info.codec = "mp4a.40.2"
            if let esds = children.first("esds") { try ElementaryStreamDescriptor.read(esds, bytes, into: &info) }
        case "ac-3":
            info.codec = entry.type
            if let dac3 = children.first("dac3") { try AC3Header.readDAC3(dac3, bytes, into: &info) }
        case "ec-3":
            info.codec = entry.type
            if let dec3 = children.first("dec3") { try AC3Header.readDEC3(dec3, bytes, into: &info) }
        case "ac-4", "fLaC", "alac":
            info.codec = entry.type
        case "Opus":
            info.codec = "opus"
        case ".mp3":
            info.codec = MPEGAudioHeader.codec
        default:
            info.codec = entry.type
        }
    }
}
