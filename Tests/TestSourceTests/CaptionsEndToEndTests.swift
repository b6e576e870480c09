import Foundation
import MediaProbe
import TestSource
import TestSupport
import Testing

extension FFmpegEndToEndTests {
    /// A third party reads the `captions` profile's SEI: ffprobe flags the video stream as carrying closed captions
    /// (`Closed Captions` in its summary), and ffmpeg's CEA-608 decoder (lavfi `movie` with `+subcc`) turns them
    /// into subtitles that read "HELLO".
    @Test func ffmpegReadsTheCaptionsProfilesCEA608() async throws {
        let directory = try TemporaryDirectory.make("TestSourceTests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = try Self.writeSixSegments(profile: "captions", to: directory)
        let segment = directory.appendingPathComponent("0.ts")
        let summary = try await ChildProcess.run("ffprobe", ["-hide_banner", segment.path], in: directory)
        #expect(summary.standardError.contains("Closed Captions"), "ffprobe said: \(summary.standardError)")

        let subtitles = try await ChildProcess.run(
            "ffmpeg",
            [
                "-v", "warning", "-nostdin", "-f", "lavfi", "-i", "movie=\(file.lastPathComponent)[out0+subcc]",
                "-map", "0:s", "-f", "srt", "-",
            ], in: directory)
        #expect(subtitles.status == 0)
        let lines = subtitles.standardOutput.split(separator: "\n")
        // One cue a second for the 12 s: shown at 7/25 s (end of caption), erased at 20/25 s.
        #expect(lines.filter { $0.hasSuffix("HELLO</font>") }.count == 12, "ffmpeg gave: \(subtitles.standardOutput)")
        #expect(lines.contains("00:00:00,280 --> 00:00:00,800"))
        #expect(lines.contains("00:00:11,280 --> 00:00:11,800"))
    }

    /// The same captions after ffmpeg remuxes the stream to fMP4 (`-c copy`, length-prefixed samples): the probe
    /// finds CC1 in the samples' SEI, and nothing in the 360p profile's.
    @Test(arguments: [("captions", ["CC1"]), ("360p", [])])
    func probeFindsCaptionsInFFmpegsFragmentedMP4(profile: String, expected: [String]) async throws {
        let directory = try TemporaryDirectory.make("TestSourceTests")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = try Self.writeSixSegments(profile: profile, to: directory)
        let remux = try await ChildProcess.run(
            "ffmpeg",
            [
                "-v", "error", "-nostdin", "-i", file.path, "-c", "copy", "-bsf:a", "aac_adtstoasc", "-f", "hls",
                "-hls_time", "2",
                "-hls_list_size", "0", "-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "init.mp4",
                "-hls_segment_filename", "s%d.m4s", "index.m3u8",
            ], in: directory)
        #expect(remux.status == 0, "ffmpeg said: \(remux.standardError)")
        let initSection = try MediaProbe.probeInitSection(
            [UInt8](Data(contentsOf: directory.appendingPathComponent("init.mp4"))))
        for index in 0..<3 {
            let bytes = try [UInt8](Data(contentsOf: directory.appendingPathComponent("s\(index).m4s")))
            let info = try MediaProbe.probeSegment(bytes, initSection: initSection)
            #expect(info.closedCaptions.map(\.instreamID) == expected)
        }
    }
}
