import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEndInBrowser {
    /// Content Steering across a redundancy group (docs/content-steering.md): two origins fed by one ffmpeg through
    /// its tee muxer, each a pathway of the channel's multivariant playlist; hls.js in Chromium plays from the first
    /// (it loads the playlist there); that origin is killed with SIGKILL mid-play. The survivor's steering manifest
    /// moves the dead pathway last once its health is gone (no report for 6 s), hls.js moves to the other pathway,
    /// and plays on: no fatal error, no discontinuity (one `cc` for every fragment it parsed). The pathway switch
    /// timeline (kill, steering reloads, first request on the new pathway, playback going on) is printed.
    @Suite("End to end: hls.js moves to the other pathway when an origin of the group is killed")
    struct ContentSteeringPlaybackTests {
        static let channel = "cs"
        static let rendition = FFmpeg.PushedRendition(name: "lo", width: 320, height: 180, videoBitrate: "200k")
        static let mediaPath = "/live/\(channel)/lo/index.m3u8"
        static let playSeconds = 18.0
        static let secondsBeforeKill = 6.0
        static let ttl = 2

        static func configuration(own: Int, peer: Int, ports: [Int]) -> String {
            """
            logLevel: info
            redundancy: { clockTolerance: 0.5, peers: ["http://127.0.0.1:\(peer)"] }
            steering:
              self: http://127.0.0.1:\(own)
              ttl: \(ttl)
              pathways:
                - {id: origin-a, uri: "http://127.0.0.1:\(ports[0])", origins: ["http://127.0.0.1:\(ports[0])"]}
                - {id: origin-b, uri: "http://127.0.0.1:\(ports[1])", origins: ["http://127.0.0.1:\(ports[1])"]}
            ingest:
              autoCreate: false
            channels:
              - name: \(channel)
                segmentDuration: 2
                window: { segments: 6 }
                renditions: [{name: lo}]
            """
        }

        @Test("hls.js plays through kill -9 of the origin of its pathway: moves to the other, steering keeps it there")
        func hlsjsMovesToTheOtherPathwayWhenItsOriginIsKilled() async throws {
            try await CDNTierProcesses.run(Self.scenario)
        }

        static func scenario(_ processes: CDNTierProcesses) async throws {
            let ports = [try OriginProcess.freePort(), try OriginProcess.freePort()]
            let first = try await OriginProcess(
                configuration: configuration(own: ports[0], peer: ports[1], ports: ports), label: "cs-a",
                port: ports[0])
            processes.add(first)
            let second = try await OriginProcess(
                configuration: configuration(own: ports[1], peer: ports[0], ports: ports), label: "cs-b",
                port: ports[1])
            processes.add(second)
            let encoder = try FFmpeg.startTeePush(
                ports: ports, channel: channel, renditions: [rendition], directory: first.directory, label: "ffmpeg-tee"
            )
            processes.add(encoder)
            for port in ports {
                let client = HTTPClient(port: port)
                try await waitUntil(
                    "the origin on \(port) to list 3 segments", timeout: .seconds(30), interval: .milliseconds(200)
                ) {
                    guard encoder.isRunning else { throw EndToEndError("ffmpeg exited: \(encoder.standardError)") }
                    guard let answer = try? await client.get(mediaPath), answer.status == 200 else { return false }
                    return ((try? MediaPlaylistText(answer.text))?.entries.count ?? 0) >= 3
                }
            }
            // Both origins give the same answer for the same health and query, once each has read the other.
            let query = "/live/\(channel)/steering.json?_HLS_pathway=origin-a&_HLS_throughput=900000"
            var answers: [String] = []
            try await waitUntil("both origins to steer alike", timeout: .seconds(10), interval: .milliseconds(200)) {
                answers = []
                for port in ports { answers.append((try? await HTTPClient(port: port).get(query).text) ?? "") }
                return answers[0] == answers[1] && answers[0].contains(#"["origin-a","origin-b"]"#)
            }
            #expect(
                answers[0]
                    == #"{"VERSION":1,"TTL":2,"RELOAD-URI":"http://127.0.0.1:\#(ports[1])/live/cs/steering.json","PATHWAY-PRIORITY":["origin-a","origin-b"]}"#
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
                    [BrowserPlayer.Run(player: .hlsjs, url: url, seconds: playSeconds, requests: true)],
                    directory: first.directory, label: "cs-hlsjs")
            }
            try await Task.sleep(for: .seconds(secondsBeforeKill))
            first.kill()
            let killedAt = Date().timeIntervalSince1970
            _ = await first.child.wait(timeout: .seconds(5))
            var afterKill = ""
            try await waitUntil(
                "the survivor to move origin-a last", timeout: .seconds(10), interval: .milliseconds(100)
            ) {
                afterKill = (try? await HTTPClient(port: ports[1]).get(query).text) ?? ""
                return afterKill.contains(#"["origin-b","origin-a"]"#)
            }
            let demotedAt = Date().timeIntervalSince1970

            let report = try await browser.value
            let hlsjs = try #require(report.runs?.first)
            #expect(hlsjs.error == nil && (hlsjs.state?.errors ?? []).isEmpty, "hls.js: \(hlsjs.account)")
            let requests = try #require(hlsjs.network?.requests)
            func on(_ port: Int) -> (BrowserPlayer.Played.Network.Request) -> Bool {
                { $0.url.hasPrefix("http://127.0.0.1:\(port)/") }
            }
            func isMedia(_ request: BrowserPlayer.Played.Network.Request) -> Bool {
                request.url.contains("/lo/") && request.status == 200
            }
            let steeringLoads = requests.filter { $0.url.contains("/steering.json") }
            let switchedAt = requests.first { on(ports[1])($0) && isMedia($0) && $0.wall > killedAt }?.wall
            let failedReloads = (hlsjs.network?.failed ?? []).filter { $0.url.contains("/steering.json") }
            let lastOnA = requests.last { on(ports[0])($0) && isMedia($0) }?.wall
            // Playback after the switch: the first sample (page clock) whose currentTime moved past the switch.
            let offset = requests.last.map { $0.wall - $0.t } ?? 0
            let samples = hlsjs.samples ?? []
            var resumedAt: Double?
            if let switchedAt {
                let after = samples.filter { $0.t + offset >= switchedAt }
                for (before, next) in zip(after, after.dropFirst())
                where (next.currentTime ?? 0) > (before.currentTime ?? 0) {
                    resumedAt = next.t + offset
                    break
                }
            }
            let playedAfterKill = zip(samples, samples.dropFirst()).reduce(0.0) { sum, pair in
                guard pair.0.t + offset >= killedAt, let from = pair.0.currentTime, let to = pair.1.currentTime,
                    to > from, to - from <= pair.1.t - pair.0.t + 0.5
                else { return sum }
                return sum + (to - from)
            }
            func at(_ time: Double?) -> String { time.map { String(format: "%+.2f s", $0 - killedAt) } ?? "never" }
            let timeline =
                "pathway switch timeline (0 = kill -9 of origin-a, page opened "
                + String(format: "%.2f s", started - killedAt) + "): last media request on origin-a "
                + at(lastOnA) + "; survivor steers origin-a last " + at(demotedAt) + "; steering reloads "
                + steeringLoads.filter { $0.wall > killedAt - 4 }.map { at($0.wall) + " \($0.status)" }
                .joined(separator: ", ")
                + " (\(failedReloads.count) failed); first media request on origin-b " + at(switchedAt)
                + "; playback moving again " + at(resumedAt) + "; played "
                + String(format: "%.1f s", playedAfterKill) + " after the kill"
            print(timeline)
            for load in steeringLoads where load.wall > killedAt - 4 {
                print("  steering reload " + at(load.wall) + " \(load.status) \(load.url)")
            }
            let hlsErrors = (hlsjs.state?.events ?? []).filter { $0.kind == "hls-error" }.map { $0.detail ?? "" }
            print("  hls.js errors (none fatal): \(hlsErrors)")
            print("hls.js: \(hlsjs.account)")

            #expect(switchedAt != nil, "hls.js never fetched media from origin-b after the kill: \(timeline)")
            #expect(
                !requests.contains { on(ports[0])($0) && isMedia($0) && $0.wall > (switchedAt ?? .infinity) + 1 },
                "hls.js went back to the dead pathway: \(timeline)")
            // Every reload after the kill reached a live origin: RELOAD-URI never sent the player to the dead one
            // (it did when it named the pathway other than the player's: hls.js, moved to origin-b by its own error
            // handling before the group saw origin-a down, was then told to reload from origin-a, and failed on;
            // origin-a is now skipped as soon as the survivor's read of it fails).
            #expect(
                steeringLoads.filter { $0.wall > killedAt }.count >= 3
                    && steeringLoads.filter { $0.wall > killedAt }.allSatisfy { on(ports[1])($0) && $0.status == 200 },
                "steering reloads after the kill: \(timeline)")
            #expect(failedReloads.isEmpty, "steering reloads failed: \(failedReloads.map(\.url))")
            #expect(playedAfterKill >= playSeconds - secondsBeforeKill - 6, "\(timeline)")
            let fatal = (hlsjs.state?.events ?? []).filter {
                $0.kind == "hls-error" && ($0.detail ?? "").hasPrefix("FATAL")
            }
            #expect(fatal.isEmpty, "hls.js fatal errors: \(fatal.map { $0.detail ?? "" })")
            let discontinuities = Set((hlsjs.state?.initPTS ?? []).map(\.cc))
            #expect(
                discontinuities.count <= 1, "hls.js saw discontinuities (cc \(discontinuities.sorted())): \(timeline)")
            encoder.signal(SIGKILL)
            let status = await second.stop()
            #expect(status == 0, "the surviving origin did not exit cleanly: \(second.logTail())")
        }
    }
}
