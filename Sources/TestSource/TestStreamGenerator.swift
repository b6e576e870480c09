import MPEGTSWriter
import MediaProbe

/// Generates one rendition of the built-in test source: an endless MPEG-TS stream of H.264 video and AAC audio,
/// cut into segments that each start with an IDR.
///
/// The generator is pure: it reads no clock and starts no thread. The caller asks for the next segment when it is
/// due (the origin's ingest loop does so on its schedule) and keeps the generator behind its own lock.
///
/// Video and audio loop pre-encoded fixtures independently (a 4 s video loop, a 1.6 s audio loop); their
/// timestamps, the PCR and the continuity counters run on across loop points and segment boundaries, so the
/// segments concatenate into one continuous stream. Generators of different profiles created with the same
/// `segmentDuration` and `startPTS` produce segments with the same start PTS and duration.
///
/// ```swift
/// var generator = try TestStreamGenerator(profile: .named("360p")!, segmentDuration: 2)
/// let segment = generator.nextSegment()  // 2 s of media, startPTS 126000
/// ```
public struct TestStreamGenerator: Sendable {
    /// The start PTS used when none is given: 1.4 s, as ffmpeg's MPEG-TS muxer starts, so the PCR (which runs
    /// ``pcrDelayTicks`` ahead of the DTS) starts positive.
    public static let defaultStartPTS: Int64 = 126_000
    /// How far the PCR runs ahead of the DTS of the video frame whose first packet carries it: 0.1 s.
    public static let pcrDelayTicks: Int64 = 9_000
    /// AAC frames per audio PES packet (the last PES of a segment may hold fewer).
    static let audioFramesPerPES = 4

    /// The profile this generator produces.
    public let profile: TestSourceProfile
    /// The segment duration in whole seconds.
    public let segmentDuration: Int
    /// The segment duration in 90 kHz ticks.
    public var segmentDurationTicks: Int64 { Int64(segmentDuration) * MPEGTimestamp.clockRate }
    /// The `sequence` the next segment will carry.
    public private(set) var nextSequence = 0

    private let videoLoop: [H264AccessUnit]
    private let slate: [H264AccessUnit]
    private let audioLoop: [[UInt8]]
    private let silence: [UInt8]
    private var muxer = TransportStreamMuxer()
    /// PTS of the current timeline's first frame, in 0 ..< 2^33; later timestamps grow from it unwrapped.
    private var timelineStart: Int64
    /// Segments written since the current timeline started.
    private var segmentsInTimeline: Int64 = 0

    /// Creates a generator whose first segment starts at `startPTS`.
    /// - Parameters:
    ///   - profile: one of ``TestSourceProfile/builtIn``.
    ///   - segmentDuration: whole seconds, a positive multiple of the profile's GOP duration.
    ///   - startPTS: PTS of the first frame in 90 kHz ticks (taken modulo 2^33).
    /// - Throws: ``TestSourceError/Kind-swift.struct/invalidSegmentDuration``, or
    ///   ``TestSourceError/Kind-swift.struct/fixtureUnavailable`` when the profile has no usable fixtures.
    public init(
        profile: TestSourceProfile, segmentDuration: Int, startPTS: Int64 = defaultStartPTS
    ) throws(TestSourceError) {
        guard segmentDuration > 0, segmentDuration % profile.gopDuration == 0 else {
            throw TestSourceError(
                .invalidSegmentDuration,
                "segment duration \(segmentDuration) s is not a positive multiple of the "
                    + "\(profile.gopDuration) s GOP of profile \(profile.name)")
        }
        let (library, fixtures) = try FixtureLibrary.fixtures(for: profile)
        self.profile = profile
        self.segmentDuration = segmentDuration
        self.videoLoop = fixtures.videoLoop
        self.slate = fixtures.slate
        self.audioLoop = library.audioLoop
        self.silence = library.silence
        self.timelineStart = MPEGTimestamp.wrapped(startPTS)
    }

    /// Produces the next segment of the endless stream.
    ///
    /// It starts with PAT and PMT, then the IDR of a GOP whose first packet carries the PCR and the random access
    /// indicator; video frames and audio PES packets follow in timestamp order. Video frame timestamps continue the
    /// previous segment's by one frame duration, audio timestamps by 1920 ticks per AAC frame.
    public mutating func nextSegment() -> GeneratedSegment {
        nextSegment(frames: segmentDuration * profile.framesPerSecond)
    }

    /// Produces the next segment cut short after its first `frames` video frames (and the audio frames that start
    /// before the cut), as an encoder stopped mid-segment flushes it. The timeline goes on as if the segment had
    /// been whole: an encoder that comes back calls ``restartTimestamps(startPTS:)`` first.
    /// - Parameter frames: 1 ... the frames of a whole segment.
    public mutating func nextSegment(cutAfter frames: Int) -> GeneratedSegment {
        precondition(frames > 0 && frames <= segmentDuration * profile.framesPerSecond, "a cut inside the segment")
        return nextSegment(frames: frames)
    }

