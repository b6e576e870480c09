import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEndInBrowser {
    /// A tokenized, encrypted live channel in real browser players: hls.js 1.6 (variable substitution, AES-128 with
    /// WebCrypto) in Debian's headless chromium, in both the `import` and the `queryparam` form, across key
    /// rotations; and chromium's own HLS where the browser reports it (recorded, not required: see docs/playback.md).
    @Suite("End to end: tokenized encrypted playback in the browser", .tags(.endToEnd))
    struct BrowserPlaybackTests {
        static func configuration(form: String) -> String {
            """
            logLevel: info
            ingest:
              autoCreate: true
            channels:
              - name: tv
                segmentDuration: 2
                window: { segments: 10 }
                encryption: { method: AES-128, rotateEvery: 2 }
                playback:
                  authorization: token
                  form: \(form)
                  secret: "end-to-end playback secret for the browser test, 32+ bytes"
            """
        }

        @Test("import form: hls.js plays 20 s across 3 key rotations, no ERROR, no 403; native HLS recorded")
        func importForm() async throws {
            try await play(form: "import", nativeRequired: true)
        }

        @Test("queryparam form: hls.js plays 20 s across 3 key rotations, no ERROR, no 403; native HLS recorded")
        func queryParameterForm() async throws {
            try await play(form: "queryparam", nativeRequired: false)
        }

        /// `nativeRequired`: chromium's own HLS must play too when the browser reports HLS support (measured:
        /// chromium 156 plays EXT-X-VERSION 8 with IMPORT, and refuses to parse version 11 playlists).
        func play(form: String, nativeRequired: Bool) async throws {
            try await OriginProcess.withRunning(
                configuration: Self.configuration(form: form), label: "browser-\(form)"
            ) { origin in
                let client = HTTPClient(port: origin.port)
                let encoder = try ProtectedChannels.startPush(
                    port: origin.port, channel: "tv", container: .transportStream, directory: origin.directory,
                    label: "ffmpeg-push")
                defer { encoder.signal(SIGKILL) }
                _ = try await ProtectedChannels.awaitPlaylist(
                    client: client, path: "/live/tv/hi/index.m3u8" + (form == "queryparam" ? "?token=x" : ""),
                    entries: 4)
                let token = try await ProtectedChannels.issueToken(client: client, channel: "tv", ttlSeconds: 900)
                let url = "\(origin.baseURL)/live/tv/index.m3u8?token=\(token)"

                // The test reloads the playlists as a player does meanwhile and applies the rules to each text.
                let polling = Task { () -> (violations: [String], checked: Int) in
                    let rules = ProtectedPlaylistRules()
                    while !Task.isCancelled {
                        let multivariantPath = "/live/tv/index.m3u8?token=\(token)"
                        let mediaPath = "/live/tv/hi/index.m3u8" + (form == "queryparam" ? "?token=\(token)" : "")
                        if let multivariant = try? await client.get(multivariantPath),
                            let media = try? await client.get(mediaPath)
                        {
                            rules.multivariant(path: multivariantPath, text: multivariant.text)
                            rules.media(path: mediaPath, text: media.text, imports: ["token": token])
                        }
                        try? await Task.sleep(for: .seconds(2))
                    }
                    return (rules.finish(), rules.checked)
                }
                let report = try await BrowserPlayer.play(
                    [
                        BrowserPlayer.Run(player: .hlsjs, url: url, seconds: 26),
                        BrowserPlayer.Run(player: .native, url: url, seconds: 14),
                    ], directory: origin.directory, label: "browser-\(form)")
                polling.cancel()
                let (violations, checked) = await polling.value

                let hlsjs = try #require(report.runs?.first)
                let events = hlsjs.state?.events ?? []
                let hlsErrors = events.filter { $0.kind == "hls-error" }.map { $0.detail ?? "" }
                // Non-fatal buffer stalls are how hls.js reports waiting at the live edge; anything else is a failure.
                let failures = hlsErrors.filter {
                    !$0.contains("bufferStalledError") && !$0.contains("bufferNudgeOnStall")
                }
                #expect(hlsjs.error == nil, "\(hlsjs.account)")
                #expect(
                    failures.isEmpty && (hlsjs.state?.errors ?? []).isEmpty, "hls.js: \(hlsErrors) \(hlsjs.account)")
                let played = hlsjs.summary?.all.played ?? 0
                #expect(played >= 20, "hls.js played \(played) s: \(hlsjs.account)")
                let keysLoaded = Set(events.filter { $0.kind == "hls-key" }.compactMap(\.detail))
                #expect(keysLoaded.count >= 3, "hls.js loaded keys \(keysLoaded.sorted())")
                #expect(keysLoaded.allSatisfy { $0.contains("token=\(token)") }, "\(keysLoaded.sorted())")
                let refused = (hlsjs.network?.failed ?? []).filter { $0.status == 403 || $0.status == 0 }
                #expect(
                    refused.isEmpty, "hls.js requests refused or failed: \(refused.map { "\($0.status) \($0.url)" })")

                let nativeHLS = report.capabilities?.nativeHLS ?? ""
                var nativeAccount = "not available (canPlayType '\(nativeHLS)')"
                if !nativeHLS.isEmpty, let native = report.runs?.last {
                    let nativePlayed = native.summary?.all.played ?? 0
                    nativeAccount =
                        "played \(String(format: "%.1f", nativePlayed)) s, errors \(native.state?.errors ?? []), "
                        + "refused \((native.network?.failed ?? []).map { "\($0.status) \($0.url)" })"
                    if nativeRequired {
                        #expect(nativePlayed >= 8, "chromium's own HLS: \(nativeAccount)")
                        #expect(
                            !(native.network?.failed ?? []).contains { $0.status == 403 }, "native: \(nativeAccount)")
                    }
                }
                #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
                print(
                    "browser \(form) (\(report.browser ?? "?")): hls.js played \(String(format: "%.1f", played)) s "
                        + "across \(keysLoaded.count) keys, \(hlsjs.network?.responses ?? 0) responses, none refused; "
                        + "chromium native HLS: \(nativeAccount); \(checked) playlists passed rules 30/33/36")
            }
        }
    }
}
