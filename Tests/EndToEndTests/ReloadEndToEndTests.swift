import Foundation
import Glibc
import HLSPlaylist
import TestSupport
import Testing

extension EndToEnd {
    /// Reload without restart (docs/reload.md): the real binary with a configuration file, a real
    /// ffmpeg pushing into one channel and the test source feeding another. The file is rewritten (the pushed
    /// channel's window lengthened, a channel added, one removed) and the origin gets SIGHUP: the pushed channel keeps
    /// its MSNs with no jump, no GAP, no discontinuity and no refused push; the test-source channel is not touched;
    /// the new channel plays, the removed one answers 404. A file that does not validate is refused (log and
    /// `POST /admin/reload` say why) and everything keeps being served.
    @Suite("End to end: reload without restart (SIGHUP, POST /admin/reload)", .tags(.endToEnd))
    struct ReloadEndToEndTests {
        static func configuration(liveWindow: Int, channels: [String]) -> String {
            var text = """
                logLevel: info
                ingest:
                  autoCreate: false
                channels:
                  - name: live
                    segmentDuration: 2
                    window: { segments: \(liveWindow) }
                    renditions: [{name: hi}]

                """
            for name in channels {
                text += """
                      - name: \(name)
                        source: test-source
                        segmentDuration: 2
                        window: { segments: 4 }
                        renditions: [{name: 360p, profile: 360p}]

                    """
            }
            return text
        }

        @Test("SIGHUP: a channel changed, one added, one removed; the pushed one keeps its MSNs; a bad file is refused")
        func sighupAppliesTheFileWithoutTouchingTheOthers() async throws {
            try await OriginProcess.withRunning(
                configuration: Self.configuration(liveWindow: 4, channels: ["steady", "old"]), label: "reload"
            ) { origin in
                let client = HTTPClient(port: origin.port)
                let encoder = try FFmpeg.startPush(
                    port: origin.port, channel: "live",
                    renditions: [FFmpeg.PushedRendition(name: "hi", width: 640, height: 360, videoBitrate: "500k")],
                    directory: origin.directory, label: "encoder")
                defer { encoder.signal(SIGKILL) }
                func playlist(_ path: String) async throws -> MediaPlaylist? {
                    let response = try await client.get(path)
                    return response.status == 200 ? try MediaPlaylist.parse(response.text) : nil
                }
                try await waitUntil("4 segments of live/hi", timeout: .seconds(20), interval: .milliseconds(200)) {
                    ((try? await playlist("/live/live/hi/index.m3u8"))??.segments.count ?? 0) >= 4
                }
                let steadyBefore = try #require(try await playlist("/live/steady/360p/index.m3u8"))
                let liveBefore = try #require(try await playlist("/live/live/hi/index.m3u8"))

                // Follow live/hi every 250 ms from before the reload to after it.
                let configURL = origin.directory.appendingPathComponent("config.yaml")
                try Data(Self.configuration(liveWindow: 8, channels: ["steady", "added"]).utf8).write(to: configURL)
                let reloadedAt = ContinuousClock.now
                origin.child.signal(SIGHUP)
                var entries: [UInt64: (uri: String, pdt: String?, gap: Bool, discontinuity: Bool)] = [:]
                var problems: [String] = []
                while ContinuousClock.now - reloadedAt < .seconds(12) {
                    if let listed = try await playlist("/live/live/hi/index.m3u8") {
                        for (offset, segment) in listed.segments.enumerated() {
                            let msn = listed.mediaSequence + UInt64(offset)
                            let entry = (
                                segment.uri, segment.programDateTime?.formatted, segment.gap, segment.discontinuity
                            )
                            if let seen = entries[msn], seen.uri != entry.0 || seen.pdt != entry.1 {
                                problems.append("MSN \(msn) changed: \(seen) then \(entry)")
                            }
                            entries[msn] = entry
                        }
                    } else {
                        problems.append("live/hi/index.m3u8 not served at \(ContinuousClock.now - reloadedAt)")
                    }
                    try await Task.sleep(for: .milliseconds(250))
                }
                let log = origin.child.standardError
                #expect(log.contains("configuration reloaded"), "no reload in the log:\n\(origin.logTail())")
                #expect(problems.isEmpty, "\(problems.prefix(10))")
                let msns = entries.keys.sorted()
                #expect(msns == Array((msns.first ?? 0)...(msns.last ?? 0)), "MSNs jumped: \(msns)")
                #expect(msns.first.map { $0 <= liveBefore.mediaSequence } == true)
                let marked = entries.filter { $0.value.gap || $0.value.discontinuity }.map(\.key).sorted()
                #expect(marked.isEmpty, "GAP or DISCONTINUITY at \(marked)")
                let liveAfter = try #require(try await playlist("/live/live/hi/index.m3u8"))
                #expect(liveAfter.segments.count > 4, "the window did not grow: \(liveAfter.segments.count)")
                #expect(encoder.isRunning, "ffmpeg stopped: \(encoder.standardError)")
                #expect(encoder.standardError.isEmpty, "ffmpeg said: \(encoder.standardError)")

                // The untouched channel continued; the added one plays; the removed one is gone.
                let steadyAfter = try #require(try await playlist("/live/steady/360p/index.m3u8"))
                #expect(steadyAfter.mediaSequence > steadyBefore.mediaSequence)
                #expect(!steadyAfter.segments.contains { $0.discontinuity || $0.gap }, "\(steadyAfter.render())")
                try await waitUntil("added/360p", timeout: .seconds(10), interval: .milliseconds(200)) {
                    ((try? await playlist("/live/added/360p/index.m3u8"))??.segments.count ?? 0) >= 1
                }
                #expect(try await client.get("/live/old/360p/index.m3u8").status == 404)

                // A file that does not validate: refused, said why, the running configuration stays.
                try Data("channels:\n  - name: live\n    windw: 3\n".utf8).write(to: configURL)
                origin.child.signal(SIGHUP)
                try await Task.sleep(for: .milliseconds(500))
                let refused = try await client.request("POST", "/admin/reload")
                #expect(refused.status == 422, "\(refused.status) \(refused.text)")
                #expect(refused.text.contains("unknown key 'windw'"), "\(refused.text)")
                #expect(origin.child.standardError.contains("configuration reload refused"), "\(origin.logTail())")
                #expect(try await client.get("/live/added/360p/index.m3u8").status == 200)
                #expect(try await client.get("/live/live/hi/index.m3u8").status == 200)
                print(
                    "reload: live/hi followed over MSNs \(msns.first ?? 0)...\(msns.last ?? 0) across SIGHUP: no "
                        + "jump, no GAP, no DISCONTINUITY, window \(liveBefore.segments.count) -> "
                        + "\(liveAfter.segments.count); steady \(steadyBefore.mediaSequence) -> "
                        + "\(steadyAfter.mediaSequence) untouched; added served, old 404; bad file: POST "
                        + "\(refused.status) \(refused.text.trimmingCharacters(in: .whitespacesAndNewlines))")
            }
        }
    }
}
