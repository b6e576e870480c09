import Foundation
import TestSource
import TestSupport
import Testing

/// Real ffmpeg and ffprobe read what the generator writes. Skipped, with the reason shown, without ffmpeg.
@Suite(
    "ffmpeg reads the stream", .serialized, .tags(.endToEnd),
    .enabled(if: ChildProcess.ffmpegInstalled, "ffmpeg/ffprobe not installed: end-to-end decode checks skipped"))
struct FFmpegEndToEndTests {
    /// Writes six consecutive 2-second segments (12 s: the video loop three times, the audio loop 7.5 times) as
    /// files, and their concatenation as `concat.ts`.
    static func writeSixSegments(profile name: String, to directory: URL) throws -> URL {
        let profile = try #require(TestSourceProfile.named(name))
        var generator = try TestStreamGenerator(profile: profile, segmentDuration: 2)
        var concatenated: [UInt8] = []
        for index in 0..<6 {
            let segment = generator.nextSegment()
            try Data(segment.bytes).write(to: directory.appendingPathComponent("\(index).ts"))
            concatenated += segment.bytes
        }
        let url = directory.appendingPathComponent("concat.ts")
        try Data(concatenated).write(to: url)
        return url
    }

    /// ffprobe's packet timestamps of one stream kind (`v` or `a`), as (pts, dts) pairs.
    static func packetTimestamps(_ stream: String, of file: URL, in directory: URL) async throws -> [(Int64, Int64)] {
        let probe = try await ChildProcess.run(
            "ffprobe",
            [
                "-v", "warning", "-select_streams", stream, "-show_entries", "packet=pts,dts", "-of", "csv=p=0",
                file.path,
            ], in: directory)
        #expect(probe.status == 0)
        #expect(probe.standardError == "", "ffprobe said: \(probe.standardError)")
        return try probe.standardOutput.split(separator: "\n").map { line in
            let fields = line.split(separator: ",").compactMap { Int64($0) }
            guard fields.count == 2 else { throw ReaderError("unexpected ffprobe line \(line)") }
            return (fields[0], fields[1])
        }
    }

    /// ffprobe lists the streams once under the program and once on their own: one copy of each line, in order.
    static func distinctLines(_ text: String) -> String {
        var seen: Set<Substring> = []
        return text.split(separator: "\n").filter { seen.insert($0).inserted }.joined(separator: "\n")
    }

