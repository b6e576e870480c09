import Foundation
import Glibc
import TestSupport

/// Debian's nginx run in the foreground with the shipped `config/nginx-llhls.conf`, only its three marked values
/// replaced (origin address, listen port, cache directory), in front of a test's origin. Its access log carries
/// `$upstream_cache_status` per request.
final class NginxCache: Sendable {
    let child: ChildProcess
    let port: Int
    let directory: URL

    /// One access log line: `$msec $status $upstream_cache_status $request_time "$request_uri" $body_bytes_sent`.
    struct LogLine: Sendable {
        let time: Double
        let status: Int
        /// HIT, MISS, EXPIRED, UPDATING, ... or "-" when the request did not use the cache.
        let cacheStatus: String
        let requestTime: Double
        let uri: String
    }

    /// Starts nginx; throws when nginx is not installed (scripts/test installs nginx-light) or does not listen.
    init(originPort: Int, directory parent: URL) async throws {
        guard let nginx = ChildProcess.locate("nginx") ?? ChildProcess.locate("/usr/sbin/nginx") else {
            throw EndToEndError("nginx is not installed: apt-get install nginx-light (scripts/test does)")
        }
        directory = parent.appendingPathComponent("nginx")
        let cache = directory.appendingPathComponent("cache")
        try FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
        port = try OriginProcess.freePort()
        let shipped = try String(
            contentsOf: OriginProcess.packageRoot.appendingPathComponent("config/nginx-llhls.conf"), encoding: .utf8)
        var text = shipped
        for (marked, value) in [
            ("server 127.0.0.1:8080;", "server 127.0.0.1:\(originPort);"),
            ("listen 8081;", "listen 127.0.0.1:\(port);"),
            ("proxy_cache_path /var/cache/nginx/hlsorigin ", "proxy_cache_path \(cache.path) "),
        ] {
            guard text.components(separatedBy: marked).count == 2 else {
                throw EndToEndError("config/nginx-llhls.conf: expected '\(marked)' exactly once")
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
            (try? String(contentsOf: directory.appendingPathComponent("llhls-access.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let quoted = line.split(separator: "\"")
            guard quoted.count >= 2 else { return nil }
            let head = quoted[0].split(separator: " ")
            guard head.count >= 4, let time = Double(head[0]), let status = Int(head[1]) else { return nil }
            return LogLine(
                time: time, status: status, cacheStatus: String(head[2]), requestTime: Double(head[3]) ?? 0,
                uri: String(quoted[1]))
        }
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
