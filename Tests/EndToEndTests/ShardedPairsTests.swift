import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEndRestarts {
    /// `config/nginx-sharded.conf` in front of two pairs of origins, each pair carrying its own three test-source
    /// channels (placed with nginx's consistent hash before nginx starts, so a request sent to the wrong pair would
    /// get a 404), one of them Low-Latency (concurrent blocking reloads and hinted parts through both hops are collapsed
    /// by the front's cache lock). A player through nginx reloads every channel's media playlist and fetches its new segments every
    /// 0.5 s while one origin of one pair is killed with SIGKILL: every answer is a 200, every request for a channel
    /// goes to its own pair (nginx's log at both hops), and the dead origin's channels are answered by its partner,
    /// never by the other pair. With the partner killed too, that pair's channels get 502, still from their pair.
    @Suite("End to end: nginx sharding channels over two pairs of origins", .tags(.endToEnd))
    struct ShardedPairsTests {
        /// The `X-HLS-Pair` value and upstream name of each pair in config/nginx-sharded.conf.
        static let pairNames = ["pair-a", "pair-b"]

        /// Test-source channels; `lowLatency` is an LL channel (parts of 0.4 s).
        static func configuration(channels: [String], lowLatency: String? = nil) -> String {
            """
            logLevel: info
            ingest:
              autoCreate: false
            channels:
            """
                + channels.map { name in
                    """

                      - name: \(name)
                        source: test-source
                        segmentDuration: 2
                        window: { segments: 6 }
                        renditions: [{ name: lo, profile: 180p }]
                    """ + (name == lowLatency ? "\n    lowLatency: { partTarget: 0.4 }" : "")
                }.joined() + "\n"
        }

        static func mediaPath(_ channel: String) -> String { "/live/\(channel)/lo/index.m3u8" }

        /// The channel a logged or fetched path names (`/live/{channel}/...`).
        static func channel(of path: String) -> String? {
            let segments = path.split(separator: "/")
            return segments.count > 2 && segments[0] == "live" ? String(segments[1]) : nil
        }

        @Test("every channel is served by its own pair; a killed origin's channels by its partner, never another pair")
        func channelsStayOnTheirPair() async throws {
            try await CDNTierProcesses.run(Self.scenario)
        }

        static func scenario(_ processes: CDNTierProcesses) async throws {
            // The pairs' internal listeners, then three channels per pair as nginx's ring places them.
            let first = try OriginProcess.freePort()
            var second = try OriginProcess.freePort()
            while second == first { second = try OriginProcess.freePort() }
            let listeners = [first, second]
            let ring = NginxConsistentHash(servers: listeners.map { "127.0.0.1:\($0)" })
            var placed: [[String]] = [[], []]
            for name in (1...64).map({ "channel\($0)" }) where placed[ring.server(for: name)].count < 3 {
                placed[ring.server(for: name)].append(name)
            }
            guard placed.allSatisfy({ $0.count == 3 }) else {
                throw EndToEndError("64 names do not give each pair three channels: \(placed)")
            }
            var pairs: [[OriginProcess]] = []
            for (index, channels) in placed.enumerated() {
                var pair: [OriginProcess] = []
                for member in 0..<2 {
                    let origin = try await OriginProcess(
                        configuration: configuration(channels: channels, lowLatency: placed[0][0]),
                        label: "shard-\(index)-\(member)")
                    processes.add(origin)
                    pair.append(origin)
                }
                pairs.append(pair)
            }
            func address(_ origin: OriginProcess) -> String { "127.0.0.1:\(origin.port)" }
            let nginx = try await NginxCache(
                shipped: "nginx-sharded.conf", accessLog: "sharded-access.log",
                cachePath: "proxy_cache_path /var/cache/nginx/hlsorigin-sharded ",
                replacing: [
                    ("server 127.0.0.1:8091 max_fails=0;", "server 127.0.0.1:\(listeners[0]) max_fails=0;"),
                    ("server 127.0.0.1:8092 max_fails=0;", "server 127.0.0.1:\(listeners[1]) max_fails=0;"),
                    ("listen 127.0.0.1:8091;", "listen 127.0.0.1:\(listeners[0]);"),
                    ("listen 127.0.0.1:8092;", "listen 127.0.0.1:\(listeners[1]);"),
                    ("        8091 pair-a;", "        \(listeners[0]) pair-a;"),
                    ("        8092 pair-b;", "        \(listeners[1]) pair-b;"),
                    ("server 127.0.0.1:8080 ", "server \(address(pairs[0][0])) "),
                    ("server 127.0.0.1:8082 ", "server \(address(pairs[0][1])) "),
                    ("server 127.0.0.1:8083 ", "server \(address(pairs[1][0])) "),
                    ("server 127.0.0.1:8084 ", "server \(address(pairs[1][1])) "),
                ], directory: pairs[0][0].directory)
            processes.set(nginx)
            let client = HTTPClient(port: nginx.port)
            for (index, channels) in placed.enumerated() {
                for channel in channels {
                    try await waitUntil(
                        "\(mediaPath(channel)) through nginx (placed on \(pairNames[index]))", timeout: .seconds(20),
                        interval: .milliseconds(200)
                    ) { (try? await client.get(mediaPath(channel)))?.status == 200 }
                }
            }
            // Low-Latency through both hops (the front's cache and lock, the pair's blocking locations).
            let lowLatency = try await LowLatencyThroughCDN.check(nginx: nginx, path: mediaPath(placed[0][0]))
            let began = ContinuousClock.now
            let player = CDNPlayer(
                port: nginx.port, playlists: placed.joined().map(mediaPath), interval: .milliseconds(500))
            processes.set(player)
            try await waitUntil("every channel reloaded twice", timeout: .seconds(10), interval: .milliseconds(100)) {
                let reloads = Dictionary(grouping: player.log.filter(\.isPlaylist)) { $0.path }
                return placed.joined().allSatisfy { (reloads[mediaPath($0)]?.count ?? 0) >= 2 }
            }

            // One origin of the first pair dies.
            let (dead, partner) = (pairs[0][0], pairs[0][1])
            dead.kill()
            _ = await dead.child.wait(timeout: .seconds(5))
            let killedAt = Date().timeIntervalSince1970
            let pairPorts = Set(listeners)
            try await waitUntil(
                "two segments of each of the dead origin's channels, answered by its partner, one passed on to it",
                timeout: .seconds(20), interval: .milliseconds(100)
            ) {
                let hops = nginx.accessLog().filter { $0.isAfter(killedAt) && pairPorts.contains($0.serverPort ?? 0) }
                let answered = Set(
                    hops.filter { $0.answeredBy == address(partner) && [200, 304].contains($0.status) }.compactMap {
                        channel(of: $0.uri)
                    })
                return answered.isSuperset(of: placed[0])
                    && hops.contains { $0.upstreams == [address(dead), address(partner)] }
                    && placed[0].allSatisfy { name in
                        player.log.filter { !$0.isPlaylist && $0.time > killedAt && channel(of: $0.path) == name }
                            .count >= 2
                    }
            }
            await player.stop()
            let seconds = Double((ContinuousClock.now - began).components.seconds)
            let fetches = player.log
            let log = nginx.accessLog()

            // The player: a 200 for every request of every channel, marked with the channel's own pair.
            let failed = fetches.filter { $0.status != 200 }
            #expect(
                failed.isEmpty, "\(failed.count) of \(fetches.count) requests not answered 200: \(failed.prefix(5))")
            let pairOf = Dictionary(
                uniqueKeysWithValues: placed.enumerated().flatMap { index, names in names.map { ($0, index) } })
            let mislabelled = fetches.filter { fetch in
                channel(of: fetch.path).flatMap { pairOf[$0] }.map { fetch.pair != pairNames[$0] } ?? true
            }
            #expect(mislabelled.isEmpty, "answers not from their channel's pair: \(mislabelled.prefix(5))")
            for (index, names) in placed.enumerated() {
                let segments = fetches.filter {
                    !$0.isPlaylist && channel(of: $0.path).map { names.contains($0) } == true
                }
                #expect(segments.count >= 3, "\(segments.count) segments of \(pairNames[index])'s channels fetched")
            }

            // nginx's front: every request that went upstream went to its channel's pair listener; both were used.
            let front = log.filter { $0.serverPort == nginx.port && !$0.upstreams.isEmpty }
            let wrongListener = front.filter { line in
                channel(of: line.uri).flatMap { pairOf[$0] }.map { line.upstreams != ["127.0.0.1:\(listeners[$0])"] }
                    ?? true
            }
            #expect(wrongListener.isEmpty, "the front sent requests elsewhere than their pair: \(wrongListener)")
            let listenersUsed = Set(front.compactMap(\.answeredBy))
            #expect(listenersUsed == Set(listeners.map { "127.0.0.1:\($0)" }), "pair listeners used: \(listenersUsed)")
            // The pair hop: every origin tried for a channel is one of its pair's, on its pair's listener.
            let hops = log.filter { pairPorts.contains($0.serverPort ?? 0) }
            let outsidePair = hops.filter { line in
                guard let pair = channel(of: line.uri).flatMap({ pairOf[$0] }) else { return true }
                let members = Set(pairs[pair].map(address))
                return line.serverPort != listeners[pair] || !Set(line.upstreams).isSubset(of: members)
            }
            #expect(outsidePair.isEmpty, "requests that left their channel's pair: \(outsidePair)")
            // After the kill, the first pair's channels were answered by the partner only.
            let afterKill = hops.filter {
                $0.isAfter(killedAt + 0.2) && channel(of: $0.uri).flatMap { pairOf[$0] } == 0
            }
            // (304: the front revalidated its expired copy, proxy_cache_revalidate.)
            let notPartner = afterKill.filter { $0.answeredBy != address(partner) || ![200, 304].contains($0.status) }
            #expect(notPartner.isEmpty, "after the kill, answered otherwise than by the partner: \(notPartner)")
            let passedOn = hops.filter { $0.isAfter(killedAt) && $0.upstreams == [address(dead), address(partner)] }
            #expect(
                !passedOn.isEmpty
                    && passedOn.allSatisfy {
                        $0.upstreamStatuses == ["502", "200"] || $0.upstreamStatuses == ["502", "304"]
                    },
                "requests passed on from the dead origin: \(passedOn.map(\.upstreamStatuses))")

            // The partner dies too: the first pair's channels get 502 from their own pair (the front does not pass
            // a failed request on, so the other pair, which would answer 404, is never asked), and the other
            // pair's channels are served as before. (`?token=` makes a cache key nginx has not seen.)
            partner.kill()
            _ = await partner.child.wait(timeout: .seconds(5))
            var bothDown: [String: Int] = [:]
            for name in placed.joined() {
                let path = pairOf[name] == 0 ? mediaPath(name) + "?token=both-down" : mediaPath(name)
                bothDown[name] = try await client.get(path).status
            }
            let expected = Dictionary(uniqueKeysWithValues: placed.joined().map { ($0, pairOf[$0] == 0 ? 502 : 200) })
            #expect(bothDown == expected, "with both origins of \(pairNames[0]) down: \(bothDown)")
            try await waitUntil("nginx to log the answers", timeout: .seconds(5), interval: .milliseconds(50)) {
                nginx.accessLog().filter { $0.uri.contains("?token=both-down") }.count
                    >= 2 * placed[0].count
            }
            let askedElsewhere = nginx.accessLog().filter {
                $0.uri.contains("?token=both-down") && $0.serverPort == nginx.port
                    && $0.upstreams != ["127.0.0.1:\(listeners[0])"]
            }
            #expect(askedElsewhere.isEmpty, "the front asked another pair: \(askedElsewhere)")

            print(
                "nginx sharding 6 channels over 2 pairs, \(Int(seconds)) s: \(pairNames[0]) \(placed[0]), "
                    + "\(pairNames[1]) \(placed[1]) (as the model of nginx's ring placed them); \(fetches.count) "
                    + "requests through nginx, all 200 from their channel's pair; after one origin of \(pairNames[0]) "
                    + "was killed: \(afterKill.count) requests reached its partner, \(passedOn.count) passed on from "
                    + "the dead origin, none left the pair; both down: \(bothDown) (502 from their own pair); "
                    + "LL channel \(placed[0][0]): \(lowLatency)")

            await nginx.stop()
            for origin in pairs[1] {
                let status = await origin.stop()
                #expect(status == 0, "an origin did not exit cleanly: \(origin.logTail())")
            }
        }
    }
}
