import Foundation
import GapFiller
import MediaProbe
import TestSupport
import Testing

/// The join between an encoder's last segment and the first filler when the encoder was stopped mid-segment.
///
/// ffmpeg's HLS muxer stopped with SIGTERM flushes a short last segment whose audio ends about 0.6 s before its
/// video. The fixtures are such segments, captured with
/// `ffmpeg -re -f lavfi -i testsrc2=size=160x90:rate=30 -f lavfi -i sine=frequency=440:sample_rate=48000
///  -c:v libx264 -preset veryfast -g 60 -pix_fmt yuv420p -c:a aac -b:a 32k -f hls -hls_time 2 [-hls_segment_type fmp4]`
/// killed with SIGTERM 5.1 s in (the third segment, 0.9 s long: MPEG-TS video to PTS 573,000, audio to 519,840).
/// A browser's media pipeline (Chromium's MSE, video.js) dies on a hole in one track, so each track of the first
/// filler must start exactly where that track ended.
@Suite("Filler after an encoder stopped mid-segment", .offThePool)
struct EncoderStopJoinTests {
    static func fixture(_ name: String) throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("MediaProbeTests/Fixtures/\(name)")
        return [UInt8](try Data(contentsOf: url))
    }

    /// Decode and presentation times of every PES of `pid`, from the PES headers (DTS is the PTS when absent).
    static func timestamps(_ bytes: [UInt8], pid: Int) throws -> [(pts: Int64, dts: Int64)] {
        let units = try TransportStreamReader.pesUnits(TransportStreamReader.packets(bytes), pid: UInt16(pid))
        return units.compactMap { unit in unit.pts.map { ($0, unit.dts ?? $0) } }
    }

    @Test func eachTrackOfTheFirstMPEGTSFillerStartsWhereThatTrackEnded() throws {
        let source = try Self.fixture("ts-h264-aac-sigterm-last.ts")
        let sourceFacts = try SegmentFacts(source)
        // The origin starts the slot at the newest segment's media end: its video's end.
        let videoEnd = sourceFacts.info.startTime.ticks + sourceFacts.info.duration.ticks
        #expect(videoEnd == 573_000)
        let audioEnd = try #require(sourceFacts.audioEnd)
        #expect(audioEnd == 519_840)
        var filler = try TransportStreamGapFiller(after: source)
        let first = filler.segment(startPTS: videoEnd, durationMilliseconds: 2000)
        let facts = try SegmentFacts(first)

        // Audio continues on its frame grid from its own end, to the slot's end (and no further than one frame).
        #expect(facts.audioPTS.first == audioEnd)
        let fillerAudioEnd = try #require(facts.audioEnd)
        #expect(fillerAudioEnd >= videoEnd + 180_000 && fillerAudioEnd < videoEnd + 180_000 + 1920)
        #expect((fillerAudioEnd - audioEnd) % 1920 == 0)
        // Video continues from the video's end; the segment is the slot's length as MediaProbe reads it.
        #expect(facts.videoPTS.first == videoEnd)
        #expect(facts.info.startTime.ticks == videoEnd)
        #expect(facts.info.duration.ticks == 180_000)
        // Decode times keep rising across the join, per track.
        for pid in [0x100, 0x101] {
            let joined = try Self.timestamps(source, pid: pid) + Self.timestamps(first, pid: pid)
            #expect(zip(joined, joined.dropFirst()).allSatisfy { $0.dts < $1.dts }, "PID \(pid)")
        }

        // The next filler continues this one in both tracks.
        let second = try SegmentFacts(filler.segment(startPTS: videoEnd + 180_000, durationMilliseconds: 2000))
        #expect(second.audioPTS.first == fillerAudioEnd)
        #expect(second.videoPTS.first == videoEnd + 180_000)
    }

    @Test(arguments: [-3_600, 27_000, 180_000])
    func aSlotStartingOffTheSegmentsEndStillContinuesEachTrack(offsetTicks: Int64) throws {
        // The slot's start on the media timeline comes from PDTs (another rendition's short segment may have set
        // the slot's length): the tracks still continue from their own ends, and the filler reaches the slot's end.
        let source = try Self.fixture("ts-h264-aac-sigterm-last.ts")
        var filler = try TransportStreamGapFiller(after: source)
        let start: Int64 = 573_000 + offsetTicks
        let facts = try SegmentFacts(filler.segment(startPTS: start, durationMilliseconds: 2000))
        #expect(facts.videoPTS.first == 573_000)
        #expect(facts.audioPTS.first == 519_840)
        #expect(facts.info.startTime.ticks + facts.info.duration.ticks == start + 180_000)
        let fillerAudioEnd = try #require(facts.audioEnd)
        #expect(fillerAudioEnd >= start + 180_000 && fillerAudioEnd < start + 180_000 + 1920)
    }

    @Test func aTrackThatEndedLongBeforeTheSlotStartsWithTheSlot() throws {
        // Past the bound (4 s), the segment is not on this slot's timeline: the filler starts at the slot's start.
        let source = try Self.fixture("ts-h264-aac-sigterm-last.ts")
        var filler = try TransportStreamGapFiller(after: source)
        let start: Int64 = 573_000 + 4 * 90_000 + 1
        let facts = try SegmentFacts(filler.segment(startPTS: start, durationMilliseconds: 2000))
        #expect(facts.videoPTS.first == start)
        #expect(facts.audioPTS.first == start)
    }

    @Test func eachTrackOfTheFirstFMP4FillerStartsWhereThatTrackEnded() throws {
        let initBytes = try Self.fixture("fmp4-h264-aac-sigterm-init.mp4")
        let segment = try Self.fixture("fmp4-h264-aac-sigterm-last.m4s")
        let initInfo = try MediaProbe.probeInitSection(initBytes)
        let video = try #require(initInfo.tracks.first { $0.kind == .video })
        let audio = try #require(initInfo.tracks.first { $0.kind == .audio })
        let real = try MediaProbe.fragmentedMP4Samples(segment, initSection: initInfo)
        let realVideo = real.filter { $0.trackID == video.trackID }
        let realAudio = real.filter { $0.trackID == audio.trackID }
        let videoDecodeEnd = try #require(realVideo.map { $0.decodeTime + $0.duration }.max())
        let videoPresentationEnd = try #require(
            realVideo.map { $0.decodeTime + $0.compositionOffset + $0.duration }.max())
        let audioEnd = try #require(realAudio.map { $0.decodeTime + $0.duration }.max())
        // The capture's audio ends more than half a second before its video.
        let lag = Double(videoDecodeEnd) / Double(video.timescale) - Double(audioEnd) / Double(audio.timescale)
        #expect(lag > 0.5)

        var filler = try FragmentedMP4GapFiller(initSection: initBytes, after: segment)
        let first = try MediaProbe.fragmentedMP4Samples(
            filler.segment(elapsedMilliseconds: 0, durationMilliseconds: 2000, sequenceNumber: 4),
            initSection: initInfo)
        let firstVideo = first.filter { $0.trackID == video.trackID }
        let firstAudio = first.filter { $0.trackID == audio.trackID }
        // Each track starts at its own end: no hole, no overlap; decode times rise across the join.
        #expect(firstAudio.first?.decodeTime == audioEnd)
        #expect(firstVideo.first?.decodeTime == videoDecodeEnd)
        #expect(firstVideo.first.map { $0.decodeTime + $0.compositionOffset } == videoPresentationEnd)
        for (samples, track) in [(realVideo + firstVideo, video), (realAudio + firstAudio, audio)] {
            #expect(zip(samples, samples.dropFirst()).allSatisfy { $0.decodeTime < $1.decodeTime }, "\(track.trackID)")
        }
        // Both tracks reach the slot's end: 2 s after the video's end (audio: within one AAC frame past it).
        let videoSlotEnd = videoDecodeEnd + 2 * video.timescale
        #expect(firstVideo.last.map { $0.decodeTime + $0.duration } == videoSlotEnd)
        let audioSlotEnd = Double(videoSlotEnd) / Double(video.timescale) * Double(audio.timescale)
        let firstAudioEnd = try #require(firstAudio.last.map { $0.decodeTime + $0.duration })
        #expect(Double(firstAudioEnd) >= audioSlotEnd - 1 && Double(firstAudioEnd) < audioSlotEnd + 1024)

        // The next filler continues this one in both tracks.
        let second = try MediaProbe.fragmentedMP4Samples(
            filler.segment(elapsedMilliseconds: 2000, durationMilliseconds: 2000, sequenceNumber: 5),
            initSection: initInfo)
        #expect(second.first { $0.trackID == audio.trackID }?.decodeTime == firstAudioEnd)
        #expect(second.first { $0.trackID == video.trackID }?.decodeTime == videoSlotEnd)
    }
}
