import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEnd {
    /// The shipped nginx configuration (`config/nginx-llhls.conf`) in front of an LL channel: concurrent identical
    /// blocking reloads, in either parameter order, reach the origin once; players through it are served parts and
    /// blocking playlists from the cache, each fetched from the origin once however many players ask.
    @Suite("End to end: low-latency through the nginx cache", .tags(.endToEnd))
    struct LowLatencyCacheTests {
        @Test("50 concurrent identical blocking reloads in both parameter orders: all 200, one origin request")
        func concurrentBlockingReloadsCollapse() async throws {
            try await OriginProcess.withRunning(
                configuration: LowLatencyStream.configuration(), label: "ll-nginx-collapse"
            ) { origin in
                let encoder = try LowLatencyStream.startPush(
                    port: origin.port, directory: origin.directory, label: "ffmpeg-ll")
                defer { encoder.signal(SIGKILL) }
                let nginx = try await NginxCache(originPort: origin.port, directory: origin.directory)
                defer { nginx.child.signal(SIGKILL) }
                let client = HTTPClient(port: nginx.port)
                let playlist = try await LowLatencyStream.awaitParts(
                    client: client, path: LowLatencyStream.mediaPath, parts: 3)
                let last = try #require(playlist.lastPart, "\(playlist.text)")
                // The part after the hinted one: nothing can answer it for about two part durations.
                let (msn, part) = (last.msn, last.index + 2)
                let path = LowLatencyStream.mediaPath
                let paths = (0..<50).map {
                    $0 % 2 == 0 ? "\(path)?_HLS_msn=\(msn)&_HLS_part=\(part)" : "\(path)?_HLS_part=\(part)&_HLS_msn=\(msn)"
                }
                let before = nginx.accessLog().count
                let answers = await ConcurrentRequests.get(paths, port: nginx.port)
                let statuses = Dictionary(grouping: answers, by: \.status).mapValues(\.count)
                #expect(statuses == [200: 50], "statuses \(statuses); errors \(answers.compactMap(\.error).prefix(3))")
                let bodies = Set(answers.map(\.body))
                #expect(bodies.count == 1, "\(bodies.count) different playlists for one blocking request")
                let answered = LowLatencyPlaylist(answers[0].text)
                #expect(
                    answered.parts.contains { $0.msn > msn || ($0.msn == msn && $0.index >= part) },
                    "the answer does not list \(msn).\(part):\n\(answers[0].text)")
                try await Task.sleep(for: .milliseconds(200))
                let logged = nginx.accessLog().dropFirst(before).filter { $0.uri.contains("_HLS_msn=\(msn)") }
                let cacheStatuses = Dictionary(grouping: logged, by: \.cacheStatus).mapValues(\.count)
                // One request went to the origin (MISS); the other 49 waited on the cache lock and were served the
                // cached answer (HIT).
                #expect(cacheStatuses == ["MISS": 1, "HIT": 49], "nginx cache statuses \(cacheStatuses)")
                let seconds = answers.map(\.seconds).sorted()

                // A second player's part request: cached by the first.
                let partPath = "/live/\(LowLatencyStream.channel)/\(LowLatencyStream.rendition)/\(last.uri)"
                let firstPart = try await client.get(partPath)
                let secondPart = try await client.get(partPath)
                #expect(firstPart.status == 200 && secondPart.status == 200)
                #expect(secondPart.header("X-Cache-Status") == "HIT", "\(secondPart.headers)")
                #expect(firstPart.body == secondPart.body)
                print(
                    "nginx in front of an LL channel: 50 concurrent blocking reloads of \(msn).\(part) answered "
                        + "200 in \(String(format: "%.3f", seconds.first!))-\(String(format: "%.3f", seconds.last!)) s, "
                        + "nginx \(cacheStatuses); the second fetch of a part: \(secondPart.header("X-Cache-Status") ?? "-")")
                await nginx.stop()
            }
        }

        @Test("two hls.js players through nginx: LL latency kept, each part and blocking reload fetched from the origin once")
        func playersThroughTheCache() async throws {
            try await OriginProcess.withRunning(
                configuration: LowLatencyStream.configuration(), label: "ll-nginx-play"
            ) { origin in
                let encoder = try LowLatencyStream.startPush(
                    port: origin.port, directory: origin.directory, label: "ffmpeg-ll")
                defer { encoder.signal(SIGKILL) }
                let nginx = try await NginxCache(originPort: origin.port, directory: origin.directory)
                defer { nginx.child.signal(SIGKILL) }
                _ = try await LowLatencyStream.awaitParts(
                    client: HTTPClient(port: nginx.port), path: LowLatencyStream.mediaPath, parts: 3)
                let url = nginx.baseURL + LowLatencyStream.multivariantPath
                let run = BrowserPlayer.Run(player: .hlsjs, url: url, seconds: 40, interval: 0.25, requests: true)
                async let first = BrowserPlayer.playOnce([run], directory: origin.directory, label: "ll-nginx-a")
                async let second = BrowserPlayer.playOnce([run], directory: origin.directory, label: "ll-nginx-b")
                let players = try await [first, second].compactMap { $0.runs?.first }
                #expect(players.count == 2)
                for (index, player) in players.enumerated() {
                    #expect(player.error == nil, "player \(index): \(player.account)")
                    #expect(player.fatalErrors.isEmpty, "player \(index): \(player.fatalErrors) \(player.account)")
                    #expect((player.summary?.all.played ?? 0) >= 30, "player \(index): \(player.account)")
                }
                // Through the cache a collapsed blocking reload may wait up to 0.5 s more (nginx checks its cache
                // lock every 500 ms), so the window here is 1-3 s.
                let latencies = players.map(\.latencies)
                for (index, latency) in latencies.enumerated() {
                    #expect(latency.share(within: 1.0...3.0) >= 0.8, "player \(index) through nginx: \(latency)")
                }

                // Every part and blocking reload the players asked nginx for went to the origin at most once.
                let log = nginx.accessLog()
                let cached = log.filter {
                    [.part, .blockingPlaylist, .deltaPlaylist].contains(LowLatencyRequest(url: $0.uri))
                }
                let keyed = Dictionary(grouping: cached) { line -> String in
                    // nginx's key: the directives in a fixed order.
                    let pieces = line.uri.split(separator: "?", maxSplits: 1)
                    let query = pieces.count > 1 ? pieces[1].split(separator: "&").sorted().joined(separator: "&") : ""
                    return "\(pieces[0])?\(query)"
                }
                let fetchedTwice = keyed.filter { _, lines in
                    lines.filter { $0.cacheStatus == "MISS" || $0.cacheStatus == "EXPIRED" }.count > 1
                }
                #expect(fetchedTwice.isEmpty, "fetched from the origin more than once: \(fetchedTwice.keys.sorted())")
                let hits = cached.filter { $0.cacheStatus == "HIT" }.count
                let shared = keyed.values.filter { $0.count >= 2 }.count
                #expect(hits >= shared, "\(hits) hits for \(shared) URLs both players asked for")
                #expect(shared >= 40, "the players asked nginx for only \(shared) common parts and reloads")
                print(
                    "two hls.js players through nginx: hls.latency \(latencies.map(\.description)); "
                        + "\(cached.count) part and blocking requests, \(keyed.count) distinct, \(hits) HIT; "
                        + "statuses \(Dictionary(grouping: log, by: \.cacheStatus).mapValues(\.count))")
                await nginx.stop()
            }
        }
    }
}

extension ConcurrentRequests.Answer {
    var text: String { String(decoding: body, as: UTF8.self) }
}
