import Foundation
import GapFiller
import MediaProbe
import TestSource
import TestSupport
import Testing

/// ffmpeg reads a playlist of [last real segment, filler, filler] without a word, and ffprobe decodes every frame
/// of each filler. Sources: the test source (with its slate or its last keyframe) and segments libx264 and ffmpeg's
/// AAC encoder make (B-frames, mono 44.1 kHz, 5.1).
@Suite(
    "ffmpeg plays through filler", .serialized, .tags(.endToEnd),
    .enabled(if: ChildProcess.ffmpegInstalled, "ffmpeg/ffprobe not installed: decode checks skipped"))
struct FFmpegPlayThroughTests {
    /// Makes two 2-second fillers after `source`, checks them with MediaProbe, and has ffmpeg play all three.
    func playThrough(
        source: [UInt8], filler: inout TransportStreamGapFiller, videoFrames: Int, audioFrames: ClosedRange<Int>,
        in directory: URL
    ) async throws {
        let sourceInfo = try MediaProbe.probeSegment(source)
        let start = sourceInfo.startTime.ticks + sourceInfo.duration.ticks
        let fillers = [
            filler.segment(startPTS: start, durationMilliseconds: 2000),
            filler.segment(startPTS: start + 180_000, durationMilliseconds: 2000),
        ]
        for (index, bytes) in fillers.enumerated() {
            let info = try MediaProbe.probeSegment(bytes)
            #expect(info.startTime.ticks == MPEGTimestamp.wrapped(start + Int64(index) * 180_000))
            #expect(info.duration.ticks == 180_000)
            #expect(info.startsWithKeyframe)
            #expect(info.tracks.map(\.codec) == sourceInfo.tracks.map(\.codec))

            let probe = try await Tools.countFrames(bytes, in: directory)
            #expect(probe.status == 0)
            #expect(probe.standardError == "", "ffprobe said: \(probe.standardError)")
            var seen: Set<Substring> = []
            let lines = probe.standardOutput.split(separator: "\n").filter { seen.insert($0).inserted }
            let counts = Dictionary(
                lines.compactMap { line -> (String, Int)? in
                    let fields = line.split(separator: ",")
                    guard fields.count == 2, let count = Int(fields[1]) else { return nil }
                    return (String(fields[0]), count)
                }, uniquingKeysWith: { first, _ in first })
            #expect(counts["video"] == videoFrames, "\(lines)")
            #expect(counts["audio"].map { audioFrames.contains($0) } ?? false, "\(lines)")
        }
        let sourceSeconds = Double(sourceInfo.duration.ticks) / 90_000
        let played = try await Tools.playThrough([source] + fillers, durations: [sourceSeconds, 2, 2], in: directory)
        #expect(played.status == 0)
        #expect(played.standardError == "", "ffmpeg said: \(played.standardError)")
    }

    @Test(arguments: ["360p", "180p"])
    func testSourceSlate(profile name: String) async throws {
        let directory = try TemporaryDirectory.make("GapFillerTests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let profile = try #require(TestSourceProfile.named(name))
        var generator = try TestStreamGenerator(profile: profile, segmentDuration: 2)
        let source = generator.nextSegment().bytes
        let slate = SlateGapFillerSource(
            accessUnits: generator.slateAccessUnits, frameDurationTicks: profile.frameDurationTicks)
        var filler = try source.withUnsafeBytes { bytes throws(GapFillerError) in try slate.makeFiller(after: bytes) }
        try await playThrough(source: source, filler: &filler, videoFrames: 50, audioFrames: 93...94, in: directory)
    }

    @Test func testSourceLastKeyframe() async throws {
        let directory = try TemporaryDirectory.make("GapFillerTests")
        defer { try? FileManager.default.removeItem(at: directory) }
        var generator = try TestStreamGenerator(profile: #require(TestSourceProfile.named("360p")), segmentDuration: 2)
        let source = generator.nextSegment().bytes
        var filler = try TransportStreamGapFiller(after: source)
        try await playThrough(source: source, filler: &filler, videoFrames: 2, audioFrames: 93...94, in: directory)
    }

    /// libx264 with B-frames (High profile, PTS != DTS), and AAC in three configurations.
    @Test(arguments: [
        (["-ac", "2", "-ar", "48000"], 93...94),
        (["-ac", "1", "-ar", "44100"], 86...87),
        (["-ac", "6", "-ar", "48000"], 93...94),
    ])
    func encoderSegment(audio: [String], audioFrames: ClosedRange<Int>) async throws {
        let directory = try TemporaryDirectory.make("GapFillerTests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = try await Tools.encode(
            seconds: 2, x264: ["-profile:v", "high", "-bf", "2", "-g", "30", "-preset", "veryfast"], audio: audio,
            in: directory)
        var filler = try TransportStreamGapFiller(after: source)
        #expect(filler.silence?.channelConfiguration == (audio[1] == "6" ? 6 : Int(audio[1])))
        try await playThrough(source: source, filler: &filler, videoFrames: 2, audioFrames: audioFrames, in: directory)
    }

    /// Audio-only MPEG-TS: silence on the segment's frame grid, the PCR on packets of its own.
    @Test func audioOnlySegment() async throws {
        let directory = try TemporaryDirectory.make("GapFillerTests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let encoded = try await ChildProcess.run(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "2", "-c:a", "aac",
                "-f", "mpegts", "audio.ts",
            ], in: directory)
        #expect(encoded.status == 0)
        let source = [UInt8](try Data(contentsOf: directory.appendingPathComponent("audio.ts")))
        let sourceInfo = try MediaProbe.probeSegment(source)
        var filler = try TransportStreamGapFiller(after: source)
        #expect(filler.codecs == ["mp4a.40.2"])
        let start = sourceInfo.startTime.ticks + sourceInfo.duration.ticks
        let first = filler.segment(startPTS: start, durationMilliseconds: 2000)
        let second = filler.segment(startPTS: start + 180_000, durationMilliseconds: 2000)
        let firstInfo = try MediaProbe.probeSegment(first)
        let secondInfo = try MediaProbe.probeSegment(second)
        // Frames of 1920 ticks from the source's end: 94 fit in the first 2 s, the second filler continues them.
        #expect(firstInfo.startTime.ticks == start)
        #expect(firstInfo.duration.ticks == 94 * 1920)
        #expect(secondInfo.startTime.ticks == start + 94 * 1920)
        let played = try await Tools.playThrough([source, first, second], durations: [2, 2, 2], in: directory)
        #expect(played.status == 0)
        #expect(played.standardError == "", "ffmpeg said: \(played.standardError)")
    }
}
