import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

extension EndToEndInBrowser {
    /// Real players through `config/nginx-redundant.conf` in front of a redundancy group of two origins that one
    /// ffmpeg feeds through its tee muxer, each naming the other as its peer: ffmpeg's HLS reader, GStreamer's playbin
    /// and hls.js in Chromium play the channel for 30 s while one origin is killed with SIGKILL and restarted on its
    /// port and data directory. The players must not notice: no reader error, no stall longer than a segment, no MSN
    /// that changes or jumps between the playlists nginx hands out (from either origin), and after the restart the
    /// two origins list the same entries, the slots missed while one was down included (it fetched them from its
    /// peer before answering again: docs/redundancy.md, "Restart").
    @Suite("End to end: players through nginx while one origin of a redundant pair is killed and restarted")
    struct PairPlayThroughKillTests {
        static let channel = "pk"
        static let rendition = FFmpeg.PushedRendition(name: "lo", width: 320, height: 180, videoBitrate: "200k")
        static let mediaPath = "/live/\(channel)/lo/index.m3u8"
        static let readSeconds = 30
        static let secondsBeforeKill = 9.0
        static let secondsDown = 4.0

        /// Each origin names itself in CMSD-Static (`n="pk-PORT"`), which nginx caches with the playlist: a reload
        /// through nginx says which origin wrote the copy it got.
        static func configuration(own: Int, peer: Int) -> String {
            PushedChannelConfiguration.yaml(
                channel: channel, renditions: [rendition.name],
                sections: [
                    #"delivery: { originId: "pk-\#(own)" }"#, PushedChannelConfiguration.redundancy(peers: [peer]),
                ])
        }

        /// One reload of the media playlist through nginx.
        struct Reload: Sendable {
            let time: Double
            let status: Int
            let entries: [MediaPlaylistText.Entry]
            /// The origin that wrote the playlist (CMSD-Static `n`), and nginx's X-Cache-Status (HIT, MISS, ...).
            let origin: String
            let cache: String
        }

        @Test("ffmpeg, GStreamer and hls.js through nginx: kill -9 and restart of one origin, no error, no MSN jump")
        func playersThroughAKilledOriginOfThePair() async throws {
            try await CDNTierProcesses.run(Self.scenario)
        }

        /// What two origins of the group must list identically for an MSN.
        static func facts(_ entry: MediaPlaylistText.Entry) -> String {
            "\(entry.uri) \(entry.duration) \(entry.programDateTime ?? "-") gap=\(entry.gap) "
                + "discontinuity=\(entry.discontinuity)"
        }

        /// The origin id (`n`) in a CMSD-Static value, "-" without one.
        static func originID(cmsd: String?) -> String {
            guard let cmsd, let range = cmsd.firstRange(of: "n=\"") else { return "-" }
            return String(cmsd[range.upperBound...].prefix { $0 != "\"" })
        }

        /// The newest MSN the origin on `port` lists.
        static func newestMSN(port: Int) async throws -> UInt64 {
            let answer = try await HTTPClient(port: port).get(mediaPath)
            guard answer.status == 200, let last = try MediaPlaylistText(answer.text).entries.last?.msn else {
                throw EndToEndError("\(mediaPath) on \(port): \(answer.status) \(answer.text)")
            }
            return last
        }

        /// Both origins' media playlists, asked directly: the MSNs both list, and the ones listed differently.
        static func compareOrigins(ports: [Int]) async throws -> (common: [UInt64], differing: [String]) {
            var lists: [[UInt64: String]] = []
            for port in ports {
                let answer = try await HTTPClient(port: port).get(mediaPath)
                guard answer.status == 200 else {
                    throw EndToEndError("\(mediaPath) on \(port): \(answer.status) \(answer.text)")
                }
                lists.append(
                    Dictionary(
                        try MediaPlaylistText(answer.text).entries.map { ($0.msn, facts($0)) },
                        uniquingKeysWith: { first, _ in first }))
            }
            let common = Set(lists[0].keys).intersection(lists[1].keys).sorted()
            let differing = common.filter { lists[0][$0] != lists[1][$0] }.map {
                "msn \($0): \(lists[0][$0]!) | \(lists[1][$0]!)"
            }
            return (common, differing)
        }

