import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEndRestarts {
    /// `config/nginx-redundant.conf` in front of a pair of origins (a redundancy group) that one ffmpeg feeds the
    /// same segments (its tee muxer, as an encoder feeding a redundant pair does). A player through nginx reloads the media playlist and
    /// fetches every new segment every 0.5 s while one origin is killed with SIGKILL and then restarted on its port
    /// and data directory: every answer it gets is a 200; nginx's log shows both origins answering before the kill,
    /// requests passed from the dead origin to the other and only the other answering during the outage, and the
    /// restarted origin answering again. Low-Latency through the pair: concurrent blocking reloads and hinted parts
    /// are collapsed by nginx's cache lock, and a 503 to a blocking request goes back to the player instead of to the other
    /// origin (and never takes an origin out of rotation), while a 503 to anything else is passed on.
    @Suite("End to end: nginx in front of a redundant pair of origins", .tags(.endToEnd))
    struct RedundantPairTests {
        static let channel = "pair"
        static let rendition = FFmpeg.PushedRendition(name: "lo", width: 320, height: 180, videoBitrate: "200k")
        static let mediaPath = "/live/\(channel)/lo/index.m3u8"
        /// A redundancy group (docs/redundancy.md, "One timeline for the group"), as a pair behind a CDN should be.
        static let configuration = PushedChannelConfiguration.yaml(
            channel: channel, renditions: [rendition.name], sections: [PushedChannelConfiguration.redundancy()])

        @Test("a player through nginx gets only 200s while one origin of the pair is killed (-9) and restarted")
        func playerThroughAKilledAndRestartedOrigin() async throws {
            try await CDNTierProcesses.run(Self.scenario)
        }

        static func scenario(_ processes: CDNTierProcesses) async throws {
            let pair = try await OriginPair.start(
                labels: ["pair-first", "pair-second"], channel: channel, renditions: [rendition], listed: 2,
                processes: processes, configuration: configuration)
            let (first, second, encoder) = (pair.first, pair.second, pair.encoder)
            let nginx = try await startNginx(first: first.port, second: second.port, directory: first.directory)
            processes.set(nginx)
            let (a, b) = ("127.0.0.1:\(first.port)", "127.0.0.1:\(second.port)")
            let began = ContinuousClock.now
            let player = CDNPlayer(port: nginx.port, playlists: [mediaPath], interval: .milliseconds(500))
            processes.set(player)

            // Both origins take requests (round robin) while both are up.
            try await waitUntil(
                "both origins to answer through nginx", timeout: .seconds(15), interval: .milliseconds(100)
            ) {
                Set(nginx.accessLog().filter { $0.status == 200 }.compactMap(\.answeredBy)).isSuperset(of: [a, b])
            }
            first.kill()
            _ = await first.child.wait(timeout: .seconds(5))
            let killedAt = Date().timeIntervalSince1970
            // The outage lasts until the player fetched two new segments and nginx passed a request from the dead
            // origin to the other (round robin sends it one of the next two).
            try await waitUntil(
                "two segments fetched and a request passed from the dead origin to the other", timeout: .seconds(20),
                interval: .milliseconds(100)
            ) {
                player.log.filter { !$0.isPlaylist && $0.time > killedAt }.count >= 2
                    && nginx.accessLog().contains { $0.isAfter(killedAt) && $0.upstreams == [a, b] }
            }
            let restartingAt = Date().timeIntervalSince1970
            let restarted = try await restart(first)
            processes.add(restarted)
            // nginx tries the dead origin again once its fail_timeout (5 s) has passed.
            try await waitUntil(
                "the restarted origin to answer through nginx", timeout: .seconds(20), interval: .milliseconds(100)
            ) {
                nginx.accessLog().contains { $0.isAfter(restartingAt) && $0.answeredBy == a && $0.status == 200 }
            }
            let backAt = Date().timeIntervalSince1970
            try await waitUntil(
                "a segment fetched after the restarted origin answered", timeout: .seconds(10),
                interval: .milliseconds(100)
            ) {
                player.log.contains { !$0.isPlaylist && $0.time > backAt }
            }
            await player.stop()
            let seconds = Double((ContinuousClock.now - began).components.seconds)
            let fetches = player.log
            let log = nginx.accessLog()

            // The player: a 200 for every request, playlists and segments alike, through the whole run.
            let failed = fetches.filter { $0.status != 200 }
            #expect(
                failed.isEmpty, "\(failed.count) of \(fetches.count) requests not answered 200: \(failed.prefix(5))")
            let playlists = fetches.filter(\.isPlaylist).count
            let segments = fetches.filter { !$0.isPlaylist }
            let segmentsInOutage = segments.filter { $0.time > killedAt && $0.time < restartingAt }.count
            #expect(Double(playlists) >= 1.5 * seconds, "\(playlists) playlist reloads in \(seconds) s")
            #expect(segmentsInOutage >= 2, "\(segmentsInOutage) segments fetched while an origin was down")
            #expect(segments.allSatisfy { $0.bytes > 0 }, "an empty segment: \(segments.filter { $0.bytes == 0 })")
            // nginx: no 5xx to anyone; before the kill both origins answered; meanwhile only the survivor did (what
            // nginx sent to the dead one failed at connect and was passed on); after the restart, both again.
            let errors = log.filter { $0.status >= 500 }
            #expect(errors.isEmpty, "nginx answered \(errors.count) requests with 5xx: \(errors.prefix(5))")
            let before = Set(log.filter { $0.time < killedAt && $0.status == 200 }.compactMap(\.answeredBy))
            #expect(before == [a, b], "answered by \(before) before the kill")
            // (Lines written in the first 0.2 s after the kill may be answers the dead origin sent before it died.)
            let outage = log.filter { $0.isAfter(killedAt + 0.2) && $0.time < restartingAt && !$0.upstreams.isEmpty }
            // (304: nginx revalidated its expired copy, proxy_cache_revalidate.)
            let notSurvivor = outage.filter {
                $0.answeredBy != b || !["200", "304"].contains($0.upstreamStatuses.last)
            }
            #expect(outage.count >= 3, "\(outage.count) requests reached an origin during the outage")
            #expect(notSurvivor.isEmpty, "during the outage, answered otherwise than by \(b): \(notSurvivor)")
            let passedOn = log.filter { $0.isAfter(killedAt) && $0.time < restartingAt && $0.upstreams == [a, b] }
            #expect(
                !passedOn.isEmpty
                    && passedOn.allSatisfy {
                        $0.upstreamStatuses == ["502", "200"] || $0.upstreamStatuses == ["502", "304"]
                    },
                "requests passed on from the dead origin: \(passedOn.map(\.upstreamStatuses))")
            let after = Set(log.filter { $0.isAfter(restartingAt) && $0.status == 200 }.compactMap(\.answeredBy))
            #expect(after == [a, b], "answered by \(after) after the restart")
            #expect(encoder.isRunning, "ffmpeg stopped: \(encoder.standardError)")

            // Only players' requests pass: a push, the admin API and the metrics are refused by nginx itself.
            let client = HTTPClient(port: nginx.port)
            let refusals = [
                try await client.request("PUT", "/ingest/\(channel)/lo/index9.ts", body: [0x47]).status,
                try await client.get("/admin/channels").status,
                try await client.get("/metrics").status,
            ]
            #expect(refusals == [405, 403, 403], "PUT /ingest, GET /admin/channels, GET /metrics: \(refusals)")
            let refusedLines = nginx.accessLog().filter { !$0.uri.hasPrefix("/live/") }
            #expect(
                refusedLines.count == 3 && refusedLines.allSatisfy(\.upstreams.isEmpty),
                "requests outside /live: \(refusedLines)")

            let msns = try await listedMSNs(ports: [restarted.port, second.port])
            // Same numbering after the restart (a shared timeline): the newest MSNs differ by at most the slot one
            // of the two reads may have missed.
            let newest = msns.map { Int64($0.last ?? 0) }
            #expect(abs(newest[0] - newest[1]) <= 1, "MSNs listed after the restart: \(msns)")
            let slowest = outage.map(\.requestTime).max() ?? 0
            print(
                "nginx in front of a pair, \(Int(seconds)) s: \(playlists) playlist reloads and \(segments.count) "
                    + "segments through nginx, all 200; outage of \(String(format: "%.1f", restartingAt - killedAt)) "
                    + "s: \(outage.count) requests reached an origin, all answered by the survivor, \(passedOn.count) "
                    + "passed on from the dead one (slowest \(String(format: "%.3f", slowest)) s); the restarted "
                    + "origin answered again \(String(format: "%.1f", backAt - restartingAt)) s after its restart; "
                    + "MSNs listed: first \(msns[0]), second \(msns[1])")

            await nginx.stop()
            encoder.signal(SIGKILL)
            for origin in [restarted, second] {
                let status = await origin.stop()
                #expect(status == 0, "an origin did not exit cleanly: \(origin.logTail())")
            }
        }

        /// An LL test-source channel, for the tests of blocking requests.
        static let lowLatencyConfiguration = """
            logLevel: info
            channels:
              - name: ll
                source: test-source
                segmentDuration: 2
                window: { segments: 6 }
                lowLatency: { partTarget: 0.4 }
                renditions: [{ name: lo, profile: 180p }]
            """
        static let lowLatencyPath = "/live/ll/lo/index.m3u8"

        @Test("LL through the pair: concurrent blocking reloads reach an origin once, the hinted part once or twice")
        func lowLatencyRequestsCollapseThroughThePair() async throws {
            try await CDNTierProcesses.run(Self.lowLatencyScenario)
        }

        static func lowLatencyScenario(_ processes: CDNTierProcesses) async throws {
            let first = try await OriginProcess(configuration: lowLatencyConfiguration, label: "pair-ll-first")
            processes.add(first)
            let second = try await OriginProcess(configuration: lowLatencyConfiguration, label: "pair-ll-second")
            processes.add(second)
            let nginx = try await startNginx(first: first.port, second: second.port, directory: first.directory)
            processes.set(nginx)
            let summary = try await LowLatencyThroughCDN.check(nginx: nginx, path: lowLatencyPath)
            print("LL through nginx in front of a pair: \(summary)")
            await nginx.stop()
            for origin in [first, second] {
                let status = await origin.stop()
                #expect(status == 0, "an origin did not exit cleanly: \(origin.logTail())")
            }
        }

        /// hlsorigin answers 503 under /live only to a blocking request whose part did not come within 3 target
        /// durations, which cannot be caused on demand: a stand-in that answers everything 503 takes the first
        /// origin's place, the second is a real LL origin.
        @Test(
            "an origin's 503 is passed to the other for plain requests, but returned for blocking ones, which never take it out of rotation"
        )
        func blockingAnswersAreNotPassedOn() async throws {
            try await CDNTierProcesses.run(Self.unavailableScenario)
        }

        static func unavailableScenario(_ processes: CDNTierProcesses) async throws {
            let origin = try await OriginProcess(configuration: lowLatencyConfiguration, label: "pair-503")
            processes.add(origin)
            let unavailablePort = try OriginProcess.freePort()
            processes.add(try await startUnavailableOrigin(port: unavailablePort, directory: origin.directory))
            let direct = HTTPClient(port: origin.port)
            var listed = LowLatencyPlaylist("")
            try await waitUntil(
                "4 parts and 2 segments listed", timeout: .seconds(20), interval: .milliseconds(200)
            ) {
                guard let answer = try? await direct.get(lowLatencyPath), answer.status == 200 else { return false }
                listed = LowLatencyPlaylist(answer.text)
                return listed.parts.count >= 4 && listed.segmentURIs.count >= 2
            }
            let nginx = try await startNginx(
                first: unavailablePort, second: origin.port, directory: origin.directory)
            processes.set(nginx)
            let (unavailable, real) = ("127.0.0.1:\(unavailablePort)", "127.0.0.1:\(origin.port)")
            let client = HTTPClient(port: nginx.port)

            // Blocking reloads of four listed parts (each its own cache key; the real origin answers at once).
            let blocking = listed.parts.suffix(4).map {
                "\(lowLatencyPath)?_HLS_msn=\($0.msn)&_HLS_part=\($0.index)"
            }
            var blockingStatuses: [Int] = []
            for path in blocking { blockingStatuses.append(try await client.get(path).status) }
            // Plain requests, each its own cache key: the multivariant, media and I-frame playlists, segments.
            let segments = listed.segmentURIs.suffix(2).map { "/live/ll/lo/\($0)" }
            let plain = ["/live/ll/index.m3u8", lowLatencyPath, "/live/ll/lo/iframes.m3u8"] + segments
            var plainStatuses: [Int] = []
            for path in plain { plainStatuses.append(try await client.get(path).status) }
            try await waitUntil("nginx to log every answer", timeout: .seconds(5), interval: .milliseconds(50)) {
                nginx.accessLog().count >= blocking.count + plain.count
            }
            let log = nginx.accessLog()
            let blockingLines = log.filter { $0.uri.contains("_HLS_msn=") }
            let plainLines = log.filter { !$0.uri.contains("_HLS_msn=") }

            // Blocking: the stand-in's 503 went to the client as it was, and the stand-in kept its turn.
            let unexpected = blockingLines.filter { line -> Bool in
                let fromStandIn = line.status == 503 && line.upstreams == [unavailable]
                let fromOrigin = line.status == 200 && line.upstreams == [real]
                return !fromStandIn && !fromOrigin
            }
            #expect(unexpected.isEmpty, "blocking reloads: \(blockingLines)")
            let reachedUnavailable = blockingLines.filter { $0.upstreams == [unavailable] }.count
            #expect(
                reachedUnavailable >= 2 && blockingStatuses.filter { $0 == 503 }.count == reachedUnavailable,
                "blocking reloads answered \(blockingStatuses); \(reachedUnavailable) reached the stand-in")
            // Plain: every one a 200; one passed from the stand-in to the real origin, and that 503 took the
            // stand-in out of rotation (max_fails=1): nothing after it was sent there.
            #expect(plainStatuses.allSatisfy { $0 == 200 }, "plain requests answered \(plainStatuses)")
            let passedOn = plainLines.firstIndex { $0.upstreams == [unavailable, real] }
            #expect(
                passedOn.map { plainLines[$0].upstreamStatuses == ["503", "200"] } == true,
                "plain requests: \(plainLines)")
            let afterwards = passedOn.map { plainLines[($0 + 1)...].filter { $0.upstreams != [real] } } ?? []
            #expect(afterwards.isEmpty, "sent to the stand-in after its 503: \(afterwards)")
            print(
                "a 503 from one origin of the pair: blocking reloads answered \(blockingStatuses) "
                    + "(\(reachedUnavailable) by the stand-in, not passed on); plain requests answered "
                    + "\(plainStatuses), upstreams \(plainLines.map { (line: NginxCache.LogLine) in line.upstreams })")
            await nginx.stop()
            let status = await origin.stop()
            #expect(status == 0, "the origin did not exit cleanly: \(origin.logTail())")
            await processes.killAll()
        }

        /// nginx with config/nginx-redundant.conf in front of the origins on `first` and `second`.
        static func startNginx(first: Int, second: Int, directory: URL) async throws -> NginxCache {
            try await NginxCache(
                shipped: "nginx-redundant.conf", accessLog: "redundant-access.log",
                cachePath: "proxy_cache_path /var/cache/nginx/hlsorigin-redundant ",
                replacing: [
                    ("server 127.0.0.1:8080 ", "server 127.0.0.1:\(first) "),
                    ("server 127.0.0.1:8082 ", "server 127.0.0.1:\(second) "),
                ], directory: directory)
        }

        /// A stand-in origin on `port` that answers every request 503 (no-store, with a body), as hlsorigin answers
        /// a blocking request whose part did not come in time.
        static func startUnavailableOrigin(port: Int, directory: URL) async throws -> ChildProcess {
            guard let python = ChildProcess.locate("python3") else { throw EndToEndError("python3 is not on the PATH") }
            let script = """
                import http.server, sys
                class Unavailable(http.server.BaseHTTPRequestHandler):
                    def do_GET(self):
                        body = b"not within 3 target durations\\n"
                        self.send_response(503)
                        self.send_header("Cache-Control", "no-store")
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                    def log_message(self, *arguments):
                        pass
                http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Unavailable).serve_forever()
                """
            let child = try ChildProcess(
                executable: python, arguments: ["-c", script, "\(port)"], directory: directory,
                label: "unavailable-origin")
            try await waitUntil("the stand-in origin to listen", timeout: .seconds(10), interval: .milliseconds(50)) {
                guard child.isRunning else { throw EndToEndError("python3 exited: \(child.standardError)") }
                return (try? RawHTTPConnection(port: port, timeout: .seconds(1))) != nil
            }
            return child
        }

        /// Starts the killed origin again on its port and data directory (retrying while the port is still taken).
        static func restart(_ origin: OriginProcess) async throws -> OriginProcess {
            let deadline = ContinuousClock.now + .seconds(10)
            while true {
                do {
                    return try await OriginProcess(
                        configuration: configuration, label: "restarted", port: origin.port,
                        restarting: origin.directory)
                } catch  where ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(200))
                }
            }
        }

        /// The MSNs each origin lists in its media playlist, asked directly (not through nginx), in the order of
        /// `ports`. Origins of a group fed the same segments list the same MSNs with identical entries, checked by
        /// `RedundantOriginsTests`; this test checks the numbering only (a restarted origin lists its downtime as
        /// GAPs where its peer lists segments, see docs/redundancy.md).
        static func listedMSNs(ports: [Int]) async throws -> [[UInt64]] {
            var lists: [[UInt64]] = []
            for port in ports {
                let answer = try await HTTPClient(port: port).get(mediaPath)
                guard answer.status == 200 else {
                    throw EndToEndError("\(mediaPath) on \(port): \(answer.status) \(answer.text)")
                }
                lists.append(try MediaPlaylistText(answer.text).entries.map(\.msn))
            }
            return lists
        }
    }
}
