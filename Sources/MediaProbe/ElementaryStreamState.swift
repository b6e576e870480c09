/// What the transport stream probe learns about one elementary stream while reading its PES packets.
struct ElementaryStreamState {
    enum Format {
        case h264, hevc, aacADTS, mpegAudio, ac3, id3, other
    }

    let pid: Int
    let format: Format
    var kind: TrackKind {
        switch format {
        case .h264, .hevc: .video
        case .aacADTS, .mpegAudio, .ac3: .audio
        case .id3, .other: .data
        }
    }
    var codec: String?
    var width: Int?
    var height: Int?
    var frameRate: Double?
    /// Video: transfer_characteristics of the SPS VUI (nil when it states none), once an SPS was read.
    var transferCharacteristics: UInt8?
    /// Video: the PMT's DOVI descriptor.
    var dolbyVision: DolbyVisionConfiguration?
    var sampleRate: Int?
    var channelCount: Int?

    /// Presentation timestamps of the PES packets, unwrapped around the segment's first PTS.
    var presentationTimes: [Int64] = []
    var pesCount = 0
    /// Whether the first PES carried a random access picture (video only).
    var firstPESIsKeyframe = false
    /// Video: the PES packets that carry a random access picture, and where their packets are.
    var keyframes: [KeyframeRange] = []
    /// Audio: samples carried by the PES with the highest PTS, and that PTS.
    var lastAudioPES: (pts: Int64, samples: Int)?
    /// Video: the caption channels and the preferred transfer of the first GOP's SEI (bounded, see `CaptionSEI`).
    var captions = CaptionSEI()
    /// Video: the next keyframe ended the first GOP, or the SEI budget is spent.
    private var captionScanDone = false

    /// The most keyframes recorded per segment (an all-intra 120 fps stream fills 2 s with 240).
    static let maximumKeyframes = 1024

    init(pid: Int, streamType: UInt8) {
        self.pid = pid
        switch streamType {
        case 0x1B: format = .h264
        case 0x24: format = .hevc
        case 0x0F: format = .aacADTS
        case 0x03, 0x04: format = .mpegAudio
        case 0x81, 0x87: format = .ac3  // ATSC AC-3, E-AC-3 (ProgramTables maps DVB's 0x06 + descriptor here)
        case 0x15: format = .id3
        default: format = .other
        }
    }

    /// Where one PES packet's transport packets lie in the segment.
    struct PacketRun {
        /// Offset of its first packet.
        var start: Int
        /// One past its last packet.
        var end: Int
        /// The segment's PAT and PMT came before `start`, after this PID's previous PES.
        var followsProgramTables: Bool
    }

    /// Takes in one PES payload (the elementary stream bytes), its unwrapped PTS and where its packets are.
    mutating func consume(payload: UnsafeRawBufferPointer, pts: Int64?, packets: PacketRun) {
        defer { pesCount += 1 }
        if let pts { presentationTimes.append(pts) }
        switch format {
        case .h264, .hevc:
            consumeVideo(payload)
            let keyframe =
                pesCount == 0
                ? firstPESIsKeyframe
                : NALUnits.firstSliceIsRandomAccess(in: payload, hevc: format == .hevc) == true
            if keyframe, keyframes.count < Self.maximumKeyframes {
                keyframes.append(
                    KeyframeRange(
                        start: packets.start, end: packets.end, followsProgramTables: packets.followsProgramTables,
                        presentationTime: MediaTime(ticks: MPEGTimestamp.wrapped(pts ?? 0), timescale: 90000)))
            }
        case .aacADTS, .mpegAudio, .ac3: consumeAudio(payload, pts: pts)
        case .id3, .other: break
        }
    }

