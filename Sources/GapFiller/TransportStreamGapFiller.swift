import MPEGTSWriter
import MediaProbe

/// Makes MPEG-TS filler segments that continue a rendition after its newest real segment, for clients that ignore
/// EXT-X-GAP and fetch the GAP URL anyway: a still picture and silence with timestamps on the rendition's timeline.
///
/// What continues the real segment, so a player that plays through notices nothing but a frozen picture:
/// - the PAT and PMT are the segment's own (same PIDs, stream types, program number; PMT version unchanged);
/// - continuity counters follow the segment's last packets, and each filler segment's follow the previous one's;
/// - the picture decodes on its own: the segment's last H.264 IDR (with its SPS and PPS) or HEVC IRAP picture (with
///   its VPS, SPS and PPS), or a looped slate;
/// - each track continues from that track's own end: the picture from where the segment's last video frame ended,
///   the silence from where its last audio frame ended (an encoder stopped mid-segment may flush audio ending half a
///   second before the video: a player's buffer must not get a hole in either track), up to the slot's end; a track
///   whose end lies more than `FragmentedMP4GapFiller.longestContinuationMilliseconds` before the slot's start, or
///   at or past its end, is not on this slot's timeline and starts with the slot;
/// - AAC silence has the segment's object type, sampling rate and channel configuration, and its frames sit on the
///   segment's audio frame grid;
/// - the PCR runs 100 ms ahead of the timestamps, at least every 100 ms.
///
/// Supported: one H.264 (stream type 0x1B) or HEVC (0x24) stream and/or one AAC ADTS stream (0x0F, Main or LC, channel
/// configuration 1...7); data streams (ID3, SCTE-35) stay in the PMT and get no packets. Anything else throws.
///
/// ```swift
/// var filler = try TransportStreamGapFiller(after: lastSegmentBytes)
/// let first = filler.segment(startPTS: lastEnd, durationMilliseconds: 2000)
/// let second = filler.segment(startPTS: lastEnd + 180_000, durationMilliseconds: 2000)
/// ```
public struct TransportStreamGapFiller: Sendable {
    /// What the filler shows.
    public enum Picture: Sendable, Hashable {
        /// The segment's last IDR access unit, rebuilt (AUD, SPS, PPS, IDR slices) and repeated about once per
        /// second, evenly spaced over the segment. Every frame is an IDR: each decodes on its own.
        case lastKeyframe
        /// These access units in a loop, one every `frameDurationTicks`, starting over at every filler segment;
        /// the first must be an IDR with its SPS and PPS (e.g. the test source's slate GOP).
        case loop(accessUnits: [[UInt8]], frameDurationTicks: Int64)
    }

    /// How far the PCR runs ahead of the timestamps: 0.1 s.
    static let pcrDelayTicks: Int64 = 9_000
    /// Largest PCR interval allowed by ISO/IEC 13818-1: 0.1 s.
    static let pcrIntervalTicks: Int64 = 9_000
    /// AAC frames per audio PES packet (about 85 ms at 48 kHz).
    static let audioFramesPerPES = 4

    /// The frames of the picture in display order (empty when the segment has no video).
    private let videoFrames: [[UInt8]]
    /// The video is HEVC (stream type 0x24); else H.264 (0x1B).
    private let isHEVC: Bool
    /// Spacing of looped frames; nil for the repeated keyframe (spread evenly over each segment).
    private let loopFrameDurationTicks: Int64?
    /// Silence in the segment's AAC configuration; nil when the segment has no audio.
    public let silence: SilentAACFrame?
    /// The RFC 6381 codec strings of the filler's tracks (video first), as MediaProbe reads them from the segment.
    public let codecs: [String]
    private var muxer: TransportStreamMuxer
    /// PTS (33-bit) at which the next audio frame is due: the end of the last audio frame written or read.
    private var nextAudioPTS: Int64?
    /// PTS (33-bit) at which the next video frame is due: the end of the last video frame written or read.
    private var nextVideoPTS: Int64?

