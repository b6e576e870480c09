import MediaProbe

/// Makes fMP4 filler segments that continue a rendition after its newest real segment: the segment's last keyframe
/// sample repeated and AAC silence, decodable with the rendition's init section (EXT-X-MAP) as it is.
///
/// What continues the real segment, so a player that plays through sees a frozen picture and hears silence:
/// - the tracks and track IDs are the init section's first video and first audio track (others get no samples);
/// - each track continues from that track's own end: its first sample's decode time (tfdt) is where the segment's
///   (or the previous filler's) last sample of that track ended, so decode times stay monotonic and neither track
///   has a hole (an encoder stopped mid-segment may flush audio ending half a second before its video), and it runs
///   to the slot's end: the slots lie on the timeline of the segment's video (its audio when it has none), the first
///   one starting where that track ended plus the PDT time elapsed since. A track whose end lies more than
///   `longestContinuationMilliseconds` before the slot's start (or at or past its end) starts with the slot instead;
///   a track whose timeline is that far from the video's keeps its own;
/// - the picture is the segment's last sync sample (H.264 `avc1`/`avc3` or HEVC `hvc1`/`hev1`) without its SEI
///   (HEVC: with an end of sequence NAL unit after it, so each repeat starts a new coded video sequence), repeated about once per second with that sample's composition offset, every sample a sync sample;
/// - the silence has the init section's AAC object type (Main or LC), sampling rate and channel count, 1024 samples
///   per frame, on the audio track's frame grid;
/// - mfhd's sequence_number is the caller's (the origin passes one derived from the MSN).
///
/// ```swift
/// var filler = try FragmentedMP4GapFiller(initSection: initBytes, after: lastSegmentBytes)  // in slot order:
/// let first = filler.segment(elapsedMilliseconds: 0, durationMilliseconds: 2000, sequenceNumber: 12)
/// let second = filler.segment(elapsedMilliseconds: 2000, durationMilliseconds: 2000, sequenceNumber: 13)
/// ```
public struct FragmentedMP4GapFiller: Sendable {
    /// One track of the filler.
    struct Track: Sendable {
        var trackID: UInt32
        var timescale: Int64
        /// Where the segment's last sample of this track ended (decode time, track timescale).
        var end: Int64
        /// Where the slots' timeline starts on this track's (decode time): where the segment's video ended (its
        /// audio when it has no video), in this track's timescale.
        var origin: Int64
        /// Where the next sample of this track is due: the end of the last one read or written.
        var next: Int64
    }

    /// The video track and its repeated sample (length-prefixed NAL units, SEI removed), and that sample's
    /// composition offset.
    private var video: (track: Track, sample: [UInt8], compositionOffset: Int64)?
    /// The audio track, one raw AAC frame of silence, and how many ticks of the track one frame lasts.
    private var audio: (track: Track, frame: [UInt8], frameTicks: Int64)?
    /// The RFC 6381 codec strings of the filler's tracks (video first), as the init section gives them.
    public let codecs: [String]

