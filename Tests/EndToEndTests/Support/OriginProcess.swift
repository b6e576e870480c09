import Foundation
import Glibc
import TestSupport

/// The real `hlsorigin` release binary, started on port 0 with a configuration file written for the test and a
/// fresh data directory. Its stdout and stderr go to files in the test's directory (stderr is the log: it is quoted
/// in failure messages).
final class OriginProcess: Sendable {
    /// The child process.
    let child: ChildProcess
    /// The port it listens on (read from its "hlsorigin listening on HOST:PORT" line).
    let port: Int
    /// The HTTPS port, when the configuration has `server.tls` (read from its "hlsorigin listening for https on
    /// HOST:PORT" line, printed before the HTTP one).
    let tlsPort: Int?
    /// The test's directory (configuration, data directory, logs).
    let directory: URL

    /// The binary the tests run: `HLSORIGIN_BINARY`, else `<package root>/.build/release/hlsorigin`.
    static func binary() throws -> URL {
        if let path = ProcessInfo.processInfo.environment["HLSORIGIN_BINARY"], !path.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw EndToEndError("HLSORIGIN_BINARY=\(path) is not an executable file: run scripts/test")
            }
            return URL(fileURLWithPath: path)
        }
        let url = packageRoot.appendingPathComponent(".build/release/hlsorigin")
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw EndToEndError(
                "the end-to-end tests run the release binary, and \(url.path) does not exist: run scripts/test "
                    + "(it builds it with `swift build -c release --product hlsorigin`), or set HLSORIGIN_BINARY")
        }
        return url
    }

    /// The package's root directory (this file is `<root>/Tests/EndToEndTests/Support/OriginProcess.swift`).
    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
    }

    /// The text of `config/default.yaml` (the demo channel).
    static func defaultConfiguration() throws -> String {
        try String(contentsOf: packageRoot.appendingPathComponent("config/default.yaml"), encoding: .utf8)
    }

    /// Starts the origin with `configuration` (YAML text) and waits until it listens.
    /// - Parameters:
    ///   - port: the port to listen on; 0 lets the origin pick one.
    ///   - restarting: the directory of an earlier origin (killed or stopped): its data directory is used again, so
    ///     the new origin continues from the state journal; its log goes to `hlsorigin-<label>.err`.
    ///   - environment: variables added to the origin's environment (e.g. `NOTIFY_SOCKET`).
    ///   - executable: the binary to run instead of `binary()` (e.g. a copy without its resource bundles).
    ///   - arguments: added to the command line (e.g. `--log-format json`, for log lines timed to the millisecond).
    init(
        configuration: String, label: String, port requestedPort: Int = 0, restarting: URL? = nil,
        environment: [String: String] = [:], executable: URL? = nil, arguments: [String] = []
    ) async throws {
        let binary = try executable ?? Self.binary()
        directory = try restarting ?? TemporaryDirectory.make("hlsorigin-e2e-\(label)")
        let configURL = directory.appendingPathComponent("config.yaml")
        try Data(configuration.utf8).write(to: configURL)
        let dataDirectory = directory.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        child = try ChildProcess(
            executable: binary,
            arguments: ["--config", configURL.path, "--port", "\(requestedPort)", "--data-dir", dataDirectory.path]
                + arguments,
            directory: directory, label: restarting == nil ? "hlsorigin" : "hlsorigin-\(label)", environment: environment)
        let deadline = ContinuousClock.now + .seconds(15)
        var found: Int?
        while found == nil {
            if let line = child.standardOutput.split(separator: "\n").first(where: {
                $0.hasPrefix("hlsorigin listening on ")
            }) {
                // "hlsorigin listening on HOST:PORT (config: ...)"
                let address = line.dropFirst("hlsorigin listening on ".count).split(separator: " ").first ?? ""
                found = address.split(separator: ":").last.flatMap { Int($0) }
                if found == nil { throw EndToEndError("cannot read the port from '\(line)'") }
                break
            }
            if !child.isRunning {
                throw EndToEndError(
                    "hlsorigin exited with status \(child.wasSignalled ? "signal " : "")"
                        + "\(await child.wait(timeout: .seconds(1)) ?? -1) before listening; stderr:\n"
                        + child.standardError)
            }
            if ContinuousClock.now >= deadline {
                child.signal(SIGKILL)
                throw EndToEndError(
                    "hlsorigin did not print its listening line within 15 s; stderr:\n\(child.standardError)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        port = found!
        let httpsLine = child.standardOutput.split(separator: "\n").first {
            $0.hasPrefix("hlsorigin listening for https on ")
        }
        tlsPort = httpsLine.flatMap { $0.split(separator: ":").last.flatMap { Int($0) } }
    }

    /// A TCP port that is free on 127.0.0.1 right now (bound to port 0 and released), for an origin that must keep its
    /// port across a restart.
    static func freePort() throws -> Int {
        guard let port = freeLoopbackPort(socketType: streamSocketType) else {
            throw EndToEndError("cannot bind a free port: errno \(errno)")
        }
        return port
    }

    /// Base URL, e.g. `http://127.0.0.1:41234`.
    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// The last `lines` lines of the origin's log, for failure messages.
    func logTail(_ lines: Int = 40) -> String {
        child.standardError.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines)
            .joined(separator: "\n")
    }

    /// Sends SIGTERM and waits up to 10 s; kills it if it does not stop. Returns the exit status (nil if killed).
    @discardableResult
    func stop() async -> Int32? {
        guard child.isRunning else { return await child.wait(timeout: .seconds(1)) }
        child.signal(SIGTERM)
        if let status = await child.wait(timeout: .seconds(10)) { return status }
        child.signal(SIGKILL)
        _ = await child.wait(timeout: .seconds(5))
        return nil
    }

    /// Kills the origin at once (failure paths).
    func kill() {
        child.signal(SIGKILL)
    }

    /// Starts an origin, runs `body`, and always stops the origin (SIGTERM, then SIGKILL), also when `body` throws.
    /// Expects a clean exit (status 0) after SIGTERM. The directory stays for diagnostics (it holds the log).
    static func withRunning<T>(
        configuration: String, label: String, executable: URL? = nil, _ body: (OriginProcess) async throws -> T
    ) async throws -> T {
        let origin = try await OriginProcess(configuration: configuration, label: label, executable: executable)
        let result: T
        do {
            result = try await body(origin)
        } catch {
            origin.kill()
            _ = await origin.child.wait(timeout: .seconds(5))
            throw EndToEndError("\(error)\n--- hlsorigin log tail (\(origin.directory.path)) ---\n\(origin.logTail())")
        }
        let status = await origin.stop()
        guard status == 0, !origin.child.wasSignalled else {
            throw EndToEndError(
                "hlsorigin did not exit cleanly after SIGTERM (status \(status.map(String.init) ?? "none: killed"))"
                    + "\n--- log tail ---\n\(origin.logTail())")
        }
        return result
    }
}