    /// Reads what the filler needs from the newest real segment.
    /// - Parameters:
    ///   - segment: an MPEG-TS segment of the rendition.
    ///   - picture: what the filler shows; by default the segment's last keyframe.
    /// - Throws: `GapFillerError` when the segment is not MPEG-TS, carries other codecs or several video or audio
    ///   streams, has no IDR with SPS and PPS (for `.lastKeyframe`), or its AAC configuration has no silent frame.
    public init(after segment: UnsafeRawBufferPointer, picture: Picture = .lastKeyframe) throws(GapFillerError) {
        let contents: TransportStreamContents
        let info: SegmentInfo
        do {
            contents = try TransportStreamContents(segment)
            info = try MediaProbe.probeSegment(segment)
        } catch {
            throw GapFillerError("the newest segment is not MPEG-TS the filler can read: \(error.message)")
        }
        let videoTypes: Set<UInt8> = [0x01, 0x02, 0x10, 0x1B, 0x24, 0x42, 0xD1, 0xEA]
        let audioTypes: Set<UInt8> = [0x03, 0x04, 0x0F, 0x11, 0x1C, 0x81, 0x82, 0x83, 0x84, 0x85, 0x87]
        let video = contents.streams.filter { videoTypes.contains($0.streamType) }
        let audio = contents.streams.filter { audioTypes.contains($0.streamType) }
        guard video.count <= 1, audio.count <= 1, !(video.isEmpty && audio.isEmpty) else {
            throw GapFillerError(
                "the filler needs one video and/or one audio stream; the PMT lists \(video.count) video and "
                    + "\(audio.count) audio streams")
        }
        if let stream = video.first, stream.streamType != 0x1B, stream.streamType != 0x24 {
            throw GapFillerError(
                "video stream type 0x\(Self.hex(stream.streamType)) is not H.264 (0x1B) or HEVC (0x24)")
        }
        isHEVC = video.first?.streamType == 0x24
        if let stream = audio.first, stream.streamType != 0x0F {
            throw GapFillerError("audio stream type 0x\(Self.hex(stream.streamType)) is not AAC in ADTS (0x0F)")
        }

        if let stream = video.first {
            switch picture {
            case .lastKeyframe:
                let packets = contents.pesPackets[stream.pid] ?? []
                videoFrames = [
                    try isHEVC ? HEVCKeyframe.lastIRAP(in: packets) : H264Keyframe.lastIDR(in: packets)
                ]
                loopFrameDurationTicks = nil
            case .loop(let accessUnits, let frameDurationTicks):
                guard !accessUnits.isEmpty, frameDurationTicks > 0 else {
                    throw GapFillerError("a looped picture needs access units and a positive frame duration")
                }
                videoFrames = accessUnits
                loopFrameDurationTicks = frameDurationTicks
            }
        } else {
            videoFrames = []
            loopFrameDurationTicks = nil
        }

        var silence: SilentAACFrame?
        var nextAudioPTS: Int64?
        if let stream = audio.first {
            let packets = (contents.pesPackets[stream.pid] ?? []).filter { !$0.payload.isEmpty }
            guard let first = packets.first else { throw GapFillerError("the segment's audio stream has no PES") }
            let read = first.payload.withUnsafeBytes { bytes in
                Result { () throws(ProbeError) in try ADTSHeader(bytes, at: 0) }
            }
            guard case .success(let header) = read else {
                throw GapFillerError("the segment's audio does not start with an ADTS header")
            }
            silence = try SilentAACFrame(matching: header)
            // The last audio PES in the segment ends where the next audio frame is due.
            if let last = packets.last, let pts = last.pts, let samples = Self.sampleCount(last.payload) {
                let rate = Int64(header.sampleRate)
                nextAudioPTS = MPEGTimestamp.wrapped(pts + (Int64(samples) * 90_000 + rate / 2) / rate)
            }
        }
        self.silence = silence
        self.nextAudioPTS = nextAudioPTS
        // MediaProbe's primary track is the video when there is one: its end is the video's.
        nextVideoPTS =
            video.isEmpty || !info.tracks.contains { $0.kind == .video }
            ? nil : MPEGTimestamp.wrapped(info.startTime.ticks &+ info.duration.ticks)
        codecs = info.tracks.filter { $0.kind == .video || $0.kind == .audio }.compactMap(\.codec)

        let layout = TransportStreamMuxer.Layout(
            patSection: contents.patSection, pmtPID: UInt16(contents.pmtPID), pmtSection: contents.pmtSection,
            videoPID: UInt16(video.first?.pid ?? 0x1FFF), audioPID: UInt16(audio.first?.pid ?? 0x1FFF),
            pcrPID: UInt16(contents.pcrPID))
        var counters: [UInt16: UInt8] = [:]
        for (pid, counter) in contents.lastContinuityCounters { counters[UInt16(pid)] = counter }
        muxer = TransportStreamMuxer(layout: layout, continuingAfter: counters)
    }

    /// `init(after:picture:)` for an array.
    public init(after segment: [UInt8], picture: Picture = .lastKeyframe) throws(GapFillerError) {
        let result = segment.withUnsafeBytes { bytes in
            Result { () throws(GapFillerError) in try TransportStreamGapFiller(after: bytes, picture: picture) }
        }
        self = try result.get()
    }

