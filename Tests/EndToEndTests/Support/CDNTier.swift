import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

/// A live player through a CDN tier, as simple as one can be: every `interval` it reloads the media playlist of each
/// of its renditions, then fetches every segment listed after the newest one it fetched (at its first load, the
/// newest one only), and records each answer. Runs on a task of its own until `stop()`.
final class CDNPlayer: Sendable {
    /// One request and its answer.
    struct Fetch: Sendable {
        /// When the answer was complete, seconds since 1970 (the clock of nginx's `$msec`).
        let time: Double
        let path: String
        let isPlaylist: Bool
        /// 0 when the request failed (`error` says why).
        let status: Int
        let bytes: Int
        /// `X-HLS-Pair` (config/nginx-sharded.conf), when the answer had one.
        let pair: String?
        let error: String?
    }

    private let fetches = Mutex<[Fetch]>([])
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// Starts playing `playlists` (media playlist paths, e.g. `/live/pair/lo/index.m3u8`) through `port`.
    init(port: Int, playlists: [String], interval: Duration) {
        let client = HTTPClient(port: port)
        let loop = Task { [self] in
            var newest: [String: UInt64] = [:]
            while !Task.isCancelled {
                let round = ContinuousClock.now
                for playlist in playlists {
                    await play(playlist, client: client, newest: &newest)
                }
                try? await Task.sleep(until: round + interval)
            }
        }
        task.withLock { $0 = loop }
    }

    /// One reload of `playlist` and the segments it lists after `newest[playlist]`.
    private func play(_ playlist: String, client: HTTPClient, newest: inout [String: UInt64]) async {
        guard let answer = await fetch(playlist, isPlaylist: true, client: client), answer.status == 200,
            let listed = try? MediaPlaylistText(answer.text)
        else { return }
        let base = playlist.split(separator: "/").dropLast().joined(separator: "/")
        let fresh = listed.entries.filter { entry in newest[playlist].map { entry.msn > $0 } ?? true }
        for entry in newest[playlist] == nil ? Array(fresh.suffix(1)) : fresh {
            _ = await fetch("/\(base)/\(entry.uri)", isPlaylist: false, client: client)
            newest[playlist] = max(newest[playlist] ?? 0, entry.msn)
        }
    }

    private func fetch(_ path: String, isPlaylist: Bool, client: HTTPClient) async -> RawHTTPResponse? {
        do {
            let answer = try await client.get(path)
            record(
                Fetch(
                    time: Date().timeIntervalSince1970, path: path, isPlaylist: isPlaylist, status: answer.status,
                    bytes: answer.body.count, pair: answer.header("X-HLS-Pair"),
                    error: answer.status == 200 ? nil : answer.text))
            return answer
        } catch {
            record(
                Fetch(
                    time: Date().timeIntervalSince1970, path: path, isPlaylist: isPlaylist, status: 0, bytes: 0,
                    pair: nil, error: "\(error)"))
            return nil
        }
    }

    private func record(_ fetch: Fetch) { fetches.withLock { $0.append(fetch) } }

    /// Every request so far.
    var log: [Fetch] { fetches.withLock { $0 } }

    /// Stops the loop (the request in flight is finished first).
    func stop() async {
        let loop = task.withLock { $0 }
        loop?.cancel()
        await loop?.value
    }
}

/// nginx's `hash KEY consistent` (ngx_http_upstream_hash_module; Cache::Memcached::Fast's scheme), to place
/// channels on config/nginx-sharded.conf's pairs before nginx runs: 160 points per server (weight 1), point i being
/// crc32(host, 0, port, point i-1 as 4 little-endian bytes) with point -1 = 0, host and port as written in the
/// `server` line; a key goes to the server of the first point at or after crc32(key), wrapping round.
struct NginxConsistentHash: Sendable {
    /// The ring: (point, index of its server), by point.
    let points: [(hash: UInt32, server: Int)]

    /// `servers` as written in the upstream block, e.g. "127.0.0.1:8091".
    init(servers: [String]) {
        var points: [(hash: UInt32, server: Int)] = []
        for (index, server) in servers.enumerated() {
            let colon = server.lastIndex(of: ":") ?? server.endIndex
            let port = colon < server.endIndex ? server[server.index(after: colon)...] : ""
            let base = Array(server[..<colon].utf8) + [0] + Array(port.utf8)
            var previous: UInt32 = 0
            for _ in 0..<160 {
                let bytes = withUnsafeBytes(of: previous.littleEndian) { Array($0) }
                previous = Self.crc32(base + bytes)
                points.append((previous, index))
            }
        }
        self.points = points.sorted { $0.hash < $1.hash }
    }

    /// The index (in `servers`) of the server nginx sends `key` to while every server is up.
    func server(for key: String) -> Int {
        let hash = Self.crc32(Array(key.utf8))
        var low = 0
        var high = points.count
        while low < high {
            let middle = (low + high) / 2
            if points[middle].hash < hash { low = middle + 1 } else { high = middle }
        }
        return points[low % points.count].server
    }

    /// CRC-32 (IEEE 802.3, reflected, as zlib and nginx's ngx_crc32_long).
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}

/// What an end-to-end test around a CDN tier started, for stopping it all when the test fails halfway.
final class CDNTierProcesses: Sendable {
    private struct State {
        var children: [ChildProcess] = []
        var origins: [OriginProcess] = []
        var nginx: NginxCache?
        var player: CDNPlayer?
    }

    private let state = Mutex(State())