    /// Reads what the filler needs from the rendition's init section and its newest real segment.
    /// - Throws: `GapFillerError` when the bytes are not fMP4 MediaProbe can read, the video is not H.264 or HEVC or
    ///   the segment has no sync sample with known bytes, or the audio is not AAC Main or LC with a silent frame.
    public init(initSection: UnsafeRawBufferPointer, after segment: UnsafeRawBufferPointer) throws(GapFillerError) {
        let initInfo: InitSectionInfo
        let samples: [FragmentedMP4Sample]
        do {
            initInfo = try MediaProbe.probeInitSection(initSection)
            samples = try MediaProbe.fragmentedMP4Samples(segment, initSection: initInfo)
        } catch {
            throw GapFillerError("the newest segment is not fMP4 the filler can read: \(error.message)")
        }
        let videoTrack = initInfo.tracks.first { $0.kind == .video }
        let audioTrack = initInfo.tracks.first { $0.kind == .audio }
        guard videoTrack != nil || audioTrack != nil else {
            throw GapFillerError("the init section has no video or audio track")
        }
        func track(_ info: TrackInfo) throws(GapFillerError) -> Track {
            let own = samples.filter { $0.trackID == info.trackID }
            guard let last = own.max(by: { $0.decodeTime < $1.decodeTime }) else {
                throw GapFillerError("the newest segment has no sample of track \(info.trackID)")
            }
            let (end, overflow) = last.decodeTime.addingReportingOverflow(last.duration)
            guard !overflow, end >= 0, info.timescale > 0, info.timescale <= UInt32.max else {
                throw GapFillerError("track \(info.trackID)'s decode time \(last.decodeTime) is out of range")
            }
            return Track(trackID: UInt32(info.trackID), timescale: info.timescale, end: end, origin: end, next: end)
        }

        var codecs: [String] = []
        if let info = videoTrack {
            let entry = String((info.codec ?? "").prefix(4))
            guard let hevc = ["avc1": false, "avc3": false, "hvc1": true, "hev1": true][entry] else {
                throw GapFillerError("video codec \(info.codec ?? "unknown") is not H.264 or HEVC")
            }
            let keyframe = samples.last { $0.trackID == info.trackID && $0.isSync && $0.byteRange != nil }
            guard let keyframe, let range = keyframe.byteRange else {
                throw GapFillerError("no video sync sample with known bytes in the segment")
            }
            let lengthSize = initInfo.nalUnitLengthSizes[info.trackID] ?? 4
            var sample = Self.withoutSEI(
                Array(UnsafeRawBufferPointer(rebasing: segment[range])), lengthSize: lengthSize, hevc: hevc)
            if hevc {
                // An end of sequence after each repeated picture: see `HEVCKeyframe.endOfSequence`.
                let length = HEVCKeyframe.endOfSequence.count
                sample += (0..<lengthSize).map { UInt8(truncatingIfNeeded: length >> (8 * (lengthSize - 1 - $0))) }
                sample += HEVCKeyframe.endOfSequence
            }
            video = (try track(info), sample, keyframe.compositionOffset)
            codecs.append(info.codec ?? entry)
        } else {
            video = nil
        }
        if let info = audioTrack {
            guard let codec = info.codec, codec == "mp4a.40.2" || codec == "mp4a.40.1" else {
                throw GapFillerError("audio codec \(info.codec ?? "unknown") is not AAC Main or LC")
            }
            guard let sampleRate = info.sampleRate, let index = ADTSHeader.sampleRates.firstIndex(of: sampleRate),
                let channels = info.channelCount
            else {
                throw GapFillerError("the init section's AAC has no standard sampling rate or no channel count")
            }
            let silence = try SilentAACFrame(
                audioObjectType: codec == "mp4a.40.1" ? 1 : 2, samplingFrequencyIndex: index,
                channelConfiguration: channels == 8 ? 7 : channels)
            let frameTicks = 1024 * info.timescale / Int64(sampleRate)
            guard frameTicks > 0 else { throw GapFillerError("the audio timescale is too small for AAC frames") }
            audio = (try track(info), Array(silence.bytes.dropFirst(7)), frameTicks)
            codecs.append(codec)
        } else {
            audio = nil
        }
        self.codecs = codecs
        // The slots follow the video: the audio's slot timeline starts where the video ended, on the audio's clock.
        if let reference = video?.track, let track = audio?.track {
            audio?.track.origin = Self.origin(of: track, following: reference)
        }
    }

    /// Where `reference`'s end falls on `track`'s timeline, when within `longestContinuationMilliseconds` of
    /// `track`'s end; else `track`'s own end (the two timelines are not related closely enough to follow).
    static func origin(of track: Track, following reference: Track) -> Int64 {
        let (seconds, rest) = reference.end.quotientAndRemainder(dividingBy: reference.timescale)
        // rest < reference.timescale and both timescales are below 2^32: the product fits in 64 unsigned bits.
        let fraction = UInt64(rest) * UInt64(track.timescale) / UInt64(reference.timescale)
        let converted = seconds &* track.timescale &+ Int64(fraction)
        let lag = converted &- track.end
        let limit = ticks(longestContinuationMilliseconds, track.timescale)
        return lag >= -limit && lag <= limit ? converted : track.end
    }

    /// `init(initSection:after:)` for arrays.
    public init(initSection: [UInt8], after segment: [UInt8]) throws(GapFillerError) {
        let result = initSection.withUnsafeBytes { initBytes in
            segment.withUnsafeBytes { segmentBytes in
                Result { () throws(GapFillerError) in
                    try FragmentedMP4GapFiller(initSection: initBytes, after: segmentBytes)
                }
            }
        }
        self = try result.get()
    }

