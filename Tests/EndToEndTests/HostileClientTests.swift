import Dispatch
import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

extension EndToEnd {
    /// Hostile clients on a second host (a network namespace, as in `RemoteAccessTests`): slow request heads, slow
    /// bodies of refused uploads and a flood of connections from one address, while players on loopback fetch the
    /// demo channel's playlist. Players are served within their usual latency; the attacker holds no connection for
    /// long and no more than its address's limit.
    @Suite(
        "End to end: hostile clients from another host", .tags(.endToEnd),
        .enabled(
            if: NetworkNamespace.permitted,
            "creating a network namespace (ip netns add) is not permitted here: run as root or with CAP_NET_ADMIN"))
    struct HostileClientTests {
        /// The attacker, run with python3 inside the namespace: ARGV host port seconds. Opens 50 slow heads (a header
        /// line a second) and 50 refused uploads that trickle their body (a byte every 2 s), then 400 idle
        /// connections at once, and watches them for `seconds`. Prints one JSON object.
        static let attacker = #"""
            import json, socket, sys, time
            host, port, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
            def connect():
                s = socket.create_connection((host, port), timeout=5)
                s.setblocking(False)
                return s
            def poll(s):
                """bytes received so far, or None if the peer closed (after them)."""
                data = b""
                while True:
                    try:
                        chunk = s.recv(65536)
                    except BlockingIOError:
                        return data, False
                    except (ConnectionResetError, OSError):
                        return data, True
                    if not chunk:
                        return data, True
                    data += chunk
            start = time.monotonic()
            heads, bodies = [], []
            for i in range(50):
                s = connect()
                s.send(b"GET /live/demo/360p/index.m3u8 HTTP/1.1\r\nHost: origin\r\n")
                heads.append({"s": s, "closed": None, "data": b""})
            for i in range(50):
                s = connect()
                s.send(b"PUT /ingest/demo/360p/slow%d.ts HTTP/1.1\r\nHost: origin\r\nContent-Length: 1000000\r\n\r\nG" % i)
                bodies.append({"s": s, "closed": None, "data": b"", "answered": None})
            flood = [connect() for _ in range(400)]
            time.sleep(1.0)
            flood_503 = flood_held = flood_other = 0
            for s in flood:
                data, closed = poll(s)
                if data.startswith(b"HTTP/1.1 503"):
                    flood_503 += 1
                elif not data and not closed:
                    flood_held += 1
                else:
                    flood_other += 1
            tick = 0
            while time.monotonic() - start < seconds:
                tick += 1
                now = time.monotonic() - start
                for entry in heads + bodies:
                    if entry["closed"] is not None:
                        continue
                    data, closed = poll(entry["s"])
                    entry["data"] += data
                    if "answered" in entry and entry["data"] and entry["answered"] is None:
                        entry["answered"] = now
                    if closed:
                        entry["closed"] = now
                        continue
                    try:
                        if entry in heads:
                            entry["s"].send(b"X-Slow-%d: a\r\n" % tick)
                        elif tick % 4 == 0:
                            entry["s"].send(b"G")
                    except OSError:
                        entry["closed"] = now
                time.sleep(0.5)
            print(json.dumps({
                "flood_503": flood_503, "flood_held": flood_held, "flood_other": flood_other,
                "heads_closed_after": [e["closed"] for e in heads],
                "bodies_answered_after": [e["answered"] for e in bodies],
                "bodies_closed_after": [e["closed"] for e in bodies],
                "body_status_lines": sorted(set(e["data"].split(b"\r\n")[0].decode("latin-1") for e in bodies)),
            }))
            """#

        /// What the attacker saw.
        struct AttackReport: Decodable {
            let flood_503: Int
            let flood_held: Int
            let flood_other: Int
            let heads_closed_after: [Double?]
            let bodies_answered_after: [Double?]
            let bodies_closed_after: [Double?]
            let body_status_lines: [String]
        }

        /// Milliseconds each playlist GET took, from `players` loopback players for `seconds`: each on a keep-alive
        /// connection, asking every 20 ms, and on a new connection every tenth request (as a player reconnects).
        static func playlistLatencies(port: Int, players: Int = 4, seconds: Double) -> [Double] {
            let all = Recorder<Double>()
            let group = DispatchGroup()
            let end = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
            for _ in 0..<players {
                DispatchQueue.global().async(group: group) {
                    var connection: RawHTTPConnection?
                    var count = 0
                    while ContinuousClock.now < end {
                        let started = ContinuousClock.now
                        do {
                            if connection == nil || count % 10 == 0 {
                                connection = try RawHTTPConnection(port: port, timeout: .seconds(10))
                            }
                            let response = try connection!.request("GET", "/live/demo/360p/index.m3u8")
                            guard response.status == 200 else { throw TestFailure("status \(response.status)") }
                            let elapsed = ContinuousClock.now - started
                            all.record(
                                Double(elapsed.components.seconds) * 1000
                                    + Double(elapsed.components.attoseconds) / 1e15)
                        } catch {
                            // A failed request counts as the longest wait a player could have had.
                            all.record(10_000)
                            connection = nil
                        }
                        count += 1
                        usleep(20_000)
                    }
                }
            }
            group.wait()
            return all.all.sorted()
        }

        static func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
            guard !sorted.isEmpty else { return .infinity }
            return sorted[min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1)]
        }

        static func summary(_ sorted: [Double]) -> String {
            String(
                format: "%d GETs, p50 %.1f ms, p99 %.1f ms, max %.1f ms", sorted.count, percentile(sorted, 0.5),
                percentile(sorted, 0.99), sorted.last ?? .infinity)
        }

        @Test func slowHeadsSlowBodiesAndAFloodFromOneAddressDoNotSlowLoopbackPlayers() async throws {
            let configuration = try OriginProcess.defaultConfiguration()
                .replacingOccurrences(of: "connectionTimeoutSeconds: 30", with: "connectionTimeoutSeconds: 5")
            try #require(configuration.contains("connectionTimeoutSeconds: 5"))
            try await OriginProcess.withRunning(configuration: configuration, label: "hostile") { origin in
                try await waitUntil("the demo playlist", timeout: .seconds(20)) {
                    (try? await ChildProcess.run(
                        "curl", ["-sf", "-o", "/dev/null", "\(origin.baseURL)/live/demo/360p/index.m3u8"],
                        in: origin.directory))?.status == 0
                }
                let port = origin.port
                let quiet = await Task.detached { Self.playlistLatencies(port: port, seconds: 8) }.value
                try await NetworkNamespace.with { namespace in
                    let script = origin.directory.appendingPathComponent("attacker.py")
                    try Data(Self.attacker.utf8).write(to: script)
                    async let attack = namespace.run(
                        "python3", [script.path, namespace.hostAddress, "\(port)", "14"], in: origin.directory,
                        timeout: .seconds(60))
                    // The players start once the attacker's connections are open.
                    try await Task.sleep(for: .seconds(1))
                    let attacked = await Task.detached { Self.playlistLatencies(port: port, seconds: 12) }.value
                    let output = try await attack
                    guard output.status == 0, let json = output.standardOutput.split(separator: "\n").last else {
                        throw EndToEndError("the attacker failed (\(output.status)): \(output.standardError)")
                    }
                    let report = try JSONDecoder().decode(AttackReport.self, from: Data(json.utf8))
                    let headsClosed = report.heads_closed_after.compactMap { $0 }
                    let bodiesAnswered = report.bodies_answered_after.compactMap { $0 }
                    let bodiesClosed = report.bodies_closed_after.compactMap { $0 }
                    print(
                        """
                        hostile clients from \(namespace.remoteAddress): flood of 400: \(report.flood_503) answered 503, \
                        \(report.flood_held) held, \(report.flood_other) other; 50 slow heads: \(headsClosed.count) cut, \
                        the last after \(headsClosed.max() ?? -1) s; 50 refused slow bodies: \(bodiesAnswered.count) \
                        answered (\(report.body_status_lines)), the last after \(bodiesAnswered.max() ?? -1) s, \
                        \(bodiesClosed.count) closed, the last after \(bodiesClosed.max() ?? -1) s
                        loopback playlist GETs without the attack: \(Self.summary(quiet))
                        loopback playlist GETs during the attack:  \(Self.summary(attacked))
                        """)
                    // One address holds at most its limit (256) of connections: the 50 slow heads and what the
                    // flood finds free (the refused bodies are closed by then, or soon after); the rest of the
                    // flood is answered 503 at once.
                    #expect(report.flood_held + 50 <= 256 && report.flood_held >= 156, "\(report.flood_held) held")
                    #expect(report.flood_503 == 400 - report.flood_held, "flood: \(report.flood_503) answered 503")
                    // A refused upload is answered at once and its connection closed: the body is never read.
                    #expect(bodiesAnswered.count == 50 && bodiesAnswered.allSatisfy { $0 < 2 })
                    #expect(bodiesClosed.count == 50 && bodiesClosed.allSatisfy { $0 < 2 })
                    #expect(report.body_status_lines == ["HTTP/1.1 403 Forbidden"])
                    // A head trickled a line a second is cut at the 5 s head deadline.
                    #expect(headsClosed.count == 50 && headsClosed.allSatisfy { $0 < 7.5 })
                    // Players on loopback: no failed request, and p99 within 50 ms of (or 3 times) the quiet one.
                    let quietP99 = Self.percentile(quiet, 0.99)
                    let attackedP99 = Self.percentile(attacked, 0.99)
                    #expect(attacked.last ?? .infinity < 10_000, "a player's request failed during the attack")
                    #expect(attackedP99 <= max(quietP99 * 3, quietP99 + 50), "p99 \(attackedP99) ms vs \(quietP99) ms")
                }
            }
        }
    }
}

/// A thread-safe list of values recorded from several threads.
private final class Recorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    func record(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }
}
