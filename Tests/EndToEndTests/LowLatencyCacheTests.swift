import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEndInBrowser {
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
                    $0 % 2 == 0
                        ? "\(path)?_HLS_msn=\(msn)&_HLS_part=\(part)" : "\(path)?_HLS_part=\(part)&_HLS_msn=\(msn)"
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
                        + "nginx \(cacheStatuses); the second fetch of a part: \(secondPart.header("X-Cache-Status") ?? "-")"
                )
                await nginx.stop()
            }
        }

        @Test(
            "hls.js through nginx keeps LL latency; a second player is served parts and blocking reloads from the cache"
        )
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
                // The second player starts 6 s after the first: one of them asks for what the other already had
                // fetched, or waits on the cache lock for the same blocking reload.
                async let leading = BrowserPlayer.playOnce(
                    [
                        BrowserPlayer.Run(
                            player: .hlsjs, url: url, seconds: 45, interval: 0.25, requests: true,
                            catchUpRate: LowLatencyStream.catchUpRate, stallIncrease: 0)
                    ],
                    directory: origin.directory, label: "ll-nginx-first")
                async let following = { () async throws -> BrowserPlayer.Report in
                    try await Task.sleep(for: .seconds(6))
                    return try await BrowserPlayer.playOnce(
                        [
                            BrowserPlayer.Run(
                                player: .hlsjs, url: url, seconds: 36, interval: 0.25, requests: true,
                                catchUpRate: LowLatencyStream.catchUpRate, stallIncrease: 0)
                        ],
                        directory: origin.directory, label: "ll-nginx-second")
                }()
                let (firstReport, secondReport) = try await (leading, following)
                let first = try #require(firstReport.runs?.first)
                let second = try #require(secondReport.runs?.first)
                for (name, player) in [("first", first), ("second", second)] {
                    #expect(player.error == nil, "\(name) player: \(player.account)")
                    #expect(player.fatalErrors.isEmpty, "\(name) player: \(player.fatalErrors) \(player.account)")
                    #expect((player.summary?.all.played ?? 0) >= 28, "\(name) player: \(player.account)")
                }
                // Whichever player leads (the second often overtakes: it starts from a fresher playlist) keeps the
                // LL window; the other may sit further back (a request collapsed onto the leader's waits for
                // nginx's 500 ms lock check), reported.
                let leader = [first, second].min { $0.latencies.median < $1.latencies.median }!
                #expect(
                    leader.latencies.share(within: LowLatencyPlaybackTests.window) >= 0.8,
                    "leading player through nginx: \(leader.latencies)")

                // A part or blocking reload both players asked for: whoever asked second (by when the browser sent
                // it: the first asker's answer may reach its page after the second's HIT) was served from the cache.
                let requests = [first, second].enumerated().flatMap { index, player in
                    (player.network?.requests ?? []).filter {
                        LowLatencyRequest.cacheable.contains(LowLatencyRequest(url: $0.url))
                    }.map { (player: index, request: $0) }
                }
                let byURL = Dictionary(grouping: requests) { Self.cacheKey($0.request.url) }
                let later = byURL.values.filter { Set($0.map(\.player)).count == 2 }.flatMap {
                    $0.sorted { $0.request.askedAt < $1.request.askedAt }.dropFirst()
                }
                let hits = later.filter { $0.request.cache == "HIT" }.count
                #expect(later.count >= 50, "only \(later.count) parts and blocking reloads were asked for by both")
                let laterStatuses = Dictionary(grouping: later) { $0.request.cache ?? "-" }.mapValues(\.count)
                #expect(
                    Double(hits) >= 0.9 * Double(later.count),
                    """
                    second requests: \(hits) HIT of \(later.count): \(laterStatuses); misses: \
                    \(Self.describeMisses(byURL, later: later))
                    """)

                // The origin sees almost every cache key once. Not always exactly once: nginx checks a held cache
                // lock every 500 ms, and a request that finds the entry still being written goes upstream itself.
                let log = nginx.accessLog().filter {
                    LowLatencyRequest.cacheable.contains(LowLatencyRequest(url: $0.uri))
                }
                let keyed = Dictionary(grouping: log) { Self.cacheKey($0.uri) }
                let fetchedTwice = keyed.filter { _, lines in lines.filter { $0.cacheStatus == "MISS" }.count > 1 }
                let twice = "\(fetchedTwice.count) of \(keyed.count) keys fetched from the origin more than once"
                #expect(
                    Double(fetchedTwice.count) <= 0.05 * Double(keyed.count),
                    "\(twice): \(fetchedTwice.keys.sorted())")
                print(
                    "hls.js through nginx: first player hls.latency \(first.latencies); second player (6 s later) "
                        + "\(second.latencies); \(hits) of \(later.count) second requests for a part or blocking "
                        + "reload HIT; "
                        + "nginx \(Dictionary(grouping: nginx.accessLog(), by: \.cacheStatus).mapValues(\.count))")
                await nginx.stop()
            }
        }
    }
}

extension EndToEndInBrowser.LowLatencyCacheTests {
    /// A URL as nginx's cache key sees it: path and the query's parameters in a fixed order (origin-relative).
    static func cacheKey(_ url: String) -> String {
        let pieces = url.split(separator: "?", maxSplits: 1)
        var path = String(pieces[0])
        if let scheme = path.range(of: "://"), let slash = path[scheme.upperBound...].firstIndex(of: "/") {
            path = String(path[slash...])
        }
        let query = pieces.count > 1 ? pieces[1].split(separator: "&").sorted().joined(separator: "&") : ""
        return "\(path)?\(query)"
    }

    /// For the first misses among second requests: each request for that key (player, when sent and answered, cache
    /// status).
    static func describeMisses(
        _ byURL: [String: [(player: Int, request: BrowserPlayer.Played.Network.Request)]],
        later: [(player: Int, request: BrowserPlayer.Played.Network.Request)]
    ) -> String {
        later.filter { $0.request.cache != "HIT" }.prefix(8).map { miss in
            let key = cacheKey(miss.request.url)
            let all = (byURL[key] ?? []).sorted { $0.request.askedAt < $1.request.askedAt }.map {
                let sent = String(format: "%.3f", $0.request.askedAt.truncatingRemainder(dividingBy: 1000))
                let answered = String(format: "%.3f", $0.request.wall.truncatingRemainder(dividingBy: 1000))
                return "p\($0.player) sent \(sent) answered \(answered) \($0.request.cache ?? "-")"
            }
            return "\(key): \(all.joined(separator: ", "))"
        }.joined(separator: "; ")
    }
}

extension BrowserPlayer.Played.Network.Request {
    /// When the browser sent the request; when its page saw the answer if the timing is unknown.
    var askedAt: Double { sent ?? wall }
}

extension ConcurrentRequests.Answer {
    var text: String { String(decoding: body, as: UTF8.self) }
}