        static func scenario(_ processes: CDNTierProcesses) async throws {
            try await GStreamerPlayer.requireInstalled(in: try TemporaryDirectory.make("hlsorigin-e2e-gstreamer"))
            let pair = try await OriginPair.start(
                labels: ["pk-first", "pk-second"], channel: channel, renditions: [rendition], listed: 3,
                processes: processes
            ) { own, peer in configuration(own: own, peer: peer) }
            let (first, second, encoder, ports) = (pair.first, pair.second, pair.encoder, pair.ports)
            let nginx = try await EndToEndRestarts.RedundantPairTests.startNginx(
                first: ports[0], second: ports[1], directory: first.directory)
            processes.set(nginx)
            let url = "http://127.0.0.1:\(nginx.port)/live/\(channel)/index.m3u8"

            // The players, and a reload of the media playlist through nginx every 250 ms.
            let ffmpegOutput = first.directory.appendingPathComponent("reader-ffmpeg.ts")
            let reader = try FFmpeg.startRecorder(
                url: url, seconds: readSeconds, output: ffmpegOutput, directory: first.directory,
                label: "reader-ffmpeg", logLevel: "warning")
            processes.add(reader)
            let gstreamer = try GStreamerPlayer.start(
                url: url, seconds: readSeconds, directory: first.directory, label: "reader-gstreamer")
            processes.add(gstreamer)
            let browser = Task {
                try await BrowserPlayer.play(
                    [BrowserPlayer.Run(player: .hlsjs, url: url, seconds: Double(readSeconds), requests: true)],
                    directory: first.directory, label: "pk-hlsjs")
            }
            let reloads = Mutex<[Reload]>([])
            let began = Date().timeIntervalSince1970
            let poller = Task {
                let client = HTTPClient(port: nginx.port)
                while !Task.isCancelled {
                    let tick = ContinuousClock.now
                    if let answer = try? await client.get(mediaPath) {
                        let entries = answer.status == 200 ? (try? MediaPlaylistText(answer.text))?.entries ?? [] : []
                        let origin = Self.originID(cmsd: answer.header("CMSD-Static"))
                        let reload = Reload(
                            time: Date().timeIntervalSince1970 - began, status: answer.status, entries: entries,
                            origin: origin, cache: answer.header("X-Cache-Status") ?? "-")
                        reloads.withLock { $0.append(reload) }
                    }
                    try? await Task.sleep(until: tick + .milliseconds(250))
                }
            }
            defer { poller.cancel() }
            // When each origin first listed each MSN, asked directly every 100 ms: a reported jump says whether the two
            // origins published the MSNs involved at different times, and which one was late.
            let firstListed = Mutex<[UInt64: [Int: Double]]>([:])
            let direct = Task {
                while !Task.isCancelled {
                    for port in ports {
                        guard let newest = try? await newestMSN(port: port) else { continue }
                        let time = Date().timeIntervalSince1970 - began
                        firstListed.withLock { if $0[newest]?[port] == nil { $0[newest, default: [:]][port] = time } }
                    }
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
            defer { direct.cancel() }

            try await Task.sleep(for: .seconds(secondsBeforeKill))
            first.kill()
            _ = await first.child.wait(timeout: .seconds(5))
            let killedAt = Date().timeIntervalSince1970
            let survivorNewestAtKill = try await newestMSN(port: ports[1])
            try await Task.sleep(for: .seconds(secondsDown))
            let restarted = try await OriginProcess(
                configuration: configuration(own: ports[0], peer: ports[1]), label: "pk-restarted", port: ports[0],
                restarting: first.directory)
            processes.add(restarted)
            let restartedAt = Date().timeIntervalSince1970
            // Once the restarted origin serves its playlist again (it answers 503 while it catches up), and a slot
            // later, both origins list the same entries, the slots it missed while down (still in the window) included.
            let survivorNewestAtRestart = try await newestMSN(port: ports[1])
            let restartedClient = HTTPClient(port: ports[0])
            try await waitUntil(
                "the restarted origin to serve its playlist", timeout: .seconds(10), interval: .milliseconds(50)
            ) { (try? await restartedClient.get(mediaPath))?.status == 200 }
            let servingAfter = Date().timeIntervalSince1970 - restartedAt
            let missedWhileDown = Array((survivorNewestAtKill + 1)...survivorNewestAtRestart)
            for round in 0..<2 {
                let (common, differing) = try await compareOrigins(ports: ports)
                let unlisted = Set(missedWhileDown).subtracting(common).sorted()
                #expect(
                    unlisted.isEmpty,
                    "round \(round): of the MSNs published while one origin was down, \(unlisted) are not listed by both"
                )
                #expect(differing.isEmpty, "round \(round), listed differently:\n\(differing.joined(separator: "\n"))")
                try await Task.sleep(for: .seconds(2))
            }

            let report = try await browser.value
            let readerStatus = await reader.wait(timeout: .seconds(15))
            let gstreamerStatus = await gstreamer.wait(timeout: .seconds(15))
            poller.cancel()

            // ffmpeg's reader: no error, all of the 30 s of 25 fps video decodable.
            let readerLog = reader.standardOutput + reader.standardError
            #expect(readerStatus == 0, "ffmpeg reader: status \(String(describing: readerStatus))")
            let failures = EndToEndRestarts.PlayThroughRestartTests.failures(readerLog)
            #expect(failures.isEmpty, "ffmpeg reader logged:\n\(failures.prefix(20).joined(separator: "\n"))")
            let (frames, decodeErrors) = try await EndToEnd.StreamlinkTests.decode(ffmpegOutput, in: first.directory)
            #expect(decodeErrors.isEmpty, "ffprobe decoding the ffmpeg reader's output said: \(decodeErrors)")
            #expect(
                (frames["video"] ?? 0) >= (readSeconds - 2) * 25,
                "the ffmpeg reader's output decodes to \(frames) frames, not \(readSeconds) s of video")
            // GStreamer: no error, no end of stream, no stall longer than a segment.
            let summary = try GStreamerPlayer.summary(of: gstreamer)
            #expect(gstreamerStatus == 0, "GStreamer: status \(String(describing: gstreamerStatus))")
            #expect(summary.errors.isEmpty, "GStreamer posted errors: \(summary.errors)")
            #expect(!summary.eos, "GStreamer reached the end of the stream (a live stream has none)")
            #expect(summary.maxVideoStall < 2, "GStreamer's video stalled for \(summary.maxVideoStall) s")
            // hls.js: played through, no player error, every request answered.
            let hlsjs = try #require(report.runs?.first)
            #expect(hlsjs.error == nil && (hlsjs.state?.errors ?? []).isEmpty, "hls.js: \(hlsjs.account)")
            let refused = hlsjs.network?.failed ?? []
            #expect(refused.isEmpty, "hls.js requests refused or failed: \(refused.prefix(5))")
            let played = hlsjs.summary?.all.played ?? 0
            #expect(played >= Double(readSeconds) - 8, "hls.js played \(played) s: \(hlsjs.account)")

            // What nginx handed out: every reload a 200, an MSN never listed with other facts, the newest MSN never
            // going back more than the slot one origin may publish a moment before the other, never skipping.
            let all = reloads.withLock { $0 }
            let refusedReloads = all.filter { $0.status != 200 }
            #expect(refusedReloads.isEmpty, "reloads through nginx not answered 200: \(refusedReloads.prefix(5))")
            var facts: [UInt64: String] = [:]
            var changed: [String] = []
            var jumps: [String] = []
            direct.cancel()
            let published = firstListed.withLock { $0 }
            var newest: (msn: UInt64, time: Double, origin: String, cache: String)?
            for reload in all where reload.status == 200 {
                for entry in reload.entries {
                    let fact = Self.facts(entry)
                    if let earlier = facts[entry.msn], earlier != fact {
                        changed.append(
                            String(format: "%.2f s: msn \(entry.msn) ", reload.time) + "\(earlier) -> \(fact)")
                    }
                    facts[entry.msn] = fact
                }
                guard let last = reload.entries.last?.msn else { continue }
                // A reload a slot (2 s) after the previous one sees one new MSN; a poller held up longer under load
                // (the reloads are a few hundred ms apart when it runs freely) may see one per slot that passed.
                if let previous = newest {
                    let slotsPassed = UInt64(max(0, (reload.time - previous.time) / 2).rounded(.down))
                    if last > previous.msn + 1 + slotsPassed || last + 1 < previous.msn {
                        jumps.append(
                            String(format: "%.2f s: ", reload.time)
                                + "newest msn \(previous.msn) -> \(last) "
                                + String(format: "(%.2f s after the reload before)", reload.time - previous.time)
                                + " from \(previous.origin) \(previous.cache) -> \(reload.origin) \(reload.cache)"
                                + String(format: "; killed at %.2f s, restarted at %.2f s; ", killedAt - began,
                                    restartedAt - began)
                                + "first listed by the origins (port: s): "
                                + ((previous.msn + 1)...last).map { msn in
                                    "\(msn) " + (published[msn] ?? [:]).sorted { $0.key < $1.key }.map {
                                        String(format: "\($0.key): %.2f", $0.value)
                                    }.joined(separator: ", ")
                                }.joined(separator: "; "))
                    }
                }
                newest = (last, reload.time, reload.origin, reload.cache)
            }
            #expect(
                changed.isEmpty, "entries that changed between reloads:\n\(changed.prefix(10).joined(separator: "\n"))")
            #expect(jumps.isEmpty, "MSN jumps between reloads: \(jumps.prefix(10))")
            #expect(all.count >= readSeconds * 3, "only \(all.count) reloads")
            let gaps = facts.filter { $0.value.contains("gap=true") }.keys.sorted()
            #expect(gaps.isEmpty, "GAP entries listed: \(gaps)")

