import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

extension EndToEndInBrowser {
    /// Content Steering moves a player by the steering manifest alone (docs/content-steering.md, "What moves a
    /// player"): the same two origins as `ContentSteeringPlaybackTests` (one ffmpeg tee, each origin a pathway,
    /// `ttl: 2`), but origin-a's data directory is a 16 MiB tmpfs with `storage.minFreeBytes` 8 MiB, and instead of
    /// dying its disk fills up (ballast leaves 4 MiB free) while hls.js plays from it. Origin-a keeps taking,
    /// listing and serving every segment (no GAP, every request a 200); under its free-space floor with nothing to
    /// evict it judges itself *failing* (`ChannelHealthReport.judge`, "store nearly full"), the group's steering
    /// answer lists origin-a last, and hls.js moves to origin-b at its next steering reload, with no error of any
    /// kind: hls.js's own error handling also moves pathways, on a failed request or on a GAP entry it meets
    /// (`fragGap`; a disk filled to the last byte lists one ~0.9 s after the first refused write, which raced the
    /// steering reload), and either would show here. The timeline (disk filled, judged failing, the answer that
    /// moved it, first request on origin-b) is printed.
    @Suite(
        "End to end: the steering manifest moves hls.js off an origin whose disk is nearly full while it serves",
        .enabled(
            if: SmallFilesystem.permitted,
            "mounting a tmpfs is not permitted here: run as root or with CAP_SYS_ADMIN"))
    struct SteeringHealthPlaybackTests {
        typealias Request = BrowserPlayer.Played.Network.Request
        static let channel = ContentSteeringPlaybackTests.channel
        static let mediaPath = ContentSteeringPlaybackTests.mediaPath
        static let ttl = Double(ContentSteeringPlaybackTests.ttl)
        static let segmentSeconds = 2.0
        /// How often origin-b reads origin-a's `/peer/health` (`SteeringHealthMonitor.interval`, 1 s): origin-b's
        /// answer lists origin-a last at most this long after origin-a judged itself failing.
        static let peerReadSeconds = 1.0
        static let playSeconds = 18.0
        static let secondsBeforeFill = 6.0
        static let minFreeBytes: Int64 = 8 << 20

        @Test(
            "origin-a's disk nearly fills mid-play: steering alone moves hls.js to origin-b, nothing refused, no error")
        func steeringMovesHlsjsOffAServingOriginWhoseDiskIsNearlyFull() async throws {
            try await CDNTierProcesses.run(Self.scenario)
        }

        /// What the test saw of the two origins while hls.js played, polled every 100 ms: the first time each
        /// thing happened (wall clock, seconds since 1970).
        struct Watch: Sendable {
            /// When the test began to fill origin-a's disk.
            var filled: Double?
            /// origin-a's `/peer/health` first said the channel is failing, as the poll saw it (up to a pass late:
            /// the timeline's; the checks take the time from origin-a's log).
            var judgedFailing: Double?
            /// Its answer before the disk filled, when that did not say healthy (must stay nil).
            var unhealthyBefore: String?
            /// origin-b's manifest (for a player on origin-a) first listed origin-a last.
            var demotedByB: Double?
            /// origin-a's first GAP entry.
            var gapListed: Double?
            /// Answers of origin-a other than 200 to the test's own playlist reads.
            var refusedByA: [Int] = []
        }

        /// Polls origin-a's health and playlist and origin-b's manifest until cancelled.
        final class Watcher: Sendable {
            let state = Mutex(Watch())

