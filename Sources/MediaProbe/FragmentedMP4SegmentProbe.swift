/// Probes an fMP4 media segment: moof/traf (tfhd, tfdt, trun) summed over all movie fragments.
enum FragmentedMP4SegmentProbe {
    /// What the probe adds up for one track over all `traf` boxes of the segment.
    private struct TrackTotals {
        var startTime: Int64?
        var firstSampleFlags: UInt32?
        var firstSampleDuration: Int64?
        var duration: Int64 = 0
        var sampleCount: Int64 = 0
        /// Video: byte ranges of the first samples, for the caption scan.
        var sampleRanges: [Range<Int>] = []
        /// Video: the sync samples, each from its moof to the end of its data.
        var keyframes: [KeyframeRange] = []
        /// Video: a sync sample's data could not be located (sizes missing), so no later one is recorded.
        var keyframesStopped = false
    }

    /// The most keyframes recorded per segment (as for MPEG-TS).
    static let maximumKeyframes = 1024

    /// Whether sample flags (ISO/IEC 14496-12 8.8.3.1) mark a sync sample: `sample_depends_on` 2 (depends on no
    /// other), or `sample_is_non_sync_sample` 0 unless `sample_depends_on` is 1. Absent flags read as non-sync.
    static func isSync(_ flags: UInt32?) -> Bool {
        let flags = flags ?? 0x0101_0000
        let dependsOn = (flags >> 24) & 3
        let nonSync = flags & 0x0001_0000 != 0
        return dependsOn == 2 || (!nonSync && dependsOn != 1)
    }

    static func probe(
        _ bytes: UnsafeRawBufferPointer, initSection: InitSectionInfo?
    ) throws(ProbeError) -> SegmentInfo {
        var unused: [FragmentedMP4Sample]?
        return try probe(bytes, initSection: initSection, samples: &unused)
    }

    /// The most samples listed by `MediaProbe.fragmentedMP4Samples` per segment.
    static let maximumListedSamples: Int64 = 100_000