    private mutating func nextSegment(frames count: Int) -> GeneratedSegment {
        let framesPerSegment = Int64(segmentDuration * profile.framesPerSecond)
        let firstFrame = segmentsInTimeline * framesPerSegment
        let segmentStart = segmentsInTimeline * segmentDurationTicks  // from the timeline's start
        let durationTicks =
            Int64(count) == framesPerSegment ? segmentDurationTicks : Int64(count) * profile.frameDurationTicks
        let frames = (firstFrame..<firstFrame + Int64(count)).map { index in
            let unit = videoLoop[Int(index % Int64(videoLoop.count))]
            guard !profile.closedCaptions.isEmpty else { return unit }
            let fps = profile.framesPerSecond
            return unit.inserting(
                beforeFirstSlice: CEA608Captions.seiNALUnit(
                    frameInSecond: Int(index % Int64(fps)), framesPerSecond: fps))
        }
        let audioFrames = Self.audioFrameRange(from: segmentStart, to: segmentStart + durationTicks)
        let audio = audioFrames.map { audioLoop[Int($0 % Int64(audioLoop.count))] }
        let bytes = Self.mux(
            video: frames, firstVideoPTS: timelineStart + segmentStart,
            frameDuration: profile.frameDurationTicks,
            audio: audio, firstAudioPTS: timelineStart + audioFrames.lowerBound * ADTSFrame.durationTicks,
            muxer: &muxer)
        let segment = GeneratedSegment(
            bytes: bytes, startPTS: MPEGTimestamp.wrapped(timelineStart + segmentStart),
            durationTicks: durationTicks, sequence: nextSequence, startsTimeline: segmentsInTimeline == 0)
        segmentsInTimeline += 1
        nextSequence += 1
        return segment
    }

    /// Simulates an encoder restart: the next segment starts a new timeline at `startPTS`, from the beginning of
    /// the video and audio loops, with continuity counters from 0 and the discontinuity indicator set on the
    /// first packet of every PID. `sequence` keeps counting.
    /// - Parameter startPTS: PTS of the next segment's first frame in 90 kHz ticks (taken modulo 2^33).
    public mutating func restartTimestamps(startPTS: Int64) {
        timelineStart = MPEGTimestamp.wrapped(startPTS)
        segmentsInTimeline = 0
        muxer.restart()
    }

    /// A filler segment for a gap: the profile's slate (a still picture, same codec configuration as the stream)
    /// and AAC silence, `duration` seconds long from `startPTS`.
    ///
    /// The segment stands alone: its continuity counters start at 0 and it does not change the generator's state.
    /// - Parameters:
    ///   - startPTS: PTS of the first frame in 90 kHz ticks (taken modulo 2^33).
    ///   - duration: whole seconds, at least 1.
    public func slateSegment(startPTS: Int64, duration: Int) -> [UInt8] {
        precondition(duration > 0, "a slate segment lasts at least one second")
        let start = MPEGTimestamp.wrapped(startPTS)
        let frameCount = duration * profile.framesPerSecond
        let frames = (0..<frameCount).map { slate[$0 % slate.count] }
        let audioFrames = Self.audioFrameRange(from: 0, to: Int64(duration) * MPEGTimestamp.clockRate)
        var standalone = TransportStreamMuxer()
        return Self.mux(
            video: frames, firstVideoPTS: start, frameDuration: profile.frameDurationTicks,
            audio: Array(repeating: silence, count: audioFrames.count), firstAudioPTS: start,
            muxer: &standalone)
    }

    /// The slate's access units in decoding order, one per ``TestSourceProfile/frameDurationTicks``: one GOP of a
    /// still picture (an IDR carrying SPS and PPS, then P-frames), Annex B, each starting with its AUD. Same codec
    /// configuration as the stream; ``slateSegment(startPTS:duration:)`` loops them.
    public var slateAccessUnits: [[UInt8]] { slate.map(\.bytes) }

    /// Indexes of the AAC frames (counted from a timeline's start) whose PTS falls in `start ..< end` (ticks from
    /// the timeline's start).
    private static func audioFrameRange(from start: Int64, to end: Int64) -> Range<Int64> {
        let duration = ADTSFrame.durationTicks
        return (start + duration - 1) / duration..<(end + duration - 1) / duration
    }

    /// One segment: PAT, PMT, then video access units and audio PES packets merged by timestamp (video first on
    /// a tie, so the segment opens with its IDR).
    private static func mux(
        video: [H264AccessUnit], firstVideoPTS: Int64, frameDuration: Int64,
        audio: [[UInt8]], firstAudioPTS: Int64, muxer: inout TransportStreamMuxer
    ) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(video.reduce(0) { $0 + $1.bytes.count } * 105 / 100 + audio.count * 400 + 1024)
        muxer.writeProgramTables(into: &output)
        var videoIndex = 0
        var audioIndex = 0
        while videoIndex < video.count || audioIndex < audio.count {
            let videoPTS = firstVideoPTS + Int64(videoIndex) * frameDuration
            let audioPTS = firstAudioPTS + Int64(audioIndex) * ADTSFrame.durationTicks
            if videoIndex < video.count, audioIndex >= audio.count || videoPTS <= audioPTS {
                let unit = video[videoIndex]
                muxer.writeVideo(
                    unit.bytes, pts: videoPTS, pcr: videoPTS - pcrDelayTicks, randomAccess: unit.isIDR,
                    into: &output)
                videoIndex += 1
            } else {
                let count = min(audioFramesPerPES, audio.count - audioIndex)
                muxer.writeAudio(audio[audioIndex..<audioIndex + count], pts: audioPTS, into: &output)
                audioIndex += count
            }
        }
        return output
    }
}
