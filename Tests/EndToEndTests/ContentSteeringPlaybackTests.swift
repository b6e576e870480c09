import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEndInBrowser {
    /// Content Steering across a redundancy group (docs/content-steering.md): two origins fed by one ffmpeg through
    /// its tee muxer, each a pathway of the channel's multivariant playlist; hls.js in Chromium plays from the first
    /// (it loads the playlist there); that origin is killed with SIGKILL 3 s after it served hls.js its first media
    /// segment (counted in its /metrics from hls.js's CMCD, the origin having no access log). The survivor's steering
    /// manifest moves the dead pathway last once its health is gone (no report for 6 s), hls.js moves to the other
    /// pathway, and plays on: no fatal error, no discontinuity (one `cc` for every fragment it parsed). The pathway
    /// switch timeline (kill, steering reloads, first request on the new pathway, playback going on) is printed.
    @Suite("End to end: hls.js moves to the other pathway when an origin of the group is killed")
    struct ContentSteeringPlaybackTests {
        static let channel = "cs"
        static let rendition = FFmpeg.PushedRendition(name: "lo", width: 320, height: 180, videoBitrate: "200k")
        static let mediaPath = "/live/\(channel)/lo/index.m3u8"
        static let playSeconds = 18.0
        /// Seconds hls.js plays before the kill, from the first media segment origin-a served it.
        static let playingBeforeKill = 3.0
        /// How long Chromium's start and hls.js's first loads may take before origin-a serves a media segment.
        static let firstMediaTimeout: Duration = .seconds(20)
        static let ttl = 2

        /// The configuration of the origin on `own` (its peer on `peer`): each origin is a pathway.
        static func configuration(own: Int, peer: Int, ports: [Int]) -> String {
            configuration(
                own: own, peer: peer, channel: channel,
                pathways: [
                    ("origin-a", "http://127.0.0.1:\(ports[0])", ports[0]),
                    ("origin-b", "http://127.0.0.1:\(ports[1])", ports[1]),
                ])
        }

        /// The configuration of the origin on `own` (its peer on `peer`) of a group steering `channel` (one 2 s
        /// rendition `lo`, `ttl` s) over `pathways` in order: each its ID, its base URI and the port of the origin
        /// whose health it follows.
        static func configuration(
            own: Int, peer: Int, channel: String, pathways: [(id: String, uri: String, origin: Int)]
        ) -> String {
            PushedChannelConfiguration.yaml(
                channel: channel, renditions: [rendition.name],
                sections: [
                    PushedChannelConfiguration.redundancy(peers: [peer]),
                    PushedChannelConfiguration.steering(own: own, ttl: ttl, pathways: pathways),
                ])
        }

        @Test("hls.js plays through kill -9 of the origin of its pathway: moves to the other, steering keeps it there")
        func hlsjsMovesToTheOtherPathwayWhenItsOriginIsKilled() async throws {
            try await CDNTierProcesses.run(Self.scenario)
        }

        static func scenario(_ processes: CDNTierProcesses) async throws {
            let ports = [try OriginProcess.freePort(), try OriginProcess.freePort()]
            let pair = try await OriginPair.start(
                labels: ["cs-a", "cs-b"], channel: channel, renditions: [rendition], listed: 3, processes: processes,
                ports: ports
            ) { own, peer in configuration(own: own, peer: peer, ports: ports) }
            let (first, second, encoder) = (pair.first, pair.second, pair.encoder)
            // Both origins give the same answer for the same health and query, once each has read the other.
            let query = "/live/\(channel)/steering.json?_HLS_pathway=origin-a&_HLS_throughput=900000"
            let answer = try await PathwaySwitch.waitUntilSteeringAlike(
                ports: ports, query: query, priority: #"["origin-a","origin-b"]"#, what: "both origins to steer alike")
            #expect(
                answer
                    == #"{"VERSION":1,"TTL":2,"RELOAD-URI":"http://127.0.0.1:\#(ports[1])/live/cs/steering.json?steered=origin-a","PATHWAY-PRIORITY":["origin-a","origin-b"]}"#
                    + "\n")
            let multivariants = [
                try await HTTPClient(port: ports[0]).get("/live/\(channel)/index.m3u8").text,
                try await HTTPClient(port: ports[1]).get("/live/\(channel)/index.m3u8").text,
            ]
            #expect(multivariants[0] == multivariants[1] && multivariants[0].contains("PATHWAY-ID=\"origin-b\""))

            let url = "http://127.0.0.1:\(ports[0])/live/\(channel)/index.m3u8"
            let started = Date().timeIntervalSince1970
            let browser = Task {
                try await BrowserPlayer.play(
                    [
                        BrowserPlayer.Run(
                            player: .hlsjs, url: url, seconds: playSeconds, requests: true, cmcd: "query")
                    ], directory: first.directory, label: "cs-hlsjs")
            }
            // The origin keeps no access log; hls.js's CMCD (query) carries a buffer length (`bl`) on media segment
            // requests only, which origin-a counts in /metrics.
            let firstSegments = "hlsorigin_cmcd_buffer_length_seconds_count{channel=\"\(channel)\"} "
            let kill = try await PathwaySwitch.killAfterFirstMedia(
                first, playing: playingBeforeKill, browser: browser,
                firstMedia: "origin-a to serve hls.js a media segment", timeout: firstMediaTimeout,
                demoted: PathwaySwitch.Demotion(
                    what: "the survivor to move origin-a last", port: ports[1], query: query,
                    priority: #"["origin-b","origin-a"]"#)
            ) {
                let metrics = (try? await HTTPClient(port: ports[0]).get("/metrics").text) ?? ""
                return metrics.split(separator: "\n").contains {
                    $0.hasPrefix(firstSegments) && (Int($0.dropFirst(firstSegments.count)) ?? 0) > 0
                }
            }
            let (firstMediaAt, killedAt, demotedAt) = (kill.firstMediaAt, kill.killedAt, kill.demotedAt)

            let report = try await browser.value
            let hlsjs = try #require(report.runs?.first)
            #expect(hlsjs.error == nil && (hlsjs.state?.errors ?? []).isEmpty, "hls.js: \(hlsjs.account)")
            func on(_ port: Int) -> (PathwaySwitch.Request) -> Bool {
                { $0.url.hasPrefix("http://127.0.0.1:\(port)/") }
            }
            let played = PathwaySwitch(
                hlsjs, killedAt: killedAt, dead: "http://127.0.0.1:\(ports[0])/",
                survivor: "http://127.0.0.1:\(ports[1])/", media: "/lo/")
            // The page's clock against the wall clock: the play lasted playSeconds from the page's opening.
            let opened = played.requests.first.map { $0.wall - $0.t } ?? started
            let timeline = played.timeline(
                dead: "origin-a", survivor: "origin-b", startedAt: opened, demotedAt: demotedAt)
            print(played.printed(dead: "origin-a", survivor: "origin-b", startedAt: opened, demotedAt: demotedAt))
            print(
                "browser task to page opened " + String(format: "%.2f s", opened - started)
                    + ", to the first media segment from origin-a " + String(format: "%.2f s", firstMediaAt - started))
            print("hls.js: \(hlsjs.account)")

            let switchedAt = played.switchedAt
            #expect(switchedAt != nil, "hls.js never fetched media from origin-b after the kill: \(timeline)")
            #expect(
                !played.requests.contains {
                    on(ports[0])($0) && $0.url.contains("/lo/") && $0.status == 200
                        && $0.wall > (switchedAt ?? .infinity) + 1
                }, "hls.js went back to the dead pathway: \(timeline)")
            // Every reload after the kill reached a live origin: RELOAD-URI never sent the player to the dead one
            // (it did when it named the pathway other than the player's: hls.js, moved to origin-b by its own error
            // handling before the group saw origin-a down, was then told to reload from origin-a, and failed on;
            // origin-a is now skipped as soon as the survivor's read of it fails, and before that because the
            // player's reload says it left origin-a, where the previous answer had sent it: `steered`).
            #expect(
                played.reloadsAfterKill.count >= 3
                    && played.reloadsAfterKill.allSatisfy { on(ports[1])($0) && $0.status == 200 },
                "steering reloads after the kill: \(timeline)")
            #expect(played.failedReloads.isEmpty, "steering reloads failed: \(played.failedReloads.map(\.url))")
            // hls.js played on after the kill for all but 6 s of what was left of its run.
            #expect(played.playedAfterKill >= opened + playSeconds - killedAt - 6, "\(timeline)")
            #expect(played.fatal.isEmpty, "hls.js fatal errors: \(played.fatal)")
            #expect(
                played.discontinuities.count <= 1,
                "hls.js saw discontinuities (cc \(played.discontinuities.sorted())): \(timeline)")
            encoder.signal(SIGKILL)
            let status = await second.stop()
            #expect(status == 0, "the surviving origin did not exit cleanly: \(second.logTail())")
        }
    }
}
