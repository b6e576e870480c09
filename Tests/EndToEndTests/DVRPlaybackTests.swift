import Foundation
import Glibc
import HLSPlaylist
import TestSupport
import Testing

extension EndToEnd {
    /// The demo channel with `dvr: {hours: 1}`: after 24 s, most of what it made is only in the store. ffmpeg plays a
    /// catch-up (VOD) and a start-over that ends a few seconds ahead (EVENT, then ENDLIST) to their ends.
    @Suite("End to end: DVR catch-up and start-over played by ffmpeg", .tags(.endToEnd))
    struct DVRPlaybackTests {
        /// `ffmpeg -i URL -c copy OUTPUT` until the playlist's ENDLIST (`-live_start_index 0`: from its first
        /// segment, as a start-over player starts); returns its exit status and ffprobe's duration of the output.
        static func play(_ url: String, origin: OriginProcess, name: String) async throws -> (Int32?, Double, String) {
            guard let ffmpeg = ChildProcess.locate("ffmpeg") else { throw EndToEndError("ffmpeg is not on the PATH") }
            let output = origin.directory.appendingPathComponent(name + ".ts")
            let child = try ChildProcess(
                executable: ffmpeg,
                arguments: [
                    "-nostdin", "-v", "error", "-y", "-live_start_index", "0", "-i", url, "-c", "copy", output.path,
                ],
                directory: origin.directory, label: name)
            let status = await child.wait(timeout: .seconds(60))
            child.signal(SIGKILL)
            let (duration, probeErrors) = try await FFmpeg.formatDuration(of: output, in: origin.directory)
            try? FileManager.default.removeItem(at: output)
            return (status, duration, child.standardError + probeErrors)
        }

        static func epoch(_ milliseconds: Int64) -> String {
            String(milliseconds / 1000) + "." + String(format: "%03d", Int(milliseconds % 1000))
        }

        @Test("catch-up plays exactly its interval; start-over plays from T to the end that came after it")
        func ffmpegPlaysCatchUpAndStartOver() async throws {
            // The default configuration's demo channel keeps an hour of time-shift.
            let configuration = try OriginProcess.defaultConfiguration()
            #expect(configuration.contains("    dvr: { hours: 1 }"))
            try await OriginProcess.withRunning(configuration: configuration, label: "dvr") { origin in
                let client = HTTPClient(port: origin.port)
                try await Task.sleep(for: .seconds(24))
                // The oldest stored slot, from a playlist that starts there.
                let all = try await client.get("/live/demo/360p/index.m3u8?start=-22")
                guard all.status == 200 else {
                    throw EndToEndError("start=-22 answered \(all.status): \(all.text)")
                }
                let playlist = try MediaPlaylist.parse(all.text)
                let first = try #require(playlist.segments.first?.programDateTime?.millisecondsSince1970)
                let edge = try #require(playlist.segments.last?.programDateTime?.millisecondsSince1970)
                #expect(edge - first >= 16_000, "\(all.text)")

                // Catch-up: 10 s that left the live window (6 segments) long ago.
                let catchUp =
                    "\(origin.baseURL)/live/demo/index.m3u8?start=\(Self.epoch(first))"
                    + "&end=\(Self.epoch(first + 10_000))"
                let (vodStatus, vodDuration, vodErrors) = try await Self.play(catchUp, origin: origin, name: "catchup")
                #expect(vodStatus == 0, "ffmpeg: \(vodErrors)")
                #expect(vodErrors.isEmpty, "ffmpeg said: \(vodErrors)")
                #expect(abs(vodDuration - 10) <= 0.5, "catch-up recording lasts \(vodDuration) s")

                // Start-over from the first slot, ending 6 s ahead: ffmpeg reads until the ENDLIST comes.
                let end = edge + 8_000
                let startOver =
                    "\(origin.baseURL)/live/demo/index.m3u8?start=\(Self.epoch(first))"
                    + "&end=\(Self.epoch(end))"
                let (status, duration, errors) = try await Self.play(startOver, origin: origin, name: "startover")
                #expect(status == 0, "ffmpeg: \(errors)")
                #expect(errors.isEmpty, "ffmpeg said: \(errors)")
                let expected = Double(end - first) / 1000
                #expect(abs(duration - expected) <= 2.5, "start-over recording lasts \(duration) s, not \(expected)")
            }
        }
    }
}