    /// The filler segment (styp, moof, mdat) for a slot starting `elapsedMilliseconds` after the real segment's end
    /// (its video's) and lasting `durationMilliseconds`. Ask for the slots in order.
    ///
    /// Each track's samples run from where that track ended (the segment's or the previous filler's last sample)
    /// to the slot's end, `origin + (elapsed + duration) × timescale / 1000` (audio: whole AAC frames, the last one
    /// starting before it); a track that ended more than `longestContinuationMilliseconds` before the slot's start
    /// starts at `origin + elapsed × timescale / 1000`. So fillers of consecutive slots continue each other exactly.
    /// - Parameters:
    ///   - elapsedMilliseconds: PDT time from the real segment's end to the slot's start (0 for the slot right after).
    ///   - durationMilliseconds: the slot's EXTINF, at least 1.
    ///   - sequenceNumber: mfhd's sequence_number.
    public mutating func segment(
        elapsedMilliseconds: Int64, durationMilliseconds: Int64, sequenceNumber: UInt32
    ) -> [UInt8] {
        // Decode times are modular (tfdt is a 64-bit counter): the arithmetic on them wraps rather than traps, so a
        // timeline far from zero still gives the right differences.
        let elapsed = max(0, elapsedMilliseconds)
        let duration = min(max(1, durationMilliseconds), Self.longestSlotMilliseconds)
        var runs: [(trackID: UInt32, baseTime: Int64, samples: [(duration: Int64, bytes: [UInt8])], offset: Int64)] =
            []
        /// Where `track`'s samples start in this slot and how long they run to its end (in its timescale).
        func span(_ track: Track) -> (start: Int64, length: Int64) {
            let slotStart = track.origin &+ Self.ticks(elapsed, track.timescale)
            let slotEnd = track.origin &+ Self.ticks(elapsed &+ duration, track.timescale)
            let slotLength = max(0, slotEnd &- slotStart)
            let offset = track.next &- slotStart
            let limit = Self.ticks(Self.longestContinuationMilliseconds, track.timescale)
            return offset >= -limit && offset < slotLength
                ? (track.next, slotLength &- offset) : (slotStart, slotLength)
        }
        if let video {
            let (start, total) = span(video.track)
            // One picture a second: `total` split into `count` durations that differ by at most one tick.
            let count = max(1, (total * 1000 / video.track.timescale + 999) / 1000)
            let (share, extra) = total.quotientAndRemainder(dividingBy: count)
            let samples = (0..<count).map { index in
                (duration: max(share + (index < extra ? 1 : 0), 1), bytes: video.sample)
            }
            runs.append((video.track.trackID, start, samples, video.compositionOffset))
            self.video?.track.next = start &+ samples.reduce(0) { $0 + $1.duration }
        }
        if let audio {
            let (start, total) = span(audio.track)
            let count = max(1, (total + audio.frameTicks - 1) / audio.frameTicks)
            let samples = (0..<count).map { _ in (duration: audio.frameTicks, bytes: audio.frame) }
            runs.append((audio.track.trackID, start, samples, 0))
            self.audio?.track.next = start &+ count &* audio.frameTicks
        }

        var styp = Box("styp")
        styp.append(Array("msdh".utf8))
        styp.append(UInt32(0))
        styp.append(Array("msdhmsix".utf8))

        // The moof's size does not depend on the data offsets: write it once with zeros to learn it.
        func moof(dataOffsets: [Int64]) -> [UInt8] {
            var moof = Box("moof")
            var mfhd = Box("mfhd")
            mfhd.append(UInt32(0))
            mfhd.append(sequenceNumber)
            moof.append(mfhd.bytes)
            for (index, run) in runs.enumerated() {
                var traf = Box("traf")
                var tfhd = Box("tfhd")
                tfhd.append(UInt32(0x02_0000))  // default-base-is-moof
                tfhd.append(run.trackID)
                traf.append(tfhd.bytes)
                var tfdt = Box("tfdt")
                tfdt.append(UInt32(1 << 24))  // version 1: 64-bit baseMediaDecodeTime
                tfdt.append(UInt64(max(0, run.baseTime)))
                traf.append(tfdt.bytes)
                var trun = Box("trun")
                let hasOffset = run.offset != 0
                // data-offset, sample duration, size and flags, and composition offsets when any.
                let flags: UInt32 = 0x01 | 0x100 | 0x200 | 0x400 | (hasOffset ? 0x800 : 0)
                trun.append(UInt32(run.offset < 0 ? 1 << 24 : 0) | flags)
                trun.append(UInt32(run.samples.count))
                trun.append(UInt32(truncatingIfNeeded: dataOffsets[index]))
                for sample in run.samples {
                    trun.append(UInt32(truncatingIfNeeded: sample.duration))
                    trun.append(UInt32(sample.bytes.count))
                    trun.append(UInt32(0x0200_0000))  // sample_depends_on 2: a sync sample
                    if hasOffset { trun.append(UInt32(truncatingIfNeeded: run.offset)) }
                }
                traf.append(trun.bytes)
                moof.append(traf.bytes)
            }
            return moof.bytes
        }
        let moofSize = Int64(moof(dataOffsets: runs.map { _ in 0 }).count)
        var offsets: [Int64] = []
        var position = moofSize + 8  // the mdat header
        for run in runs {
            offsets.append(position)
            position += Int64(run.samples.reduce(0) { $0 + $1.bytes.count })
        }
        var mdat = Box("mdat")
        for run in runs {
            for sample in run.samples { mdat.append(sample.bytes) }
        }
        return styp.bytes + moof(dataOffsets: offsets) + mdat.bytes
    }