    func add(_ child: ChildProcess) { state.withLock { $0.children.append(child) } }
    func add(_ origin: OriginProcess) { state.withLock { $0.origins.append(origin) } }
    func set(_ nginx: NginxCache) { state.withLock { $0.nginx = nginx } }
    func set(_ player: CDNPlayer) { state.withLock { $0.player = player } }

    /// Every origin started, in order (a restarted one after the one it replaced).
    var origins: [OriginProcess] { state.withLock { $0.origins } }

    /// The last lines of every origin's log, for a failure message.
    func logTails() -> String {
        origins.map { "--- hlsorigin \($0.directory.lastPathComponent) ---\n\($0.logTail(20))" }
            .joined(separator: "\n")
    }

    /// Runs `scenario`; when it throws, kills everything it started and adds the origins' log tails to the error.
    static func run(_ scenario: (CDNTierProcesses) async throws -> Void) async throws {
        let processes = CDNTierProcesses()
        do {
            try await scenario(processes)
        } catch {
            await processes.killAll()
            throw EndToEndError("\(error)\n\(processes.logTails())")
        }
    }

    /// Stops the player and kills everything else at once.
    func killAll() async {
        let (children, origins, nginx, player) = state.withLock { ($0.children, $0.origins, $0.nginx, $0.player) }
        await player?.stop()
        nginx?.child.signal(SIGKILL)
        for child in children { child.signal(SIGKILL) }
        for origin in origins { origin.kill() }
    }
}

/// Low-Latency requests through a CDN tier as LL players make them, all at once: `count` blocking reloads of the part
/// after the preload-hinted one (half with the parameters in each order) and `count` requests of the hinted part.
/// Checked: every answer a 200, the reloads identical and listing that part, the hinted part's bodies identical; at
/// nginx's front, the reloads' one cache key fetched once (one MISS, the rest HIT: canonical key and cache lock), the
/// hinted part once or twice.
enum LowLatencyThroughCDN {
    /// Runs the check on `path` (an LL media playlist) through `nginx`; returns a line for the test's output.
    static func check(nginx: NginxCache, path: String, count: Int = 10) async throws -> String {
        let client = HTTPClient(port: nginx.port)
        let playlist = try await LowLatencyStream.awaitParts(client: client, path: path, parts: 2)
        let last = try #require(playlist.lastPart, "\(playlist.text)")
        let hint = try #require(playlist.preloadHint, "no preload hint:\n\(playlist.text)")
        let (msn, part) = (last.msn, last.index + 2)
        let base = path.split(separator: "/").dropLast().joined(separator: "/")
        let reloads = (0..<count).map {
            $0 % 2 == 0 ? "\(path)?_HLS_msn=\(msn)&_HLS_part=\(part)" : "\(path)?_HLS_part=\(part)&_HLS_msn=\(msn)"
        }
        let partPath = "/\(base)/\(hint)"
        let before = nginx.accessLog().count
        let answers = await ConcurrentRequests.get(reloads + Array(repeating: partPath, count: count), port: nginx.port)
        let statuses = Dictionary(grouping: answers, by: \.status).mapValues(\.count)
        #expect(statuses == [200: 2 * count], "statuses \(statuses); \(answers.compactMap(\.error).prefix(3))")
        let reloadBodies = Set(answers.prefix(count).map(\.body))
        #expect(reloadBodies.count == 1, "\(reloadBodies.count) different answers to one blocking reload")
        #expect(
            LowLatencyPlaylist(answers[0].text).parts.contains { $0.msn > msn || ($0.msn == msn && $0.index >= part) },
            "the blocking reload's answer does not list \(msn).\(part):\n\(answers[0].text)")
        let partBodies = Set(answers.suffix(count).map(\.body))
        #expect(partBodies.count == 1 && !answers[count].body.isEmpty, "hinted part \(hint): \(partBodies.count)")

        // The front's lines (nginx writes each after its answer is sent).
        func front() -> [NginxCache.LogLine] {
            nginx.accessLog().dropFirst(before).filter { $0.serverPort == nil || $0.serverPort == nginx.port }
        }
        try await waitUntil("nginx to log every answer", timeout: .seconds(5), interval: .milliseconds(50)) {
            front().count >= 2 * count
        }
        let lines = front()
        let reloadStatuses = Dictionary(
            grouping: lines.filter { $0.uri.contains("_HLS_msn=\(msn)") }, by: \.cacheStatus
        ).mapValues(\.count)
        let partStatuses = Dictionary(grouping: lines.filter { $0.uri == partPath }, by: \.cacheStatus)
            .mapValues(\.count)
        #expect(reloadStatuses == ["MISS": 1, "HIT": count - 1], "blocking reloads at nginx: \(reloadStatuses)")
        // A hinted part is written into the cache while it is being made; a waiter whose 500 ms lock check finds
        // it still being written may go to the origin itself (as in LowLatencyCacheTests): at most one more.
        let partMisses = partStatuses["MISS"] ?? 0
        #expect(
            (1...2).contains(partMisses) && partStatuses["HIT"] == count - partMisses,
            "hinted part at nginx: \(partStatuses)")
        let seconds = answers.map(\.seconds).max() ?? 0
        return "\(count) blocking reloads of \(msn).\(part) and \(count) requests of the hinted part \(hint): all 200 "
            + "within \(String(format: "%.2f", seconds)) s; at nginx \(reloadStatuses) and "
            + "\(partStatuses)"
    }
}
