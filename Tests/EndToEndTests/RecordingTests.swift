import Foundation
import Glibc
import HLSPlaylist
import TestSupport
import Testing

extension EndToEndRestarts {
    /// Recordings (docs/recordings.md): a real ffmpeg pushes two renditions; a recording of about 10 s of the live
    /// stream is posted; once it finished, the origin is killed with SIGKILL and restarted with no encoder; ffmpeg
    /// then copies `/vod/{id}/index.m3u8` to a file, to the end, and ffprobe finds the interval's duration.
    @Suite("End to end: a recording played by ffmpeg after kill -9 and a restart", .tags(.endToEnd))
    struct RecordingTests {
        static let channel = "live"
        static let configuration = """
            logLevel: warning
            ingest:
              autoCreate: false
            channels:
              - name: \(channel)
                segmentDuration: 2
                window: { segments: 6 }
                renditions: [{name: hi}, {name: lo}]
            """
        static let renditions = [
            FFmpeg.PushedRendition(name: "hi", width: 640, height: 360, videoBitrate: "500k"),
            FFmpeg.PushedRendition(name: "lo", width: 320, height: 180, videoBitrate: "200k"),
        ]

        @Test("a 10 s recording survives kill -9 and ffmpeg reads it to the end")
        func recordingPlaysAfterRestart() async throws {
            let port = try OriginProcess.freePort()
            let origin = try await OriginProcess(configuration: Self.configuration, label: "recording", port: port)
            var encoder: ChildProcess?
            var restarted: OriginProcess?
            do {
                let client = HTTPClient(port: port)
                encoder = try FFmpeg.startPush(
                    port: port, channel: Self.channel, renditions: Self.renditions, directory: origin.directory,
                    label: "encoder")
                let edge = try await Self.liveEdge(client)
                // 10 s starting 3 s behind the live edge (in the window, so the store still holds it).
                let start = edge - 3000
                let end = start + 10_000
                let body = "{\"id\":\"clip\",\"start\":\"\(Self.iso(start))\",\"end\":\"\(Self.iso(end))\"}"
                let created = try await client.request(
                    "POST", "/admin/channels/\(Self.channel)/recordings",
                    headers: [("Content-Type", "application/json")], body: Array(body.utf8))
                #expect(created.status == 201, "\(created.text)")
                try await Self.waitUntilFinished(client)
                let before = try await client.get("/vod/clip/hi/index.m3u8")
                #expect(before.status == 200)

                origin.kill()
                _ = await origin.child.wait(timeout: .seconds(5))
                encoder?.signal(SIGKILL)
                restarted = try await OriginProcess(
                    configuration: Self.configuration, label: "restarted", port: port, restarting: origin.directory)
                let after = try await client.get("/vod/clip/hi/index.m3u8")
                #expect(after.status == 200)
                #expect(after.text == before.text, "the same VOD playlist after the restart")
                let playlist = try MediaPlaylist.parse(after.text)
                #expect(playlist.playlistType == .vod && playlist.endList)
                #expect(!playlist.segments.contains { $0.gap }, "the recording has media in every slot")

                let output = origin.directory.appendingPathComponent("clip.ts")
                let copy = try await ChildProcess.run(
                    "ffmpeg",
                    [
                        "-nostdin", "-v", "error", "-y", "-i", "\(restarted!.baseURL)/vod/clip/index.m3u8", "-c",
                        "copy", output.path,
                    ], in: origin.directory, timeout: .seconds(60))
                #expect(copy.status == 0, "ffmpeg: \(copy.standardError)")
                let (duration, _) = try await FFmpeg.formatDuration(of: output, in: origin.directory)
                let listed = playlist.segments.reduce(0) { $0 + $1.duration }
                // The slots overlapping [start, end): 10 s plus at most one 2 s segment, less when the start falls
                // inside the first slot (EXT-X-START points at the start; ffmpeg copies whole segments).
                #expect(listed >= 10 && listed <= 12.5, "listed \(listed) s")
                #expect(abs(duration - listed) < 1.5, "ffprobe duration \(duration) s, listed \(listed) s")
            } catch {
                encoder?.signal(SIGKILL)
                origin.kill()
                restarted?.kill()
                throw EndToEndError(
                    "\(error)\n--- hlsorigin log tail ---\n\(origin.logTail())\n--- restarted ---\n"
                        + (restarted?.logTail() ?? ""))
            }
            encoder?.signal(SIGKILL)
            let status = await restarted?.stop()
            #expect(status == 0, "the restarted origin did not exit cleanly")
        }

        /// The end of the newest segment of `hi` (ms since the epoch), once both renditions list 3 segments (30 s
        /// at most).
        static func liveEdge(_ client: HTTPClient) async throws -> Int64 {
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                var edge: Int64?
                for name in ["lo", "hi"] {
                    let response = try await client.get("/live/\(channel)/\(name)/index.m3u8")
                    guard response.status == 200, let playlist = try? MediaPlaylist.parse(response.text),
                        playlist.segments.count >= 3, let last = playlist.segments.last,
                        let pdt = last.programDateTime
                    else {
                        edge = nil
                        break
                    }
                    edge = pdt.millisecondsSince1970 + Int64(last.duration * 1000)
                }
                if let edge { return edge }
                try await Task.sleep(for: .milliseconds(500))
            }
            throw EndToEndError("no playlist with 3 segments in both renditions within 30 s")
        }

        /// Waits (at most 40 s) until the recording's state is `finished`.
        static func waitUntilFinished(_ client: HTTPClient) async throws {
            let deadline = ContinuousClock.now + .seconds(40)
            while ContinuousClock.now < deadline {
                let response = try await client.get("/admin/channels/\(channel)/recordings/clip")
                let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
                if object?["state"] as? String == "finished" { return }
                try await Task.sleep(for: .seconds(1))
            }
            throw EndToEndError("the recording did not finish within 40 s")
        }

        static func iso(_ milliseconds: Int64) -> String {
            ProgramDateTime(millisecondsSince1970: milliseconds).formatted
        }
    }
}
