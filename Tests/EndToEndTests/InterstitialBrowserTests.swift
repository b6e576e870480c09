import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEndInBrowser {
    /// HLS Interstitials in a real player: a pushed live channel whose `interstitials.assetList` points at a JSON
    /// asset list served by the test (a tiny Python HTTP server, CORS open) naming a 6 s VOD ad made with ffmpeg. A
    /// break is posted while hls.js 1.6 plays; hls.js must schedule it (`hls.interstitialsManager`), fetch the asset
    /// list with `_HLS_primary_id`, play the ad in an asset player and resume the live primary, with no fatal error.
    @Suite("End to end: an HLS interstitial played by hls.js in the browser", .tags(.endToEnd))
    struct InterstitialBrowserTests {
        static let adminToken = "e2e-interstitial-admin"

        static func configuration(adPort: Int) -> String {
            """
            logLevel: info
            admin:
              token: \(adminToken)
            ingest:
              autoCreate: true
            channels:
              - name: tv
                segmentDuration: 2
                window: { segments: 10 }
                interstitials:
                  assetList: "http://127.0.0.1:\(adPort)/list.json?break={id}&dur={duration}"
                  restrict: [SKIP, JUMP]
            """
        }

        /// Serves the ad directory with CORS open and logs every request line to `requests.log`.
        static let server = """
            import http.server, sys
            class Handler(http.server.SimpleHTTPRequestHandler):
                def end_headers(self):
                    self.send_header("Access-Control-Allow-Origin", "*")
                    super().end_headers()
                def log_message(self, format, *args):
                    with open("requests.log", "a") as log:
                        log.write(self.path + "\\n")
            http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
            """

        @Test("hls.js schedules the break's interstitial, plays the ad and returns to live without a fatal error")
        func hlsjsPlaysTheInterstitial() async throws {
            let adPort = try OriginProcess.freePort()
            try await OriginProcess.withRunning(
                configuration: Self.configuration(adPort: adPort), label: "interstitial"
            ) { origin in
                let client = HTTPClient(port: origin.port)
                let adDirectory = origin.directory.appendingPathComponent("ad")
                try FileManager.default.createDirectory(at: adDirectory, withIntermediateDirectories: true)
                // The ad: 6 s of another picture and tone, H.264/AAC like the primary, as a VOD playlist.
                _ = try await ChildProcess.run(
                    "ffmpeg",
                    [
                        "-nostdin", "-v", "error", "-f", "lavfi", "-i", "smptebars=size=640x360:rate=25",
                        "-f", "lavfi", "-i", "sine=frequency=880:sample_rate=48000", "-t", "6", "-map", "0:v",
                        "-map", "1:a", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "50",
                        "-c:a", "aac", "-b:a", "64k", "-ac", "2", "-f", "hls", "-hls_time", "2",
                        "-hls_playlist_type", "vod", "ad.m3u8",
                    ], in: adDirectory)
                let list = #"{"ASSETS": [{"URI": "http://127.0.0.1:\#(adPort)/ad.m3u8", "DURATION": 6}]}"#
                try Data(list.utf8).write(to: adDirectory.appendingPathComponent("list.json"))
                try Data(Self.server.utf8).write(to: adDirectory.appendingPathComponent("server.py"))
                let server = try ChildProcess(
                    executable: try #require(ChildProcess.locate("python3")),
                    arguments: ["server.py", String(adPort)], directory: adDirectory, label: "ad-server")
                defer { server.signal(SIGKILL) }

                let encoder = try ProtectedChannels.startPush(
                    port: origin.port, channel: "tv", container: .transportStream, directory: origin.directory,
                    label: "ffmpeg-push")
                defer { encoder.signal(SIGKILL) }
                _ = try await ProtectedChannels.awaitPlaylist(client: client, path: "/live/tv/hi/index.m3u8", entries: 4)

                // The break is posted 8 s into playback: hls.js, ~3 target durations behind the edge, reaches it.
                let poster = Task { () -> (status: Int, tag: String?) in
                    try await Task.sleep(for: .seconds(8))
                    let body = Array(#"{"id": "ad-1", "duration": 6, "scte35": "out"}"#.utf8)
                    let answer = try await client.request(
                        "POST", "/admin/channels/tv/dateranges",
                        headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(Self.adminToken)")],
                        body: body)
                    // The interstitial appears with the segment the break starts in.
                    for _ in 0..<20 {
                        let playlist = try await client.get("/live/tv/hi/index.m3u8").text
                        if let tag = playlist.split(separator: "\n").first(where: { $0.contains("ID=\"ad-1/interstitial\"") }) {
                            return (answer.status, String(tag))
                        }
                        try await Task.sleep(for: .seconds(1))
                    }
                    return (answer.status, nil)
                }
                var run = BrowserPlayer.Run(player: .hlsjs, url: "\(origin.baseURL)/live/tv/index.m3u8", seconds: 36)
                run.requests = true
                let report = try await BrowserPlayer.play([run], directory: origin.directory, label: "interstitial")
                let (status, tag) = try await poster.value
                #expect(status == 201)
                print("rendered: \(tag ?? "none")")
                #expect(tag?.contains("CLASS=\"com.apple.hls.interstitial\"") == true)
                #expect(
                    tag?.contains("X-ASSET-LIST=\"http://127.0.0.1:\(adPort)/list.json?break=ad-1&dur=6\"") == true)
                #expect(tag?.contains("X-RESTRICT=\"SKIP,JUMP\"") == true)

                let hlsjs = try #require(report.runs?.first)
                let events = hlsjs.state?.events ?? []
                let timeline = events.filter { $0.kind.hasPrefix("hls") || $0.detail == "playing" }
                    .map { String(format: "%7.2f ", $0.at) + "\($0.kind) \($0.detail ?? "")" }
                print("hls.js interstitial timeline:\n" + timeline.joined(separator: "\n"))
                let interstitial = events.filter { $0.kind == "hls-interstitial" }.compactMap(\.detail)
                func saw(_ name: String) -> Bool { interstitial.contains { $0.hasPrefix(name + " ") } }
                #expect(saw("ASSET_LIST_LOADED"), "\(interstitial)")
                #expect(saw("INTERSTITIAL_STARTED"), "\(interstitial)")
                #expect(saw("INTERSTITIAL_ASSET_PLAYER_CREATED"), "\(interstitial)")
                #expect(saw("INTERSTITIAL_ASSET_STARTED"), "\(interstitial)")
                #expect(saw("INTERSTITIAL_ENDED") || saw("INTERSTITIALS_PRIMARY_RESUMED"), "\(interstitial)")
                #expect(!saw("INTERSTITIAL_ASSET_ERROR"), "\(interstitial)")
                #expect(hlsjs.state?.errors.isEmpty == true, "hls.js errors: \(hlsjs.state?.errors ?? [])")
                // Primary playback continued after the ad.
                let resumed = events.last { $0.detail?.hasPrefix("INTERSTITIAL_ENDED") == true }?.at ?? .infinity
                let lastTime = hlsjs.samples?.last?.currentTime ?? 0
                #expect(resumed < (hlsjs.samples?.last?.t ?? 0) + 1000 && lastTime > 10, "\(hlsjs.startStall)")
                // The ad server saw the asset list request hls.js made (with _HLS_primary_id); the page fetched the ad.
                let requests =
                    (try? String(contentsOf: adDirectory.appendingPathComponent("requests.log"), encoding: .utf8)) ?? ""
                let adFetches = (hlsjs.network?.requests ?? []).filter { $0.url.contains(":\(adPort)/") }
                print("ad server requests:\n" + requests + "page's ad requests:\n"
                    + adFetches.map { String(format: "%7.2f ", $0.t) + "\($0.status) \($0.url)" }.joined(separator: "\n"))
                #expect(requests.contains("/list.json?break=ad-1&dur=6") && requests.contains("_HLS_primary_id="))
                #expect(adFetches.contains { $0.url.contains("/ad.m3u8?_HLS_primary_id=") && $0.status == 200 })
                #expect(adFetches.contains { $0.url.contains("/ad0.ts") && $0.status == 200 })
            }
        }
    }
}