    /// Probes the segment and, when `samples` is non-nil, lists every sample of every track fragment into it.
    static func probe(
        _ bytes: UnsafeRawBufferPointer, initSection: InitSectionInfo?, samples: inout [FragmentedMP4Sample]?
    ) throws(ProbeError) -> SegmentInfo {
        let top = try MP4Box.children(of: 0..<bytes.count, in: bytes, context: "fMP4 segment", topLevel: true)
        let initInfo: InitSectionInfo
        if let initSection {
            initInfo = initSection
        } else if top.first("moov") != nil {
            initInfo = try FragmentedMP4InitProbe.probe(bytes, topLevel: top)
        } else {
            throw ProbeError("fMP4 segment: needs the rendition's init section (track timescales) to be probed")
        }
        let moofs = top.filter { $0.type == "moof" }
        guard !moofs.isEmpty else {
            throw ProbeError("fMP4 segment: no moof box (top-level boxes: \(top.map(\.type).joined(separator: ", ")))")
        }
        guard top.first("mdat") != nil else { throw ProbeError("fMP4 segment: no mdat box") }

        var totals: [Int: TrackTotals] = [:]
        var order: [Int] = []
        let videoTrackIDs = Set(initInfo.tracks.filter { $0.kind == .video }.map(\.trackID))
        for moof in moofs {
            // Without base_data_offset or default-base-is-moof, a traf's data follows the previous traf's.
            var previousDataEnd: Int64?
            for traf in try moof.children(in: bytes) where traf.type == "traf" {
                let (trackID, fragment) = try readTrackFragment(
                    traf, moof: moof, bytes, initInfo: initInfo, videoTrackIDs: videoTrackIDs,
                    previousDataEnd: previousDataEnd, listSamples: samples != nil)
                if samples != nil { samples?.append(contentsOf: fragment.samples) }
                previousDataEnd = fragment.dataEnd
                if totals[trackID] == nil { order.append(trackID) }
                var track = totals[trackID, default: TrackTotals()]
                track.sampleRanges += fragment.sampleRanges.prefix(
                    max(0, CaptionSEI.maximumSEIUnits - track.sampleRanges.count))
                if !track.keyframesStopped {
                    track.keyframes += fragment.keyframes.prefix(max(0, maximumKeyframes - track.keyframes.count))
                    track.keyframesStopped = fragment.keyframesStopped
                }
                if track.startTime == nil {
                    track.startTime = fragment.startTime
                    track.firstSampleFlags = fragment.firstSampleFlags
                    track.firstSampleDuration = fragment.firstSampleDuration
                }
                let (sum, overflow) = track.duration.addingReportingOverflow(fragment.duration)
                guard !overflow else {
                    throw ProbeError.implausibleTiming("fMP4 segment: track \(trackID) duration overflows 64 bits")
                }
                track.duration = sum
                track.sampleCount += fragment.sampleCount
                totals[trackID] = track
            }
        }
        var present = initInfo.tracks.filter { totals[$0.trackID] != nil }
        for index in present.indices where present[index].kind == .video && present[index].frameRate == nil {
            if let duration = totals[present[index].trackID]?.firstSampleDuration, duration > 0 {
                present[index].frameRate = Double(present[index].timescale) / Double(duration)
            }
        }
        // Subtitle tracks (IMSC1 `stpp`, `wvtt`) lead only in a segment without video or audio; their sample
        // durations come from trun or trex like audio's.
        let primary =
            present.first { $0.kind == .video } ?? present.first { $0.kind == .audio }
            ?? present.first { $0.kind == .subtitles }
        guard let primary, let track = totals[primary.trackID], let startTime = track.startTime else {
            throw ProbeError(
                "fMP4 segment: no video, audio or subtitle track fragment found (track IDs in segment: "
                    + "\(order.map(String.init).joined(separator: ", ")); in init section: "
                    + "\(initInfo.tracks.map { String($0.trackID) }.joined(separator: ", ")))")
        }
        let keyframe = primary.kind == .video ? isSync(track.firstSampleFlags) : true
        var info = SegmentInfo(
            container: .fragmentedMP4Segment, tracks: present,
            startTime: MediaTime(ticks: startTime, timescale: primary.timescale),
            duration: MediaTime(ticks: track.duration, timescale: primary.timescale),
            startsWithKeyframe: keyframe, byteCount: bytes.count)
        if primary.kind == .video {
            info.keyframes = track.keyframes
        }
        // A Dolby Vision sample entry (`dvh1`/`dvhe` over HEVC, `dva1`/`dvav` over H.264) carries the same NAL units.
        if primary.kind == .video, let codec = primary.codec,
            let hevc = [
                "avc1": false, "avc3": false, "hvc1": true, "hev1": true, "dva1": false, "dvav": false, "dvh1": true,
                "dvhe": true,
            ][String(codec.prefix(4))]
        {
            var sei = scanSEI(
                samples: track.sampleRanges, bytes, hevc: hevc,
                lengthSize: initInfo.nalUnitLengthSizes[primary.trackID] ?? 4)
            info.closedCaptions = sei.finish()
            // An alternative_transfer_characteristics SEI is in the samples, which the init section cannot tell; a
            // Dolby Vision base layer's compatibility decides over it: the same rule as MPEG-TS's.
            if let index = info.tracks.firstIndex(where: { $0.trackID == primary.trackID }),
                let stated = info.tracks[index].statedTransferCharacteristics
            {
                info.tracks[index].transferCharacteristics = VideoUsability.shown(
                    stated: stated, preferred: sei.preferredTransferCharacteristics,
                    dolbyVision: info.tracks[index].dolbyVision)
            }
        }
        return info
    }

    /// Where a sample's bytes are: `offset` bytes after `runStart`, `size` long; nil when unknown or out of range.
    private static func sampleRange(runStart: Int64?, offset: Int64?, size: Int64?) -> Range<Int>? {
        guard let runStart, let offset, let size, size >= 0 else { return nil }
        let (start, startOverflow) = runStart.addingReportingOverflow(offset)
        let (end, endOverflow) = start.addingReportingOverflow(size)
        guard !startOverflow, !endOverflow, start >= 0, end <= Int64(Int32.max) else { return nil }
        return Int(start)..<Int(end)
    }

    /// The SEI of the samples up to the second keyframe (see `CaptionSEI`): caption channels, preferred transfer.
    private static func scanSEI(
        samples: [Range<Int>], _ bytes: UnsafeRawBufferPointer, hevc: Bool, lengthSize: Int
    ) -> CaptionSEI {
        var captions = CaptionSEI()
        for (index, range) in samples.enumerated() {
            let keyframe = captions.consumeLengthPrefixed(
                UnsafeRawBufferPointer(rebasing: bytes[range]), lengthSize: lengthSize, hevc: hevc)
            if captions.isExhausted || (index > 0 && keyframe == true) { break }
        }
        return captions
    }

