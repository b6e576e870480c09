import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEnd {
    /// Playback authorization over HTTP: without a valid token the multivariant playlist, segments, init sections
    /// and keys of a protected channel answer 403 with the reason, while media playlists stay public and keep
    /// updating and an ffmpeg reader of an unprotected channel on the same origin is not disturbed.
    @Suite("End to end: playback tokens", .tags(.endToEnd))
    struct PlaybackTokenTests {
        static let configuration = """
            logLevel: info
            ingest:
              autoCreate: true
              defaults:
                segmentDuration: 2
                window: { segments: 10 }
            channels:
              - name: paid
                segmentDuration: 2
                window: { segments: 10 }
                encryption: { method: AES-128, rotateEvery: 2 }
                playback:
                  authorization: token
                  form: import
                  secret: "end-to-end playback secret of the paid channel, 32+ bytes"
              - name: other
                playback:
                  authorization: token
                  secret: "end-to-end playback secret of another channel, 32+ bytes"
              - name: free
                source: test-source
                segmentDuration: 2
                window: { segments: 6 }
                renditions:
                  - { name: 360p, profile: 360p }
            """

        /// The recipe docs/playback.md gives a backend, run by Python: prints a token for `argv[2]` valid for
        /// `argv[3]` seconds under the secret `argv[1]` (its UTF-8 bytes).
        static let pythonRecipe = """
            import base64, hashlib, hmac, sys, time

            def playback_token(secret: bytes, channel: str, ttl_seconds: int) -> str:
                expiry = int(time.time()) + ttl_seconds
                message = f"hlsorigin-playback-v1\\n{channel}\\n{expiry}".encode()
                mac = hmac.new(secret, message, hashlib.sha256).digest()[:16]
                return f"{expiry}-{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}"

            print(playback_token(sys.argv[1].encode(), sys.argv[2], int(sys.argv[3])))
            """

        /// A token whose MAC has one character changed (same length, same alphabet, still well-formed).
        static func tampered(_ token: String) -> String {
            var characters = Array(token)
            // A character inside the MAC: the last one carries only 2 bits, and changing its unused bits is malformed.
            let index = characters.count - 5
            characters[index] = characters[index] == "A" ? "B" : "A"
            return String(characters)
        }

        @Test("No, expired, foreign and tampered tokens: 403 with the reason on multivariant, segment, init and key")
        func refusals() async throws {
            try await OriginProcess.withRunning(configuration: Self.configuration, label: "tokens") { origin in
                let client = HTTPClient(port: origin.port)
                let encoder = try ProtectedChannels.startPush(
                    port: origin.port, channel: "paid", container: .fragmentedMP4, directory: origin.directory,
                    label: "ffmpeg-push")
                defer { encoder.signal(SIGKILL) }
                // The undisturbed neighbour: ffmpeg reading the unprotected test-source channel throughout.
                _ = try await ProtectedChannels.awaitPlaylist(
                    client: client, path: "/live/free/360p/index.m3u8", entries: 3)
                let neighbourOutput = origin.directory.appendingPathComponent("free.ts")
                let neighbour = try FFmpeg.startRecorder(
                    url: "\(origin.baseURL)/live/free/index.m3u8", seconds: 24, output: neighbourOutput,
                    directory: origin.directory, label: "ffmpeg-free", logLevel: "warning")
                defer { neighbour.signal(SIGKILL) }

                let mediaPath = "/live/paid/hi/index.m3u8"
                let before = try await ProtectedChannels.awaitPlaylist(client: client, path: mediaPath, entries: 3)
                let rules = ProtectedPlaylistRules()
                let valid = try await ProtectedChannels.issueToken(client: client, channel: "paid", ttlSeconds: 600)
                let shortLived = try await ProtectedChannels.issueToken(client: client, channel: "paid", ttlSeconds: 2)
                let issuedShort = ContinuousClock.now
                let foreign = try await ProtectedChannels.issueToken(client: client, channel: "other", ttlSeconds: 600)

                // A valid token opens everything; the media playlist is the same for every viewer.
                let multivariantPath = "/live/paid/index.m3u8"
                let multivariant = try await client.get("\(multivariantPath)?token=\(valid)")
                #expect(multivariant.status == 200, "\(multivariant.status) \(multivariant.text)")
                #expect(
                    multivariant.text.contains(#"#EXT-X-DEFINE:NAME="token",VALUE="\#(valid)""#),
                    "\(multivariant.text)")
                #expect(multivariant.header("Cache-Control")?.contains("no-store") == true)
                rules.multivariant(path: "\(multivariantPath)?token=\(valid)", text: multivariant.text)
                let mediaAnswer = try await client.get(mediaPath)
                #expect(mediaAnswer.status == 200)
                rules.media(path: mediaPath, text: mediaAnswer.text, imports: ["token": valid])
                let media = try MediaPlaylistText(mediaAnswer.text)
                #expect(media.definitions.contains { $0["IMPORT"] == "token" }, "\(media.text)")
                #expect(media.version == 8, "\(media.text)")
                let entry = try #require(media.entries.last { !$0.gap })
                #expect(entry.uri.hasSuffix("?token={$token}"), "\(entry.uri)")
                func resolved(_ uri: String?, token: String?) throws -> String {
                    let path = PlaylistURL.resolve(try #require(uri), against: mediaPath, variables: ["token": "T"])
                    let bare = String(path.split(separator: "?").first!)
                    return token.map { "\(bare)?token=\($0)" } ?? bare
                }
                let protected: [(String, String?)] = [
                    ("multivariant", multivariantPath), ("segment", entry.uri), ("init", entry.mapURI),
                    ("key", entry.keyURI),
                ]
                func path(_ kind: String, _ uri: String?, token: String?) throws -> String {
                    if kind == "multivariant" {
                        return token.map { "\(multivariantPath)?token=\($0)" } ?? multivariantPath
                    }
                    return try resolved(uri, token: token)
                }
                // A backend's token (docs/playback.md's Python recipe) is as good as the admin API's.
                let recipe = try await ChildProcess.run(
                    "/usr/bin/python3",
                    [
                        "-c", Self.pythonRecipe, "end-to-end playback secret of the paid channel, 32+ bytes", "paid",
                        "300",
                    ],
                    in: origin.directory)
                let backendToken = recipe.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
                let byRecipe = try await client.get("\(multivariantPath)?token=\(backendToken)")
                #expect(
                    byRecipe.status == 200,
                    "the recipe's token '\(backendToken)' \(recipe.standardError): \(byRecipe.status) \(byRecipe.text)")
                for (kind, uri) in protected {
                    let answer = try await client.get(try path(kind, uri, token: valid))
                    #expect(
                        answer.status == 200, "\(kind) with a valid token: \(answer.status) \(answer.text.prefix(200))")
                }

                // The short-lived token works until it expires.
                let early = try await client.get(try path("segment", entry.uri, token: shortLived))
                #expect(early.status == 200, "a token 2 s from expiry: \(early.status) \(early.text.prefix(200))")
                try await Task.sleep(until: issuedShort + .milliseconds(3500))

                let cases: [(name: String, token: String?, reason: String)] = [
                    ("no token", nil, "playback token missing"),
                    ("expired", shortLived, "playback token expired at "),
                    ("another channel's", foreign, "signature does not match channel 'paid'"),
                    ("tampered", Self.tampered(valid), "signature does not match channel 'paid'"),
                ]
                var refused = 0
                for refusal in cases {
                    for (kind, uri) in protected {
                        let target = try path(kind, uri, token: refusal.token)
                        let answer = try await client.get(target)
                        #expect(answer.status == 403, "\(refusal.name) on \(kind) \(target): \(answer.status)")
                        #expect(
                            answer.text.contains(refusal.reason),
                            "\(refusal.name) on \(kind): reason '\(answer.text)', expected '\(refusal.reason)'")
                        #expect(answer.header("Access-Control-Allow-Origin") == "*", "\(refusal.name) on \(kind)")
                        if answer.status == 403 { refused += 1 }
                    }
                }
                // A key period far ahead is not served, even with a valid token.
                let future = try await client.get("/live/paid/key-999999.key?token=\(valid)")
                #expect(future.status == 404, "a future key period: \(future.status) \(future.text)")

                // Nothing disturbed: the protected channel's playlists kept updating, the neighbour kept reading.
                let after = try await ProtectedChannels.awaitPlaylist(client: client, path: mediaPath, entries: 3)
                #expect(
                    (after.entries.last?.msn ?? 0) > (before.entries.last?.msn ?? 0),
                    "the paid channel's playlist did not move: \(before.entries.last?.msn ?? 0)")
                rules.media(path: mediaPath, text: after.text, imports: ["token": valid])
                let stillValid = try await client.get("\(multivariantPath)?token=\(valid)")
                #expect(stillValid.status == 200)
                rules.multivariant(path: "\(multivariantPath)?token=\(valid)", text: stillValid.text)
                let status = await neighbour.wait(timeout: .seconds(40))
                #expect(status == 0, "ffmpeg reading the free channel: \(neighbour.standardError.suffix(2000))")
                let (duration, _) = try await FFmpeg.formatDuration(of: neighbourOutput, in: origin.directory)
                #expect(duration >= 22, "the free channel's reader wrote \(duration) s of 24")
                let neighbourFrames = try await ProtectedChannels.expectDecodes(neighbourOutput, in: origin.directory)
                #expect(neighbourFrames.errors.isEmpty, "\(neighbourFrames.errors.prefix(1000))")
                let violations = rules.finish()
                #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
                print(
                    "playback tokens: \(refused) of \(cases.count * protected.count) refusals answered 403 with the "
                        + "reason; paid channel moved from MSN \(before.entries.last?.msn ?? 0) to "
                        + "\(after.entries.last?.msn ?? 0); the free channel's reader wrote "
                        + String(format: "%.1f", duration)
                        + " s and decoded \(neighbourFrames.pictureTypes.count) frames")
            }
        }
    }
}
