import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEndInBrowser {
    /// Content Steering across two CDN pathways (docs/content-steering.md, "CDN pathways"): two origins of a
    /// redundancy group fed by one ffmpeg through its tee muxer, each behind its own nginx with the shipped
    /// `config/nginx-llhls.conf`; pathway `cdn-a` is nginx-a (its health: origin-a), `cdn-b` nginx-b (origin-b). No
    /// `reloadBase`: the steering manifest goes through the CDN pathways like everything else (SERVER-URI beside the
    /// multivariant playlist on nginx-a, RELOAD-URI on a healthy pathway's nginx), and nginx keeps no copy of it (the
    /// origin's `no-cache`). hls.js in Chromium loads the multivariant playlist through nginx-a; origin-a is killed
    /// with SIGKILL 3 s after nginx-a served hls.js its first media segment, so nginx-a answers 502. hls.js moves to cdn-b and plays on: no fatal error, one `cc`,
    /// every steering reload after the kill a 200 through nginx-b, every media request after the switch to nginx-b;
    /// the survivor's manifest, read through nginx-b, lists cdn-a last. The switch timeline is printed.
    @Suite("End to end: hls.js moves to the other CDN pathway when the origin behind its nginx is killed")
    struct ContentSteeringCDNPlaybackTests {
        static let channel = "csn"
        static let playSeconds = 18.0
        /// Seconds hls.js plays before the kill, from the first media segment nginx-a served it.
        static let playingBeforeKill = 3.0
        /// How long Chromium's start and hls.js's first loads may take before nginx-a serves a media segment.
        static let firstMediaTimeout: Duration = .seconds(20)

        @Test("hls.js plays through kill -9 of the origin behind its nginx: moves to the other CDN pathway")
        func hlsjsMovesToTheOtherCDNPathwayWhenTheOriginBehindItsEdgeIsKilled() async throws {
            try await CDNTierProcesses.run(Self.scenario)
        }

        static func scenario(_ processes: CDNTierProcesses) async throws {
            // The edges first (nginx only needs the origins' ports), so that the origins can name them as pathways.
            let ports = [try OriginProcess.freePort(), try OriginProcess.freePort()]
            func edge(_ index: Int) async throws -> NginxCache {
                let directory = try TemporaryDirectory.make("hlsorigin-e2e-csn-nginx-\(index)")
                let edge = try await NginxCache(originPort: ports[index], directory: directory)
                processes.add(edge.child)
                return edge
            }
            let edges = [try await edge(0), try await edge(1)]
            let edgePorts = edges.map(\.port)
            let pair = try await OriginPair.start(
                labels: ["csn-a", "csn-b"], channel: channel, renditions: [ContentSteeringPlaybackTests.rendition],
                listed: 3, processes: processes, ports: ports
            ) { own, peer in
                // Pathway cdn-a is nginx-a, its health origin-a's; cdn-b nginx-b, origin-b's.
                ContentSteeringPlaybackTests.configuration(
                    own: own, peer: peer, channel: channel,
                    pathways: [
                        ("cdn-a", "http://127.0.0.1:\(edgePorts[0])", ports[0]),
                        ("cdn-b", "http://127.0.0.1:\(edgePorts[1])", ports[1]),
                    ])
            }
            let (first, second, encoder) = (pair.first, pair.second, pair.encoder)

            // Through either edge, the same steering answer for a player on cdn-a, once each origin has read the
            // other: cdn-a first, RELOAD-URI on the other pathway's edge.
            let query = "/live/\(channel)/steering.json?_HLS_pathway=cdn-a&_HLS_throughput=900000"
            let answer = try await PathwaySwitch.waitUntilSteeringAlike(
                ports: edges.map(\.port), query: query, priority: #"["cdn-a","cdn-b"]"#, what: "both edges to steer alike")
            #expect(
                answer
                    == #"{"VERSION":1,"TTL":\#(ContentSteeringPlaybackTests.ttl),"RELOAD-URI":"\#(edges[1].baseURL)/live/csn/steering.json?steered=cdn-a","PATHWAY-PRIORITY":["cdn-a","cdn-b"]}"#
                    + "\n")
            let multivariant = try await HTTPClient(port: edges[0].port).get("/live/\(channel)/index.m3u8").text
            #expect(
                multivariant.contains(#"PATHWAY-ID="cdn-b""#)
                    && multivariant.contains("\(edges[1].baseURL)/live/\(channel)/lo/index.m3u8"),
                "the multivariant playlist through nginx-a:\n\(multivariant)")

            let started = Date().timeIntervalSince1970
            let browser = Task {
                try await BrowserPlayer.play(
                    [
                        BrowserPlayer.Run(
                            player: .hlsjs, url: "\(edges[0].baseURL)/live/\(channel)/index.m3u8", seconds: playSeconds,
                            requests: true)
                    ], directory: first.directory, label: "csn-hlsjs")
            }
            // The survivor's answer to a player still on cdn-a is read through nginx-b: a copy nginx kept would hide
            // the change.
            let kill = try await PathwaySwitch.killAfterFirstMedia(
                first, playing: playingBeforeKill, browser: browser,
                firstMedia: "nginx-a to serve hls.js a media segment", timeout: firstMediaTimeout,
                demoted: PathwaySwitch.Demotion(
                    what: "the survivor, through nginx-b, to move cdn-a last", port: edges[1].port, query: query,
                    priority: #"["cdn-b","cdn-a"]"#)
            ) {
                edges[0].accessLog().contains {
                    $0.isAfter(started) && $0.status == 200 && $0.uri.contains("/lo/") && !$0.uri.contains(".m3u8")
                }
            }
            let (firstMediaAt, killedAt, demotedAt, afterKill) = (
                kill.firstMediaAt, kill.killedAt, kill.demotedAt, kill.answer
            )
            #expect(afterKill.contains(#""RELOAD-URI":"\#(edges[1].baseURL)/live/csn/steering.json?steered=cdn-b""#), "\(afterKill)")

            let report = try await browser.value
            let hlsjs = try #require(report.runs?.first)
            #expect(hlsjs.error == nil && (hlsjs.state?.errors ?? []).isEmpty, "hls.js: \(hlsjs.account)")
            let (edgeA, edgeB) = (edges[0].baseURL + "/", edges[1].baseURL + "/")
            let played = PathwaySwitch(hlsjs, killedAt: killedAt, dead: edgeA, survivor: edgeB, media: "/lo/")
            // The page's clock against the wall clock: the play lasted playSeconds from the page's opening.
            let opened = played.requests.first.map { $0.wall - $0.t } ?? started
            let timeline = played.timeline(dead: "cdn-a", survivor: "cdn-b", startedAt: opened, demotedAt: demotedAt)
            print(played.printed(dead: "cdn-a", survivor: "cdn-b", startedAt: opened, demotedAt: demotedAt))
            print(
                "browser task to page opened " + String(format: "%.2f s", opened - started)
                    + ", to the first media segment through nginx-a " + String(format: "%.2f s", firstMediaAt - started))
            print("hls.js: \(hlsjs.account)")

            // Before the kill, hls.js played cdn-a, the pathway its multivariant playlist names first.
            let mediaBeforeKill = played.requests.filter { $0.url.contains("/lo/") && $0.wall < killedAt }
            #expect(
                !mediaBeforeKill.isEmpty && mediaBeforeKill.allSatisfy { $0.url.hasPrefix(edgeA) },
                "media requests before the kill: \(mediaBeforeKill.map(\.url))")
            let switchedAt = try #require(played.switchedAt, "no media from cdn-b after the kill: \(timeline)")
            // After the switch, every media request (playlists and segments, any status) went to nginx-b.
            let strays = played.requests.filter {
                $0.url.contains("/lo/") && ($0.sent ?? $0.wall) >= switchedAt && !$0.url.hasPrefix(edgeB)
            }
            #expect(strays.isEmpty, "media requests after the switch not to nginx-b: \(strays.map(\.url))")
            // Every steering reload after the kill answered 200 by nginx-b (RELOAD-URI never named the dead edge).
            let reloads = played.reloadsAfterKill
            #expect(
                reloads.count >= 3 && reloads.allSatisfy { $0.url.hasPrefix(edgeB) && $0.status == 200 },
                "steering reloads after the kill: \(timeline)")
            #expect(played.failedReloads.isEmpty, "steering reloads failed: \(played.failedReloads.map(\.url))")
            #expect(played.fatal.isEmpty, "hls.js fatal errors: \(played.fatal)")
            #expect(
                played.discontinuities.count == 1,
                "hls.js parsed cc \(played.discontinuities.sorted()), not one: \(timeline)")
            // hls.js played on after the kill for all but 6 s of what was left of its run.
            #expect(played.playedAfterKill >= opened + playSeconds - killedAt - 6, "\(timeline)")

            // nginx kept no copy of the manifest: every load of it, the player's and the test's, went to the origin.
            let manifestLines = edges.map { $0.accessLog().filter { $0.uri.contains("/steering.json") } }
            let cached = manifestLines.joined().filter { $0.cacheStatus != "MISS" }
            #expect(cached.isEmpty, "nginx answered the manifest from its cache: \(cached.map(\.cacheStatus))")
            #expect(
                manifestLines[1].filter { $0.status == 200 }.count >= reloads.count,
                "nginx-b logged \(manifestLines[1].count) manifest loads")
            print(
                "manifest loads through nginx-a \(manifestLines[0].count), through nginx-b \(manifestLines[1].count) "
                    + "(the player's and the test's), cache status \(Set(manifestLines.joined().map(\.cacheStatus)))")

            encoder.signal(SIGKILL)
            for edge in edges { await edge.stop() }
            let status = await second.stop()
            #expect(status == 0, "the surviving origin did not exit cleanly: \(second.logTail())")
        }
    }
}