    // MARK: - Helpers

    /// `milliseconds` in ticks of `timescale`, rounded to the nearest tick.
    /// Wraps (as decode times do) when the product passes 64 bits; `milliseconds` is not negative.
    static func ticks(_ milliseconds: Int64, _ timescale: Int64) -> Int64 {
        let (seconds, rest) = milliseconds.quotientAndRemainder(dividingBy: 1000)
        return seconds &* timescale &+ (rest * timescale + 500) / 1000
    }

    /// The longest slot a filler covers (ten minutes): EXTINF is bounded far below it by the target duration.
    static let longestSlotMilliseconds: Int64 = 600_000

    /// How far before a slot's start a filler continues a track from where it ended (4 s). An encoder stopped
    /// mid-segment flushes tracks that end apart (ffmpeg's audio about 0.6 s before its video on SIGTERM; an x264
    /// lookahead flush can reach 1.6 s), and renditions' short last segments end apart by up to one segment: those
    /// are continued. A track that ended further back is not on the slot's timeline (the slot is far along it):
    /// it starts with the slot, as a discontinuity would.
    public static let longestContinuationMilliseconds: Int64 = 4000

    /// The length-prefixed NAL units of `sample` without SEI (H.264 type 6; HEVC prefix and suffix SEI, 39 and 40).
    /// Returns the sample as it is when its NAL units do not parse.
    static func withoutSEI(_ sample: [UInt8], lengthSize: Int, hevc: Bool) -> [UInt8] {
        var output: [UInt8] = []
        var offset = 0
        while offset < sample.count {
            guard offset + lengthSize <= sample.count else { return sample }
            let length = sample[offset..<(offset + lengthSize)].reduce(0) { $0 << 8 | Int($1) }
            let unit = (offset + lengthSize)..<(offset + lengthSize + length)
            guard length > 0, unit.upperBound <= sample.count else { return sample }
            let header = sample[unit.lowerBound]
            let isSEI = hevc ? [39, 40].contains(header >> 1 & 0x3F) : header & 0x1F == 6
            if !isSEI { output += sample[offset..<unit.upperBound] }
            offset = unit.upperBound
        }
        return output.isEmpty ? sample : output
    }
}

/// An ISO BMFF box being written: its type, then content; `bytes` prefixes the size.
private struct Box {
    private var content: [UInt8] = []
    private let type: String

    init(_ type: String) { self.type = type }

    mutating func append(_ bytes: [UInt8]) { content += bytes }
    mutating func append(_ value: UInt32) {
        content += (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) }
    }
    mutating func append(_ value: UInt64) {
        content += (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }

    var bytes: [UInt8] {
        let size = UInt32(8 + content.count)
        return (0..<4).map { UInt8(truncatingIfNeeded: size >> (24 - 8 * $0)) } + Array(type.utf8) + content
    }
}