            func run(ports: [Int]) async {
                let a = HTTPClient(port: ports[0])
                let b = HTTPClient(port: ports[1])
                let query = "/live/\(channel)/steering.json?_HLS_pathway=origin-a"
                while !Task.isCancelled {
                    let now = Date().timeIntervalSince1970
                    if let health = try? await a.get("/peer/health").text {
                        let failing = health.contains(#""\#(channel)":{"state":"failing""#)
                        let healthy = health.contains(#""\#(channel)":{"state":"healthy""#)
                        state.withLock { watch in
                            if watch.filled == nil, !healthy { watch.unhealthyBefore = health }
                            if watch.filled != nil, failing, watch.judgedFailing == nil { watch.judgedFailing = now }
                        }
                    }
                    if let answer = try? await b.get(query).text, answer.contains(#"["origin-b","origin-a"]"#) {
                        state.withLock { if $0.demotedByB == nil { $0.demotedByB = now } }
                    }
                    if let playlist = try? await a.get(mediaPath) {
                        state.withLock { watch in
                            if playlist.status != 200 { watch.refusedByA.append(playlist.status) }
                            if playlist.text.contains("#EXT-X-GAP"), watch.gapListed == nil { watch.gapListed = now }
                        }
                    }
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
        }

        static func scenario(_ processes: CDNTierProcesses) async throws {
            let ports = [try OriginProcess.freePort(), try OriginProcess.freePort()]
            func configuration(_ own: Int, _ peer: Int) -> String {
                ContentSteeringPlaybackTests.configuration(own: own, peer: peer, ports: ports)
                    + "\nstorage: { minFreeBytes: \(minFreeBytes) }\n"
            }
            // origin-a's data directory: a tmpfs of 16 MiB, filled with ballast mid-play (a disk filling up).
            let directoryA = try TemporaryDirectory.make("hlsorigin-e2e-steer-full")
            let disk = try SmallFilesystem(at: directoryA.appendingPathComponent("data"), bytes: 16 << 20)
            defer { disk.unmount() }
            let pair = try await OriginPair.start(
                labels: ["steer-a", "steer-b"], channel: channel, renditions: [ContentSteeringPlaybackTests.rendition],
                listed: 3, processes: processes, ports: ports, directories: [directoryA, nil],
                arguments: [["--log-format", "json"], []], configuration: configuration)
            let (first, second, encoder) = (pair.first, pair.second, pair.encoder)
            let query = "/live/\(channel)/steering.json?_HLS_pathway=origin-a"
            _ = try await PathwaySwitch.waitUntilSteeringAlike(
                ports: ports, query: query, priority: #"["origin-a","origin-b"]"#,
                what: "both origins to steer origin-a first")

            let watcher = Watcher()
            let watching = Task { await watcher.run(ports: ports) }
            let url = "http://127.0.0.1:\(ports[0])/live/\(channel)/index.m3u8"
            let started = Date().timeIntervalSince1970
            let browser = Task {
                try await BrowserPlayer.play(
                    [BrowserPlayer.Run(player: .hlsjs, url: url, seconds: playSeconds, requests: true)],
                    directory: second.directory, label: "steer-hlsjs")
            }
            try await Task.sleep(for: .seconds(secondsBeforeFill))
            let filledAt = Date().timeIntervalSince1970
            watcher.state.withLock { $0.filled = filledAt }
            disk.fill("ballast", leaving: minFreeBytes / 2)
            #expect(
                disk.available < minFreeBytes && disk.available > minFreeBytes / 4,
                "the ballast left \(disk.available) bytes free")
            let report = try await browser.value
            watching.cancel()
            await watching.value
            let watch = watcher.state.withLock { $0 }
            encoder.signal(SIGKILL)
            first.kill()
            second.kill()

            let hlsjs = try #require(report.runs?.first)
            let requests = try #require(hlsjs.network?.requests)
            let failed = hlsjs.network?.failed ?? []
            func on(_ port: Int) -> (Request) -> Bool { { $0.url.hasPrefix("http://127.0.0.1:\(port)/") } }
            func isMedia(_ request: Request) -> Bool { request.url.contains("/lo/") && request.status == 200 }
            let events = hlsjs.state?.events ?? []
            let errors = events.filter { $0.kind == "hls-error" }.map { $0.detail ?? "" }
            // Each steering manifest hls.js loaded: "<ms since 1970> <PATHWAY-PRIORITY> <URL>" (harness.js).
            let steering = events.filter { $0.kind == "hls-steering" }.compactMap {
                event -> (Double, String, String)? in
                let fields = (event.detail ?? "").split(separator: " ").map(String.init)
                guard fields.count == 3, let milliseconds = Double(fields[0]) else { return nil }
                return (milliseconds / 1000, fields[1], fields[2])
            }
            let moving = steering.first { $0.1.hasPrefix("origin-b,") }
            let movedAt = moving?.0
            let sentAt = { (request: Request) in request.sent ?? request.wall }
            let firstOnB = requests.filter { on(ports[1])($0) && isMedia($0) }.min { sentAt($0) < sentAt($1) }
            let lastOnA = requests.filter { on(ports[0])($0) && isMedia($0) }.max { sentAt($0) < sentAt($1) }
            let samples = hlsjs.samples ?? []
            let playedAfterFill = zip(samples, samples.dropFirst()).reduce(0.0) { sum, pair in
                guard let wall = pair.0.wallClock, wall >= filledAt, let from = pair.0.currentTime,
                    let to = pair.1.currentTime, to > from, to - from <= pair.1.t - pair.0.t + 0.5
                else { return sum }
                return sum + (to - from)
            }

            func at(_ time: Double?) -> String { time.map { String(format: "%+.2f s", $0 - filledAt) } ?? "never" }
            var lines = [
                "steering switch timeline (0 = origin-a's disk filled to 4 MiB free, page opened "
                    + String(format: "%.2f s", started - filledAt) + "): origin-a judged failing in /peer/health "
                    + at(watch.judgedFailing) + " (logged " + at(Self.nearlyFullLogged(first.child.standardError))
                    + "); origin-b's answer lists origin-a last " + at(watch.demotedByB)
                    + "; hls.js's steering reload answering [origin-b,origin-a] " + at(movedAt)
                    + "; first media request on origin-b " + at(firstOnB.map(sentAt))
                    + "; last media request on origin-a " + at(lastOnA.map(sentAt))
                    + "; origin-a's first GAP entry " + at(watch.gapListed) + "; played "
                    + String(format: "%.1f s", playedAfterFill) + " after the fill"
            ]
            for (time, priority, url) in steering where time > filledAt - 4 {
                lines.append("  steering manifest loaded " + at(time) + " [\(priority)] \(url)")
            }
            lines.append("  hls.js errors: \(errors); failed requests: \(failed.map(\.url))")
            let timeline = lines.joined(separator: "\n")
            print(timeline)
            print("hls.js: \(hlsjs.account)")

            #expect(watch.unhealthyBefore == nil, "origin-a was not healthy before its disk filled: \(watch)")
            #expect(watch.refusedByA.isEmpty, "origin-a refused playlist reads while full: \(watch.refusedByA)")
            #expect(watch.gapListed == nil, "origin-a listed a GAP: it stopped taking segments: \(timeline)")
            #expect(hlsjs.error == nil && (hlsjs.state?.errors ?? []).isEmpty, "hls.js: \(hlsjs.account)")
            // No error moved it: none at all (a failed request, a GAP met, a parsing error), fatal or not.
            #expect(errors.isEmpty, "hls.js reported errors: \(errors)\n\(timeline)")
            #expect(failed.isEmpty, "requests failed or refused: \(failed)\n\(timeline)")
            #expect(requests.allSatisfy { $0.status < 400 }, "\(timeline)")
            let discontinuities = Set((hlsjs.state?.initPTS ?? []).map(\.cc))
            #expect(discontinuities.count == 1, "cc \(discontinuities.sorted()): \(timeline)")
            // When origin-a judged itself failing: its log line (milliseconds), not the poll, which can see it a pass
            // (three requests and 100 ms) late on a loaded machine.
            let judged = try #require(
                Self.nearlyFullLogged(first.child.standardError),
                "origin-a never logged its store nearly full: \(timeline)\n\(first.logTail())")
            let moved = try #require(movedAt, "no steering manifest hls.js loaded put origin-b first: \(timeline)")
            #expect(moving?.2.hasPrefix("http://127.0.0.1:\(ports[1])/") == true, "the reload: \(timeline)")
            #expect(moved >= judged, "hls.js was steered off origin-a before it was judged failing: \(timeline)")
            let switched = try #require(firstOnB.map(sentAt), "no media request on origin-b: \(timeline)")
            // Nothing went to origin-b before the manifest said so, and every media request from then on did.
            #expect(switched >= moved - 0.05, "a media request on origin-b before the steering answer: \(timeline)")
            let strays = requests.filter { isMedia($0) && sentAt($0) > moved + 0.05 && !on(ports[1])($0) }
            #expect(strays.isEmpty, "media requests off origin-b after the move: \(strays.map(\.url))\n\(timeline)")
            // origin-b reads the judgement within a second, hls.js reloads the steering manifest within a TTL, and
            // asks origin-b for the next segment within a segment.
            #expect(
                switched - judged <= ttl + peerReadSeconds + segmentSeconds,
                "the move took more than a TTL, a peer read and a segment after the judgement: \(timeline)")
            #expect(playedAfterFill >= playSeconds - secondsBeforeFill - 6, "\(timeline)")
        }

        /// When origin-a's JSON log (`--log-format json`) first says its store is nearly full, the moment it judges
        /// its steered channels failing (seconds since 1970); nil without such a line.
        static func nearlyFullLogged(_ log: String) -> Double? {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            for line in log.split(separator: "\n") where line.contains("durable store nearly full") {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let time = object["time"] as? String, let date = formatter.date(from: time)
                else { continue }
                return date.timeIntervalSince1970
            }
            return nil
        }
    }
}