    @Test(arguments: ["360p", "180p"])
    func probesContinuousTimestampsAcrossLoops(profile: String) async throws {
        let directory = try TemporaryDirectory.make("TestSourceTests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = try Self.writeSixSegments(profile: profile, to: directory)

        let video = try await Self.packetTimestamps("v", of: file, in: directory)
        #expect(video.count == 300)
        #expect(video.first?.0 == 126_000)
        #expect(video.allSatisfy { $0.0 == $0.1 })
        #expect(zip(video, video.dropFirst()).allSatisfy { $1.0 - $0.0 == 3600 })

        let audio = try await Self.packetTimestamps("a", of: file, in: directory)
        #expect(audio.count == 563)
        #expect(audio.first?.0 == 126_000)
        #expect(zip(audio, audio.dropFirst()).allSatisfy { $1.0 - $0.0 == 1920 })
    }

    @Test func describesTheStreamsAsTheProfileSays() async throws {
        let directory = try TemporaryDirectory.make("TestSourceTests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = try Self.writeSixSegments(profile: "360p", to: directory)
        let probe = try await ChildProcess.run(
            "ffprobe",
            [
                "-v", "warning", "-count_frames", "-show_entries",
                "stream=codec_name,profile,width,height,r_frame_rate,sample_rate,channels,nb_read_frames",
                "-of", "compact=p=0", file.path,
            ], in: directory)
        #expect(probe.status == 0)
        #expect(probe.standardError == "", "ffprobe said: \(probe.standardError)")
        #expect(
            Self.distinctLines(probe.standardOutput) == """
                codec_name=h264|profile=Main|width=640|height=360|r_frame_rate=25/1|nb_read_frames=300
                codec_name=aac|profile=LC|sample_rate=48000|channels=2|r_frame_rate=0/0|nb_read_frames=563
                """)
    }

    @Test func decodesWithoutAWordFromFFmpeg() async throws {
        let directory = try TemporaryDirectory.make("TestSourceTests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = try Self.writeSixSegments(profile: "360p", to: directory)
        let decode = try await ChildProcess.run(
            "ffmpeg", ["-v", "warning", "-nostdin", "-i", file.path, "-f", "null", "-"], in: directory)
        #expect(decode.status == 0)
        #expect(decode.standardError == "", "ffmpeg said: \(decode.standardError)")
    }

    @Test func pictureMovesAndLoopsEveryFourSeconds() async throws {
        let directory = try TemporaryDirectory.make("TestSourceTests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = try Self.writeSixSegments(profile: "180p", to: directory)
        let hashes = try await ChildProcess.run(
            "ffmpeg", ["-v", "warning", "-nostdin", "-i", file.path, "-map", "0:v", "-f", "framemd5", "-"],
            in: directory)
        #expect(hashes.status == 0)
        #expect(hashes.standardError == "", "ffmpeg said: \(hashes.standardError)")
        let frames = hashes.standardOutput.split(separator: "\n").filter { !$0.hasPrefix("#") }
            .compactMap { $0.split(separator: ",").last.map { String($0).trimmingCharacters(in: .whitespaces) } }
        try #require(frames.count == 300)
        #expect(Set(frames[0..<100]).count == 100, "every frame of the loop differs from the others")
        #expect(Array(frames[0..<100]) == Array(frames[100..<200]))
        #expect(Array(frames[0..<100]) == Array(frames[200..<300]))
    }

    @Test func slateDecodesWithoutAWord() async throws {
        let directory = try TemporaryDirectory.make("TestSourceTests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let profile = try #require(TestSourceProfile.named("360p"))
        let generator = try TestStreamGenerator(profile: profile, segmentDuration: 2)
        let url = directory.appendingPathComponent("slate.ts")
        try Data(generator.slateSegment(startPTS: 900_000, duration: 2)).write(to: url)
        let probe = try await ChildProcess.run(
            "ffprobe",
            [
                "-v", "warning", "-count_frames", "-show_entries", "stream=codec_name,width,height,nb_read_frames",
                "-of", "compact=p=0", url.path,
            ], in: directory)
        #expect(probe.standardError == "", "ffprobe said: \(probe.standardError)")
        #expect(
            Self.distinctLines(probe.standardOutput) == """
                codec_name=h264|width=640|height=360|nb_read_frames=50
                codec_name=aac|nb_read_frames=94
                """)
    }
}

extension FFmpegEndToEndTests {
    /// Across a restart the only complaint is the timestamps going back (what HLS marks with a discontinuity):
    /// no continuity-counter error, since the first packet of each PID carries the discontinuity indicator.
    @Test func readsAcrossASimulatedEncoderRestart() async throws {
        let directory = try TemporaryDirectory.make("TestSourceTests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let profile = try #require(TestSourceProfile.named("180p"))
        var generator = try TestStreamGenerator(profile: profile, segmentDuration: 2)
        var bytes = generator.nextSegment().bytes + generator.nextSegment().bytes
        generator.restartTimestamps(startPTS: 90_000)
        bytes += generator.nextSegment().bytes + generator.nextSegment().bytes
        let url = directory.appendingPathComponent("restart.ts")
        try Data(bytes).write(to: url)

        let probe = try await ChildProcess.run(
            "ffprobe",
            ["-v", "warning", "-select_streams", "v", "-show_entries", "packet=pts", "-of", "csv=p=0", url.path],
            in: directory)
        let video = probe.standardOutput.split(separator: "\n").compactMap { $0.split(separator: ",").first }
            .compactMap { Int64($0) }
        try #require(video.count == 200, "ffprobe printed: \(probe.standardOutput.prefix(200))")
        #expect(video[99] == 126_000 + 99 * 3600 && video[100] == 90_000)
        let decode = try await ChildProcess.run(
            "ffmpeg", ["-v", "warning", "-nostdin", "-i", url.path, "-f", "null", "-"], in: directory)
        #expect(decode.status == 0)
        for output in [probe.standardError, decode.standardError] {
            let lines = output.split(separator: "\n")
            #expect(lines.count <= 2)
            #expect(lines.allSatisfy { $0.hasSuffix("out of order") }, "ffmpeg said: \(output)")
        }
    }
}
