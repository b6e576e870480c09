import Foundation
import GapFiller
import MediaProbe
import TestSupport
import Testing

/// Filler made from segments that libx264, libx265 and ffmpeg's AAC encoder write (fMP4 with its init section, and
/// HEVC in MPEG-TS) decodes in ffmpeg without a word, lasts the slot and continues the encoder's timestamps.
@Suite(
    "ffmpeg decodes fMP4 and HEVC filler", .serialized, .tags(.endToEnd),
    .enabled(if: ChildProcess.ffmpegInstalled, "ffmpeg/ffprobe not installed: decode checks skipped"))
struct FillerDecodeTests {
    /// Encodes 4 s of test pattern and tone as fMP4 HLS (two 2 s segments): the init section and the segments.
    static func encodeFragmentedMP4(codec: String, in directory: URL) async throws -> (initSection: [UInt8], [[UInt8]]) {
        let result = try await ChildProcess.run(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30", "-f", "lavfi", "-i",
                "sine=frequency=440:sample_rate=48000", "-t", "4", "-c:v", codec, "-g", "60", "-bf", "2",
            ] + (codec == "libx265" ? ["-tag:v", "hvc1", "-x265-params", "log-level=error"] : [])
                + [
                    "-c:a", "aac", "-f", "hls", "-hls_time", "2", "-hls_segment_type", "fmp4",
                    "-hls_fmp4_init_filename", "init.mp4", "-hls_segment_filename", "seg%d.m4s", "source.m3u8",
                ], in: directory)
        guard result.status == 0 else { throw TestFailure("ffmpeg failed: \(result.standardError)") }
        let read = { (name: String) in [UInt8](try Data(contentsOf: directory.appendingPathComponent(name))) }
        return (try read("init.mp4"), [try read("seg0.m4s"), try read("seg1.m4s")])
    }

    @Test(arguments: ["libx264", "libx265"])
    func fragmentedMP4FillerPlaysThroughAndContinuesTheTimestamps(codec: String) async throws {
        let directory = try TemporaryDirectory.make("GapFillerTests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (initSection, segments) = try await Self.encodeFragmentedMP4(codec: codec, in: directory)
        var filler = try FragmentedMP4GapFiller(initSection: initSection, after: segments[1])
        let fillers = (0..<2).map {
            filler.segment(elapsedMilliseconds: Int64($0) * 2000, durationMilliseconds: 2000, sequenceNumber: 3)
        }

        // The init section, the real segments and the fillers, in one file: ffmpeg decodes all of it quietly.
        let whole = initSection + segments.joined() + fillers.joined()
        try Data(whole).write(to: directory.appendingPathComponent("whole.mp4"))
        let decoded = try await ChildProcess.run(
            "ffmpeg", ["-v", "error", "-i", "whole.mp4", "-f", "null", "-"], in: directory)
        #expect(decoded.status == 0)
        #expect(decoded.standardError == "", "ffmpeg said: \(decoded.standardError)")

        // Decode timestamps rise through the join and the video lasts 8 s.
        let packets = try await ChildProcess.run(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=dts_time", "-of", "csv=p=0",
                "whole.mp4",
            ],
            in: directory)
        let times = packets.standardOutput.split(separator: "\n").compactMap {
            Double($0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: ",")))
        }
        #expect(times.count > 100)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "DTS not rising: \(times.suffix(10))")
        let duration = try await ChildProcess.run(
            "ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", "whole.mp4"],
            in: directory)
        let seconds = try #require(Double(duration.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(abs(seconds - 8) < 0.2, "duration \(seconds)")
        print(
            "\(codec) fMP4 filler: ffmpeg decoded init + 2 segments + 2 fillers with no message, ffprobe duration "
                + "\(seconds) s, \(times.count) video packets, DTS \(times.first ?? -1) ... \(times.last ?? -1) s rising"
        )

        // ffmpeg's HLS reader plays a playlist naming them with EXT-X-MAP.
        var playlist = "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:2\n#EXT-X-PLAYLIST-TYPE:VOD\n"
        playlist += "#EXT-X-MAP:URI=\"init.mp4\"\n"
        for (index, bytes) in fillers.enumerated() {
            try Data(bytes).write(to: directory.appendingPathComponent("filler\(index).m4s"))
        }
        for name in ["seg0.m4s", "seg1.m4s", "filler0.m4s", "filler1.m4s"] { playlist += "#EXTINF:2.0,\n\(name)\n" }
        playlist += "#EXT-X-ENDLIST\n"
        try playlist.write(to: directory.appendingPathComponent("play.m3u8"), atomically: true, encoding: .utf8)
        let played = try await ChildProcess.run(
            "ffmpeg", ["-v", "warning", "-allowed_extensions", "ALL", "-i", "play.m3u8", "-f", "null", "-"],
            in: directory)
        #expect(played.status == 0)
        #expect(played.standardError == "", "ffmpeg said: \(played.standardError)")
    }

    /// The slate clip command of docs/outages.md (a still picture and silence, here the test pattern's first frame)
    /// makes a clip the filler loops; ffmpeg plays source + clip filler through. A clip with B-frames is refused.
    @Test func anOperatorsClipIsLoopedAndPlaysThrough() async throws {
        let directory = try TemporaryDirectory.make("GapFillerTests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = try await Tools.encode(
            seconds: 2, x264: ["-profile:v", "main", "-g", "30", "-bf", "0", "-preset", "veryfast"], audio: [],
            in: directory)
        func clip(bFrames: Int) async throws -> [UInt8] {
            let made = try await ChildProcess.run(
                "ffmpeg",
                [
                    "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30", "-frames:v", "1",
                    "still.png",
                ], in: directory)
            guard made.status == 0 else { throw TestFailure("ffmpeg failed: \(made.standardError)") }
            let result = try await ChildProcess.run(
                "ffmpeg",
                [
                    "-v", "error", "-y", "-loop", "1", "-framerate", "30", "-i", "still.png", "-f", "lavfi", "-i",
                    "anullsrc=r=48000:cl=stereo", "-t", "2", "-c:v", "libx264", "-profile:v", "main", "-pix_fmt",
                    "yuv420p", "-s", "160x90", "-r", "30", "-g", "30", "-keyint_min", "30", "-sc_threshold", "0", "-bf",
                    "\(bFrames)", "-c:a", "aac", "-ac", "2", "-ar", "48000", "-f", "mpegts", "clip.ts",
                ], in: directory)
            guard result.status == 0 else { throw TestFailure("ffmpeg failed: \(result.standardError)") }
            return [UInt8](try Data(contentsOf: directory.appendingPathComponent("clip.ts")))
        }
        let slate = try await ClipGapFillerSource(clip: clip(bFrames: 0))
        #expect(slate.accessUnits.count == 60)
        #expect(slate.frameDurationTicks == 3000)
        var filler = try source.withUnsafeBytes { bytes throws(GapFillerError) in try slate.makeFiller(after: bytes) }
        let sourceInfo = try MediaProbe.probeSegment(source)
        let start = sourceInfo.startTime.ticks + sourceInfo.duration.ticks
        let fillers = [
            filler.segment(startPTS: start, durationMilliseconds: 2000),
            filler.segment(startPTS: start + 180_000, durationMilliseconds: 2000),
        ]
        let probe = try await Tools.countFrames(fillers[0], in: directory)
        #expect(probe.standardError == "", "ffprobe said: \(probe.standardError)")
        #expect(probe.standardOutput.contains("video,60"), "\(probe.standardOutput)")
        let played = try await Tools.playThrough([source] + fillers, durations: [2, 2, 2], in: directory)
        #expect(played.status == 0)
        #expect(played.standardError == "", "ffmpeg said: \(played.standardError)")
        let withBFrames = try await clip(bFrames: 2)
        #expect(throws: GapFillerError.self) { try ClipGapFillerSource(clip: withBFrames) }
    }

    @Test func hevcTransportStreamFillerPlaysThrough() async throws {
        let directory = try TemporaryDirectory.make("GapFillerTests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let encoded = try await ChildProcess.run(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30", "-f", "lavfi", "-i",
                "sine=frequency=440:sample_rate=48000", "-t", "2", "-c:v", "libx265", "-g", "30", "-bf", "2",
                "-x265-params", "log-level=error", "-c:a", "aac", "-f", "mpegts", "source.ts",
            ], in: directory)
        #expect(encoded.status == 0, "\(encoded.standardError)")
        let source = [UInt8](try Data(contentsOf: directory.appendingPathComponent("source.ts")))
        let sourceInfo = try MediaProbe.probeSegment(source)
        var filler = try TransportStreamGapFiller(after: source)
        #expect(filler.codecs.first?.hasPrefix("hvc1") == true || filler.codecs.first?.hasPrefix("hev1") == true)
        let start = sourceInfo.startTime.ticks + sourceInfo.duration.ticks
        let fillers = [
            filler.segment(startPTS: start, durationMilliseconds: 2000),
            filler.segment(startPTS: start + 180_000, durationMilliseconds: 2000),
        ]
        for (index, bytes) in fillers.enumerated() {
            let info = try MediaProbe.probeSegment(bytes)
            #expect(info.startTime.ticks == start + Int64(index) * 180_000)
            #expect(info.duration.ticks == 180_000)
            #expect(info.startsWithKeyframe)
            let probe = try await Tools.countFrames(bytes, in: directory)
            #expect(probe.standardError == "", "ffprobe said: \(probe.standardError)")
            #expect(probe.standardOutput.contains("video,2"), "\(probe.standardOutput)")
        }
        let played = try await Tools.playThrough([source] + fillers, durations: [2, 2, 2], in: directory)
        #expect(played.status == 0)
        #expect(played.standardError == "", "ffmpeg said: \(played.standardError)")
    }
}
