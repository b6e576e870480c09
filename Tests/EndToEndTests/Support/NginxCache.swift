import Foundation
import Glibc
import TestSupport

/// Debian's nginx run in the foreground with one of the shipped configurations (`config/nginx-llhls.conf`,
/// `config/nginx-redundant.conf`, `config/nginx-sharded.conf`), only its marked values replaced (origin addresses,
/// listen port, cache directory, ...), in front of a test's origins. Its access log carries `$upstream_cache_status`
/// per request, and in the redundant and sharded formats the origins nginx tried.
final class NginxCache: Sendable {
    let child: ChildProcess
    let port: Int
    let directory: URL
    /// The access log's file name in `directory`, as the shipped configuration's `access_log` names it.
    let accessLogName: String

    /// One access log line: `$msec $status $upstream_cache_status $request_time "$request_uri" $body_bytes_sent`,
    /// then in the redundant and sharded formats `"$upstream_addr" "$upstream_status"`, and in the sharded one
    /// `$server_port`.
    struct LogLine: Sendable {
        /// When nginx answered, seconds since 1970 (`$msec`).
        let time: Double
        let status: Int
        /// HIT, MISS, EXPIRED, UPDATING, ... or "-" when the request did not use the cache.
        let cacheStatus: String
        let requestTime: Double
        let uri: String
        /// Every upstream server tried, in order (`$upstream_addr`: "127.0.0.1:PORT", or the upstream's name when
        /// none was live); empty when no upstream was asked (a cache hit, a refusal) or the format has no such field.
        let upstreams: [String]
        /// The status each of them gave (`$upstream_status`; "502" for a refused connection), in the same order.
        let upstreamStatuses: [String]
        /// `$server_port`: in the sharded format, which server block logged the line (the front or a pair listener).
        let serverPort: Int?

        /// The upstream that gave the answer: the last one tried.
        var answeredBy: String? { upstreams.last }

        /// Whether nginx may have written the line after `instant` (seconds since 1970): `$msec` is cut to the
        /// millisecond, so a line written in the millisecond of `instant` counts.
        func isAfter(_ instant: Double) -> Bool { time + 0.001 > instant }
    }

    /// Starts nginx with `config/nginx-llhls.conf` in front of one origin; throws when nginx is not installed
    /// (scripts/test installs nginx-light) or does not listen.
    convenience init(originPort: Int, directory parent: URL) async throws {
        try await self.init(
            shipped: "nginx-llhls.conf", accessLog: "llhls-access.log",
            cachePath: "proxy_cache_path /var/cache/nginx/hlsorigin ",
            replacing: [("server 127.0.0.1:8080;", "server 127.0.0.1:\(originPort);")], directory: parent)
    }

    /// Starts nginx with the shipped configuration `config/NAME`, every marked value replaced: `listen` (the marked
    /// listen line) by a free port on 127.0.0.1, `cachePath` (the marked `proxy_cache_path` up to the space after its
    /// directory) by a directory of the test's, and each pair of `replacing` (text that must occur exactly once, and
    /// its value). Throws when nginx is not installed (scripts/test installs nginx-light) or does not listen.
    init(
        shipped name: String, accessLog: String, listen: String = "listen 8081;", cachePath: String,
        replacing: [(String, String)], directory parent: URL
    ) async throws {
        guard let nginx = ChildProcess.locate("nginx") ?? ChildProcess.locate("/usr/sbin/nginx") else {
            throw EndToEndError("nginx is not installed: apt-get install nginx-light (scripts/test does)")
        }
        directory = parent.appendingPathComponent("nginx")
        accessLogName = accessLog
        let cache = directory.appendingPathComponent("cache")
        try FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
        port = try OriginProcess.freePort()
        let shipped = try String(
            contentsOf: OriginProcess.packageRoot.appendingPathComponent("config/\(name)"), encoding: .utf8)
        var text = shipped
        let cacheDirectory = "proxy_cache_path " + cache.path + " "
        for (marked, value) in [(listen, "listen 127.0.0.1:\(port);"), (cachePath, cacheDirectory)] + replacing {
            guard text.components(separatedBy: marked).count == 2 else {
                throw EndToEndError("config/\(name): expected '\(marked)' exactly once")
            }
            text = text.replacingOccurrences(of: marked, with: value)
        }
        let configuration = directory.appendingPathComponent("nginx.conf")
        try Data(text.utf8).write(to: configuration)
        // The workers of a root master run as nobody, who cannot write the test's directories: keep them root here.
        let global = getuid() == 0 ? "daemon off; user root;" : "daemon off;"
        child = try ChildProcess(
            executable: nginx, arguments: ["-p", directory.path, "-c", configuration.path, "-g", global],
            directory: directory, label: "nginx")
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            if (try? RawHTTPConnection(port: port, timeout: .seconds(1))) != nil { break }
            if !child.isRunning {
                throw EndToEndError("nginx exited before listening:\n\(child.standardError)")
            }
            if ContinuousClock.now >= deadline {
                child.signal(SIGKILL)
                throw EndToEndError("nginx did not listen within 10 s:\n\(child.standardError)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// The access log so far.
    func accessLog() -> [LogLine] {
        let text =
            (try? String(contentsOf: directory.appendingPathComponent(accessLogName), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap(Self.parse)
    }

    /// One line of the access log; nil for a line in none of the formats.
    static func parse(_ line: Substring) -> LogLine? {
        // Quoted fields: [1] the URI, [3] $upstream_addr, [5] $upstream_status; [0] the head, [6] $server_port.
        let quoted = line.split(separator: "\"", omittingEmptySubsequences: false)
        guard quoted.count >= 2 else { return nil }
        let head = quoted[0].split(separator: " ")
        guard head.count >= 4, let time = Double(head[0]), let status = Int(head[1]) else { return nil }
        /// "a, b : c" -> [a, b, c] (", " separates servers, " : " internal redirects); "-" -> [].
        func list(_ index: Int) -> [String] {
            guard quoted.count > index else { return [] }
            return quoted[index].components(separatedBy: " : ").flatMap { $0.components(separatedBy: ", ") }
                .filter { !$0.isEmpty && $0 != "-" }
        }
        return LogLine(
            time: time, status: status, cacheStatus: String(head[2]), requestTime: Double(head[3]) ?? 0,
            uri: String(quoted[1]), upstreams: list(3), upstreamStatuses: list(5),
            serverPort: quoted.count > 6 ? Int(quoted[6].trimmingCharacters(in: .whitespaces)) : nil)
    }

    /// Stops nginx (SIGQUIT: graceful), killing it after 5 s.
    func stop() async {
        child.signal(SIGQUIT)
        if await child.wait(timeout: .seconds(5)) == nil {
            child.signal(SIGKILL)
            _ = await child.wait(timeout: .seconds(5))
        }
    }
}
