import Foundation
import Glibc
import HLSPlaylist
import TestSupport
import Testing

extension EndToEnd {
    /// `outage: slate` with a real fMP4 push: ffmpeg's HLS reader reads through a 10 s encoder outage (the encoder
    /// is killed and started again) without a failed fetch, and records about the whole time; GStreamer's playbin
    /// plays through it at the same time.
    @Suite("End to end: slate through an outage of an fMP4 push", .tags(.endToEnd))
    struct SlateOutageTests {
        static let channel = "slate"
        static let rendition = FFmpeg.PushedRendition(name: "v", width: 320, height: 180, videoBitrate: "200k")
        static let configuration = """
            logLevel: info
            ingest:
              autoCreate: false
            channels:
              - name: \(channel)
                segmentDuration: 2
                window: { segments: 30 }
                outage: slate
                renditions: [{name: v}]
            """

        /// The encoder: test pattern and tone in real time, fMP4 HLS pushed over PUT.
        static func startFragmentedMP4Push(port: Int, directory: URL, label: String) throws -> ChildProcess {
            guard let ffmpeg = ChildProcess.locate("ffmpeg") else { throw EndToEndError("ffmpeg is not on the PATH") }
            let arguments =
                FFmpeg.sourceArguments + FFmpeg.encodingArguments(rendition) + [
                    "-f", "hls", "-hls_time", "2", "-hls_list_size", "6", "-hls_flags", "delete_segments",
                    "-hls_segment_type", "fmp4", "-method", "PUT", "-http_persistent", "1",
                    "http://127.0.0.1:\(port)/ingest/\(channel)/\(rendition.name)/index.m3u8",
                ]
            return try ChildProcess(executable: ffmpeg, arguments: arguments, directory: directory, label: label)
        }

        static func playlist(_ client: HTTPClient) async throws -> MediaPlaylist? {
            let response = try await client.get("/live/\(channel)/\(rendition.name)/index.m3u8")
            guard response.status == 200 else { return nil }
            return try MediaPlaylist.parse(response.text)
        }

        @Test("ffmpeg and GStreamer read through a 10 s outage of an fMP4 push listed as slate")
        func playersReadThroughTheSlate() async throws {
            try await OriginProcess.withRunning(configuration: Self.configuration, label: "slate-fmp4") { origin in
                try await GStreamerPlayer.requireInstalled(in: origin.directory)
                let client = HTTPClient(port: origin.port)
                var encoders: [ChildProcess] = []
                var reader: ChildProcess?
                var player: ChildProcess?
                defer {
                    for encoder in encoders { encoder.signal(SIGKILL) }
                    reader?.signal(SIGKILL)
                    player?.signal(SIGKILL)
                }
                encoders.append(
                    try Self.startFragmentedMP4Push(port: origin.port, directory: origin.directory, label: "encoder-1"))
                let clock = ContinuousClock()
                let started = clock.now
                while (try await Self.playlist(client)?.segments.count ?? 0) < 3 {
                    guard clock.now - started < .seconds(30) else {
                        throw EndToEndError("no three segments within 30 s: \(encoders[0].standardError)")
                    }
                    try await Task.sleep(for: .milliseconds(200))
                }
                let recording = origin.directory.appendingPathComponent("reader.ts")
                let seconds = 24
                reader = try FFmpeg.startRecorder(
                    url: "\(origin.baseURL)/live/\(Self.channel)/\(Self.rendition.name)/index.m3u8", seconds: seconds,
                    output: recording, directory: origin.directory, label: "reader", logLevel: "warning")
                player = try GStreamerPlayer.start(
                    url: "\(origin.baseURL)/live/\(Self.channel)/\(Self.rendition.name)/index.m3u8", seconds: seconds,
                    directory: origin.directory, label: "gstreamer")
                try await Task.sleep(for: .seconds(4))
                #expect(encoders[0].standardError.isEmpty, "encoder 1 said: \(encoders[0].standardError)")
                encoders[0].signal(SIGKILL)
                try await Task.sleep(for: .seconds(10))
                encoders.append(
                    try Self.startFragmentedMP4Push(port: origin.port, directory: origin.directory, label: "encoder-2"))

                let readerStatus = await reader!.wait(timeout: .seconds(40))
                let readerLog = reader!.standardError
                let playerStatus = await player!.wait(timeout: .seconds(20))
                let summary = try GStreamerPlayer.summary(of: player!)
                let playlist = try #require(try await Self.playlist(client))

                // The outage is listed as slate: no GAP, a discontinuity where it starts and where the encoder returns.
                #expect(playlist.segments.allSatisfy { !$0.gap }, "GAP entries in slate mode")
                let discontinuities = playlist.segments.enumerated().filter(\.element.discontinuity).map(\.offset)
                #expect(discontinuities.count >= 2, "discontinuities at \(discontinuities)")
                if discontinuities.count >= 2 {
                    // 10 s of outage on 2 s slots: about 4-6 slate segments between the two joins.
                    let slate = discontinuities[1] - discontinuities[0]
                    #expect((3...7).contains(slate), "\(slate) slate segments")
                }

                // ffmpeg read through without a failed fetch and recorded about the whole time.
                #expect(readerStatus == 0, "ffmpeg reader: status \(String(describing: readerStatus))")
                let failures = readerLog.split(separator: "\n").filter {
                    $0.contains("HTTP error") || $0.contains("Failed to open segment") || $0.contains("Error")
                }
                #expect(failures.isEmpty, "ffmpeg reader logged:\n\(failures.joined(separator: "\n"))")
                let (recorded, probeErrors) = try await FFmpeg.formatDuration(of: recording, in: origin.directory)
                #expect(probeErrors.isEmpty, "ffprobe of the reader's recording: \(probeErrors)")
                #expect(recorded >= Double(seconds) - 3, "recorded \(recorded) s of \(seconds)")
                // GStreamer played on: no error, no end of stream, and no stall like the 12 s it showed on GAP URLs
                // that answered 404.
                #expect(playerStatus == 0, "GStreamer: status \(String(describing: playerStatus)), \(summary.errors)")
                #expect(summary.errors.isEmpty, "GStreamer errors: \(summary.errors)")
                #expect(summary.maxVideoStall < 4, "GStreamer's picture stalled \(summary.maxVideoStall) s")
                // 25 fps outside the slate (less start-up), about one still frame a second through its 10 s.
                #expect(summary.video >= (seconds - 16) * 25, "GStreamer decoded \(summary.video) frames")
                print(
                    "GStreamer: \(summary.video) video frames, \(summary.audio) audio buffers in \(seconds) s, longest "
                        + "stall \(String(format: "%.2f", summary.maxVideoStall)) s, warnings \(summary.warnings)")
                print(
                    "slate through a 10 s outage of an fMP4 push: recorded \(String(format: "%.1f", recorded)) s of "
                        + "\(seconds), discontinuities at \(discontinuities) of \(playlist.segments.count) entries, "
                        + "reader log (warning level):\n\(readerLog)")
            }
        }
    }
}