    private mutating func consumeVideo(_ payload: UnsafeRawBufferPointer) {
        if !captionScanDone {
            let keyframe = captions.consumeAnnexB(payload, hevc: format == .hevc)
            captionScanDone = captions.isExhausted || (pesCount > 0 && keyframe == true)
        }
        let needsSPS = codec == nil
        guard pesCount == 0 || needsSPS else { return }
        for unit in NALUnits.annexBUnits(in: payload) {
            let header = payload[unit.lowerBound]
            if format == .h264 {
                let type = NALUnits.h264Type(header)
                if pesCount == 0, type == NALUnits.h264IDR { firstPESIsKeyframe = true }
                if needsSPS, codec == nil, type == NALUnits.h264SPS,
                    let sps = try? H264SequenceParameterSet(
                        rbsp: NALUnits.rbsp(UnsafeRawBufferPointer(rebasing: payload[unit])))
                {
                    codec = sps.codec()
                    width = sps.width
                    height = sps.height
                    frameRate = sps.frameRate
                    transferCharacteristics = sps.transferCharacteristics
                }
            } else {
                let type = NALUnits.hevcType(header)
                if pesCount == 0, NALUnits.hevcIRAP.contains(type) { firstPESIsKeyframe = true }
                if needsSPS, codec == nil, type == NALUnits.hevcSPS,
                    let sps = try? HEVCSequenceParameterSet(
                        rbsp: NALUnits.rbsp(UnsafeRawBufferPointer(rebasing: payload[unit])))
                {
                    codec = sps.codec()
                    width = sps.width
                    height = sps.height
                    frameRate = sps.frameRate
                    transferCharacteristics = sps.transferCharacteristics
                }
            }
        }
    }

    private mutating func consumeAudio(_ payload: UnsafeRawBufferPointer, pts: Int64?) {
        var samples = 0
        if format == .aacADTS {
            guard let scan = try? ADTSHeader.scan(payload, allowTruncatedLast: true) else { return }
            samples = scan.samples
            if codec == nil {
                codec = scan.first.codec
                sampleRate = scan.first.sampleRate
                let configuration = scan.first.channelConfiguration
                channelCount = configuration == 0 ? nil : configuration == 7 ? 8 : configuration
            }
        } else if format == .ac3 {
            guard let scan = AC3Header.scan(payload) else { return }
            samples = scan.samples
            if codec == nil {
                codec = scan.first.codec
                sampleRate = scan.first.sampleRate
                channelCount = scan.first.channelCount
            }
        } else {
            guard let scan = try? MPEGAudioHeader.scan(payload) else { return }
            samples = scan.samples
            if codec == nil {
                codec = MPEGAudioHeader.codec
                sampleRate = scan.first.sampleRate
                channelCount = scan.first.channelCount
            }
        }
        if let pts, lastAudioPES.map({ pts >= $0.pts }) ?? true { lastAudioPES = (pts, samples) }
    }

    /// The most common positive difference between consecutive presentation times (the frame duration).
    var typicalFrameDelta: Int64? {
        let sorted = presentationTimes.sorted()
        var counts: [Int64: Int] = [:]
        for (previous, next) in zip(sorted, sorted.dropFirst()) where next > previous {
            counts[next - previous, default: 0] += 1
        }
        return counts.max { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) }?.key
    }

    /// The track facts for `SegmentInfo.tracks`.
    var trackInfo: TrackInfo {
        var rate = frameRate
        // The PTS deltas decide when the VUI states no rate or one more than 2x off what the frames show.
        if kind == .video, let delta = typicalFrameDelta {
            let measured = 90000 / Double(delta)
            if rate.map({ $0 > measured * 2 || $0 * 2 < measured }) ?? true { rate = measured }
        }
        let baseEntry = format == .hevc ? "hvc1" : "avc1"
        // A Dolby Vision stream without a compatible base layer (profile 5) is named by its Dolby Vision codec.
        let dolbyOnly = dolbyVision.flatMap { config in
            kind == .video && config.compatibilityID == 0 && codec != nil
                ? DolbyVisionConfiguration.sampleEntry(forBase: baseEntry).map(config.codec) : nil
        }
        // The codec of a video stream comes from its SPS: without one, no transfer is known.
        let stated = kind == .video && codec != nil ? transferCharacteristics ?? VideoUsability.unspecified : nil
        return TrackInfo(
            kind: kind, codec: dolbyOnly ?? codec, width: width, height: height, frameRate: rate,
            sampleRate: sampleRate, channelCount: channelCount, trackID: pid, timescale: 90000,
            transferCharacteristics: stated.map {
                VideoUsability.shown(
                    stated: $0, preferred: captions.preferredTransferCharacteristics, dolbyVision: dolbyVision)
            },
            supplementalCodec: kind == .video && codec != nil
                ? dolbyVision?.supplementalCodec(
                    baseSampleEntry: baseEntry, transferCharacteristics: transferCharacteristics) : nil,
            statedTransferCharacteristics: stated, dolbyVision: stated == nil ? nil : dolbyVision)
    }
}