            // The two origins, asked directly at the end: the same entries for every MSN both list.
            let (common, differing) = try await compareOrigins(ports: ports)
            #expect(common.count >= 5 && differing.isEmpty, "listed differently at the end: \(differing)")
            let metrics = try await HTTPClient(port: ports[0]).get("/metrics").text
            let repaired =
                metrics.split(separator: "\n").first {
                    $0.hasPrefix("hlsorigin_peer_repaired_segments_total")
                }.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
            #expect(repaired >= 1, "the restarted origin repaired no slot from its peer")
            print(
                "players through a pair while one origin was killed: down "
                    + String(format: "%.1f", restartedAt - killedAt) + " s; \(all.count) reloads through nginx, all "
                    + "200, no MSN changed or jumped, no GAP; \(repaired) segments repaired from the peer after the "
                    + "restart, serving again after " + String(format: "%.2f", servingAfter) + " s, MSNs "
                    + "\(missedWhileDown) published while it was down listed identically by both; ffmpeg reader \(frames); GStreamer "
                    + "\(summary.video) video frames, longest stall " + String(format: "%.2f", summary.maxVideoStall)
                    + " s; \(hlsjs.account)")
            await nginx.stop()
            encoder.signal(SIGKILL)
            for origin in [restarted, second] {
                let status = await origin.stop()
                #expect(status == 0, "an origin did not exit cleanly: \(origin.logTail())")
            }
        }
    }
}