    private struct FragmentFacts {
        var startTime: Int64?
        var firstSampleFlags: UInt32?
        var firstSampleDuration: Int64?
        var duration: Int64 = 0
        var sampleCount: Int64 = 0
        /// Video only: where the first samples' bytes are (at most `CaptionSEI.maximumSEIUnits`).
        var sampleRanges: [Range<Int>] = []
        /// Video only: the sync samples (at most `maximumKeyframes`).
        var keyframes: [KeyframeRange] = []
        /// Video only: a sync sample's data could not be located (no sample sizes), so later ones are not recorded.
        var keyframesStopped = false
        /// The end of the last trun's sample data, when known: the implicit base of the next traf of the moof.
        var dataEnd: Int64?
        /// Every sample, when listed.
        var samples: [FragmentedMP4Sample] = []
    }

    private static func readTrackFragment(
        _ traf: MP4Box, moof: MP4Box, _ bytes: UnsafeRawBufferPointer, initInfo: InitSectionInfo,
        videoTrackIDs: Set<Int>, previousDataEnd: Int64?, listSamples: Bool = false
    ) throws(ProbeError) -> (Int, FragmentFacts) {
        let children = try traf.children(in: bytes)
        var tfhd = try children.required("tfhd", in: "traf").reader(bytes)
        let tfhdFlags = try tfhd.readUInt32() & 0xFF_FFFF
        let trackID = Int(try tfhd.readUInt32())
        let trex = initInfo.fragmentDefaults[trackID]
        // ISO/IEC 14496-12 8.8.7.1: base_data_offset when present; else the moof when default-base-is-moof is set
        // or for the moof's first traf; else where the previous traf's data ended.
        var baseOffset = tfhdFlags & 0x02_0000 != 0 ? Int64(moof.start) : previousDataEnd ?? Int64(moof.start)
        if tfhdFlags & 0x01 != 0 {
            let base = try tfhd.readUInt64()
            baseOffset = base > UInt64(Int64.max) ? Int64.max : Int64(base)
        }
        if tfhdFlags & 0x02 != 0 { try tfhd.skip(4) }  // sample_description_index
        let defaultDuration = tfhdFlags & 0x08 != 0 ? try tfhd.readUInt32() : trex?.sampleDuration ?? 0
        let defaultSize = tfhdFlags & 0x10 != 0 ? try tfhd.readUInt32() : trex?.sampleSize
        let defaultFlags = tfhdFlags & 0x20 != 0 ? try tfhd.readUInt32() : trex?.sampleFlags

        var facts = FragmentFacts()
        let wantsSampleRanges = videoTrackIDs.contains(trackID)
        let timescale = initInfo.tracks.first { $0.trackID == trackID }?.timescale ?? 1
        /// Where the next trun's samples start when it has no data_offset: after the previous trun's.
        var nextDataStart: Int64? = baseOffset
        var decodeTime: Int64?
        if let tfdt = children.first("tfdt") {
            var reader = tfdt.reader(bytes)
            let version = try reader.readUInt8()
            try reader.skip(3)
            let time = version == 1 ? try reader.readUInt64() : UInt64(try reader.readUInt32())
            guard time <= UInt64(1) << 62 else {
                throw ProbeError("fMP4 segment: track \(trackID) tfdt baseMediaDecodeTime \(time) is out of range")
            }
            decodeTime = Int64(time)
        }
        for trun in children where trun.type == "trun" {
            var reader = trun.reader(bytes)
            let version = try reader.readUInt8()
            let flags = try reader.readUInt24()
            let sampleCount = Int64(try reader.readUInt32())
            let dataOffset = flags & 0x01 != 0 ? Int64(Int32(bitPattern: try reader.readUInt32())) : nil
            let firstSampleFlags = flags & 0x04 != 0 ? try reader.readUInt32() : nil
            let hasDuration = flags & 0x100 != 0
            let hasSize = flags & 0x200 != 0
            let hasFlags = flags & 0x400 != 0
            let hasCompositionOffset = flags & 0x800 != 0
            let recordSize = 4 * [hasDuration, hasSize, hasFlags, hasCompositionOffset].filter { $0 }.count
            guard sampleCount * Int64(recordSize) <= Int64(reader.remaining) else {
                throw ProbeError(
                    "fMP4 segment: track \(trackID) trun declares \(sampleCount) samples of \(recordSize) bytes "
                        + "but the box has only \(reader.remaining) bytes left")
            }
            let overflowError = ProbeError.implausibleTiming(
                "fMP4 segment: track \(trackID) trun durations or sizes overflow 64 bits")
            var totalSize: Int64 = 0
            var runStart = nextDataStart
            if let dataOffset {
                let (start, overflow) = baseOffset.addingReportingOverflow(dataOffset)
                runStart = overflow ? nil : start
            }
            let segmentSize = Int64(bytes.count)
            var keyframeError: ProbeError?
            /// Records a sync sample of a video track: from the moof to the end of its data, which must lie inside
            /// the segment. `offset`: where its data starts relative to `runStart`; nil when sizes are unknown.
            func noteKeyframe(offset: Int64?, size: Int64?, time: Int64) {
                guard wantsSampleRanges, !facts.keyframesStopped, facts.keyframes.count < maximumKeyframes else {
                    return
                }
                guard let runStart, let offset, let size else {
                    facts.keyframesStopped = true
                    return
                }
                let (start, startOverflow) = runStart.addingReportingOverflow(offset)
                let (end, endOverflow) = start.addingReportingOverflow(size)
                guard !startOverflow, !endOverflow, start >= 0, end <= segmentSize else {
                    // Thrown after the trun's own data check, which names a truncated segment more plainly.
                    let place = startOverflow || endOverflow ? "at an offset that overflows" : "at \(start)..\(end)"
                    keyframeError =
                        keyframeError
                        ?? ProbeError(
                            "fMP4 segment: track \(trackID) keyframe sample data \(place) runs past the segment's "
                                + "\(bytes.count) bytes")
                    facts.keyframesStopped = true
                    return
                }
                facts.keyframes.append(
                    KeyframeRange(
                        start: moof.start, end: Int(end), presentationTime: MediaTime(ticks: time, timescale: timescale)
                    ))
            }
            /// Records where a sample's bytes are, while they lie inside the segment.
            func noteSample(size: Int64) {
                guard wantsSampleRanges, facts.sampleRanges.count < CaptionSEI.maximumSEIUnits, let runStart,
                    (0...segmentSize).contains(runStart), (0...segmentSize).contains(totalSize),
                    (0...segmentSize).contains(size), runStart + totalSize + size <= segmentSize
                else { return }
                let start = Int(runStart + totalSize)
                facts.sampleRanges.append(start..<(start + Int(size)))
            }
            if recordSize == 0 {
                if facts.startTime == nil, sampleCount > 0, let decodeTime {
                    facts.startTime = decodeTime + facts.duration
                    facts.firstSampleFlags = firstSampleFlags ?? defaultFlags
                    facts.firstSampleDuration = Int64(defaultDuration)
                }
                let (duration, overflow) = sampleCount.multipliedReportingOverflow(by: Int64(defaultDuration))
                let (size, sizeOverflow) = sampleCount.multipliedReportingOverflow(by: Int64(defaultSize ?? 0))
                let (sum, sumOverflow) = facts.duration.addingReportingOverflow(duration)
                guard !overflow, !sizeOverflow, !sumOverflow else { throw overflowError }
                if wantsSampleRanges, let decodeTime {
                    let size = defaultSize.map { Int64($0) }
                    for index in 0..<min(sampleCount, Int64(maximumKeyframes))
                    where isSync(index == 0 ? firstSampleFlags ?? defaultFlags : defaultFlags) {
                        noteKeyframe(
                            offset: size.map { $0 * index }, size: size,
                            time: decodeTime &+ facts.duration &+ index &* Int64(defaultDuration))
                    }
                }
                if listSamples, let decodeTime {
                    guard sampleCount <= maximumListedSamples else {
                        throw ProbeError("fMP4 segment: track \(trackID) trun lists \(sampleCount) samples")
                    }
                    for index in 0..<sampleCount {
                        let size = defaultSize.map { Int64($0) }
                        let flags = index == 0 ? firstSampleFlags ?? defaultFlags : defaultFlags
                        facts.samples.append(
                            FragmentedMP4Sample(
                                trackID: trackID,
                                decodeTime: decodeTime &+ facts.duration &+ index &* Int64(defaultDuration),
                                duration: Int64(defaultDuration), compositionOffset: 0, flags: flags,
                                isSync: isSync(flags),
                                byteRange: sampleRange(runStart: runStart, offset: size.map { $0 * index }, size: size))
                        )
                    }
                }
                facts.duration = sum
                if let defaultSize {
                    for _ in 0..<min(sampleCount, Int64(CaptionSEI.maximumSEIUnits)) {
                        noteSample(size: Int64(defaultSize))
                        totalSize += Int64(defaultSize)
                    }
                }
                totalSize = size
            }
            let sizesKnown = hasSize || defaultSize != nil
            for index in 0..<(recordSize == 0 ? 0 : sampleCount) {
                let duration = hasDuration ? Int64(try reader.readUInt32()) : Int64(defaultDuration)
                let sampleSize = hasSize ? Int64(try reader.readUInt32()) : Int64(defaultSize ?? 0)
                if sizesKnown { noteSample(size: sampleSize) }
                let sampleOffset = totalSize
                totalSize += sampleSize
                let sampleFlags = hasFlags ? try reader.readUInt32() : nil
                let rawOffset = hasCompositionOffset ? try reader.readUInt32() : 0
                let compositionOffset = version == 0 ? Int64(rawOffset) : Int64(Int32(bitPattern: rawOffset))
                if wantsSampleRanges, let decodeTime,
                    isSync(index == 0 ? firstSampleFlags ?? sampleFlags ?? defaultFlags : sampleFlags ?? defaultFlags)
                {
                    noteKeyframe(
                        offset: sizesKnown ? sampleOffset : nil, size: sizesKnown ? sampleSize : nil,
                        time: decodeTime &+ facts.duration &+ compositionOffset)
                }
                if listSamples, let decodeTime {
                    guard facts.samples.count < maximumListedSamples else {
                        throw ProbeError("fMP4 segment: track \(trackID) has over \(maximumListedSamples) samples")
                    }
                    let flags =
                        index == 0 ? firstSampleFlags ?? sampleFlags ?? defaultFlags : sampleFlags ?? defaultFlags
                    facts.samples.append(
                        FragmentedMP4Sample(
                            trackID: trackID, decodeTime: decodeTime &+ facts.duration, duration: duration,
                            compositionOffset: compositionOffset, flags: flags, isSync: isSync(flags),
                            byteRange: sampleRange(
                                runStart: runStart, offset: sizesKnown ? sampleOffset : nil,
                                size: sizesKnown ? sampleSize : nil)))
                }
                if facts.startTime == nil, let decodeTime {
                    facts.startTime = decodeTime + facts.duration + compositionOffset
                    facts.firstSampleFlags =
                        index == 0
                        ? firstSampleFlags ?? sampleFlags ?? defaultFlags
                        : sampleFlags ?? defaultFlags
                    facts.firstSampleDuration = duration
                }
                let (sum, overflow) = facts.duration.addingReportingOverflow(duration)
                guard !overflow else { throw overflowError }
                facts.duration = sum
            }
            facts.sampleCount += sampleCount
            nextDataStart = nil
            facts.dataEnd = nil
            if let runStart, hasSize || defaultSize != nil {
                let (end, overflow) = runStart.addingReportingOverflow(totalSize)
                nextDataStart = overflow ? nil : end
                facts.dataEnd = nextDataStart
            }
            if let dataOffset, hasSize || defaultSize != nil {
                let (dataStart, startOverflow) = baseOffset.addingReportingOverflow(dataOffset)
                let (dataEnd, endOverflow) = dataStart.addingReportingOverflow(totalSize)
                guard !startOverflow, !endOverflow, dataStart >= 0, dataEnd <= Int64(bytes.count) else {
                    throw ProbeError(
                        "fMP4 segment: track \(trackID) sample data ends at byte \(dataEnd) but the segment has "
                            + "\(bytes.count) bytes (truncated?)")
                }
            }
            if let keyframeError { throw keyframeError }
        }
        if listSamples, let segmentEnd = Int64(exactly: bytes.count),
            facts.samples.contains(where: { $0.byteRange.map { Int64($0.upperBound) > segmentEnd } ?? false })
        {
            throw ProbeError("fMP4 segment: track \(trackID) sample data runs past the segment's \(bytes.count) bytes")
        }
        guard decodeTime != nil || facts.sampleCount == 0 else {
            throw ProbeError("fMP4 segment: track \(trackID) traf has no tfdt box (baseMediaDecodeTime)")
        }
        return (trackID, facts)
    }
}