    /// The next filler segment: PAT, PMT, the picture and silence for the slot from `startPTS` on,
    /// `durationMilliseconds` long.
    ///
    /// Each track starts where it ended (the segment's or the previous filler's last frame) when that is within
    /// `FragmentedMP4GapFiller.longestContinuationMilliseconds` before `startPTS` or before the slot's end, else at
    /// `startPTS`; each runs to the slot's end (audio: the last frame starting before it). So MediaProbe reads it
    /// back ending at `startPTS` plus the duration (in 90 kHz ticks), starting where the video continues (at
    /// `startPTS` when the slot starts where the video ended), with `startsWithKeyframe`. Continuity counters
    /// continue the previous output.
    /// - Parameters:
    ///   - startPTS: where the slot starts on the media timeline, in 90 kHz ticks (taken modulo 2^33).
    ///   - durationMilliseconds: the GAP entry's EXTINF, at least 1.
    public mutating func segment(startPTS: Int64, durationMilliseconds: Int64) -> [UInt8] {
        let start = MPEGTimestamp.wrapped(startPTS)
        let duration = min(max(durationMilliseconds, 1), FragmentedMP4GapFiller.longestSlotMilliseconds) * 90
        let longestContinuation = FragmentedMP4GapFiller.longestContinuationMilliseconds * 90
        /// Where a track due at `next` starts, from `start`: there when it is on this slot's timeline, else 0.
        func continuation(_ next: Int64?) -> Int64 {
            guard let next else { return 0 }
            let offset = MPEGTimestamp.unwrap(next, near: start) - start
            return offset >= -longestContinuation && offset < duration ? offset : 0
        }

        // Video: offsets from start of every frame, from where the video ended.
        var videoTimes: [Int64] = []
        if !videoFrames.isEmpty {
            let anchor = continuation(nextVideoPTS)
            let span = duration - anchor
            if let frameDuration = loopFrameDurationTicks {
                let count = max(1, (span + frameDuration - 1) / frameDuration)
                videoTimes = (0..<count).map { anchor + $0 * frameDuration }
            } else {
                let count = Self.stillFrameCount(duration: span)
                videoTimes = (0..<count).map { anchor + $0 * span / count }
            }
            nextVideoPTS = MPEGTimestamp.wrapped(start + duration)
        }

        // Audio: frames on the grid of the audio before, from where it ended.
        var audioTimes: [Int64] = []
        if let silence {
            let anchor = continuation(nextAudioPTS)
            var index: Int64 = 0
            while anchor + silence.ticks(ofFrame: index) < duration {
                audioTimes.append(anchor + silence.ticks(ofFrame: index))
                index += 1
            }
            nextAudioPTS = MPEGTimestamp.wrapped(start + anchor + silence.ticks(ofFrame: index))
        }

        var output: [UInt8] = []
        let pictureBytes = videoTimes.indices.reduce(0) { $0 + videoFrames[$1 % videoFrames.count].count }
        output.reserveCapacity(pictureBytes * 102 / 100 + audioTimes.count * 60 + 4096)
        muxer.writeProgramTables(into: &output)
        let pcrOnVideo = !videoFrames.isEmpty && muxer.layout.pcrPID == muxer.layout.videoPID
        var lastPCR: Int64?
        var videoIndex = 0
        var audioIndex = 0
        while videoIndex < videoTimes.count || audioIndex < audioTimes.count {
            let videoTime = videoIndex < videoTimes.count ? videoTimes[videoIndex] : Int64.max
            let audioTime = audioIndex < audioTimes.count ? audioTimes[audioIndex] : Int64.max
            let time = min(videoTime, audioTime)
            let isVideo = videoTime <= audioTime
            if !(isVideo && pcrOnVideo), lastPCR.map({ time - $0 >= Self.pcrIntervalTicks / 2 }) ?? true {
                muxer.writePCR(start + time - Self.pcrDelayTicks, into: &output)
                lastPCR = time
            }
            if isVideo {
                let frame = videoFrames[videoIndex % videoFrames.count]
                let pcr: Int64? = pcrOnVideo ? start + time - Self.pcrDelayTicks : nil
                if pcr != nil { lastPCR = time }
                muxer.writeVideo(
                    frame, pts: start + time, pcr: pcr,
                    randomAccess: isHEVC ? HEVCKeyframe.isIRAP(frame) : Self.isIDR(frame), into: &output)
                videoIndex += 1
            } else if let silence {
                let count = min(Self.audioFramesPerPES, audioTimes.count - audioIndex)
                muxer.writeAudio(
                    repeatElement(silence.bytes, count: count), pts: start + audioTime, into: &output)
                audioIndex += count
            }
        }
        return output
    }

    // MARK: - Helpers

    /// Frames of a still picture in a segment of `duration` ticks: about one per second, the smallest count from
    /// there that divides the duration (so the frames are evenly spaced to the tick and the last one lasts as
    /// long as the others).
    static func stillFrameCount(duration: Int64) -> Int64 {
        let minimum = max(1, (duration + 89_999) / 90_000)
        return (minimum...(2 * minimum)).first { duration % $0 == 0 } ?? minimum
    }

    /// Samples per channel in the ADTS frames of an audio PES payload; nil when it is not ADTS.
    static func sampleCount(_ payload: [UInt8]) -> Int? {
        payload.withUnsafeBytes { bytes -> Int? in
            let scan = Result { () throws(ProbeError) in try ADTSHeader.scan(bytes, allowTruncatedLast: true) }
            guard case .success(let result) = scan else { return nil }
            return result.samples
        }
    }

    static func isIDR(_ accessUnit: [UInt8]) -> Bool {
        TransportStreamContents.annexBNALUnits(in: accessUnit).contains { accessUnit[$0.lowerBound] & 0x1F == 5 }
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return digits.count == 1 ? "0" + digits : digits
    }
}
