import Foundation
import Glibc
import Synchronization
import TestSupport

/// A throwaway PostgreSQL server from Debian's `postgresql` package (scripts/test installs it): `initdb` into a
/// temporary directory (trust authentication, user `hlsorigin`, fsync off), then `postgres` on a free loopback port.
/// PostgreSQL refuses to run as root: when the tests run as root, the cluster's directory is given to the `postgres`
/// user the package creates and both programs run as that user (`runuser`).
final class PostgresCluster: Sendable {
    let directory: URL
    let port: Int
    private let server: Mutex<ChildProcess?>

    /// The URL hlsorigin's `database.url` takes.
    var url: String { "postgres://hlsorigin@127.0.0.1:\(port)/postgres" }

    /// Server settings (`-c name=value` arguments) added at every start.
    private let settings: [String]

    /// Makes the cluster and starts the server; throws when PostgreSQL is not installed or does not start.
    /// - Parameter prepare: called with the cluster's directory after `initdb` (its data in `data/`); returns
    ///   settings for the server (`["ssl=on", ...]`), e.g. after writing certificates or `pg_hba.conf`.
    init(label: String, prepare: ((URL) throws -> [String])? = nil) async throws {
        directory = try TemporaryDirectory.make("hlsorigin-pg-\(label)")
        port = try OriginProcess.freePort()
        server = Mutex(nil)
        let data = directory.appendingPathComponent("data")
        try await Self.asDatabaseUser(
            try Self.program("initdb"),
            ["-D", data.path, "-A", "trust", "-U", "hlsorigin", "--no-sync", "-E", "UTF8"],
            directory: directory, label: "initdb", wait: true)
        settings = try prepare?(directory) ?? []
        try await start()
    }

    /// Starts the server on the cluster (again, after `stop()`), and waits until it accepts connections.
    func start() async throws {
        let child = try await Self.asDatabaseUser(
            try Self.program("postgres"),
            [
                "-D", directory.appendingPathComponent("data").path, "-p", "\(port)", "-k", directory.path,
                "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
            ] + settings.flatMap { ["-c", $0] }, directory: directory, label: "postgres", wait: false)
        server.withLock { $0 = child }
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if Self.accepts(port: port) { return }
            if !(child?.isRunning ?? false) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw EndToEndError(
            "PostgreSQL did not accept connections on port \(port): \(child?.standardError ?? "")")
    }

    /// Stops the server (fast shutdown) and waits for it to exit.
    func stop() async {
        guard
            let child = server.withLock({ server -> ChildProcess? in
                defer { server = nil }
                return server
            })
        else { return }
        // The server itself, not `runuser` in front of it (which does not pass signals on): its PID is the first
        // line of postmaster.pid. SIGINT is PostgreSQL's fast shutdown.
        let pidFile = directory.appendingPathComponent("data/postmaster.pid")
        let serverPID = (try? String(contentsOf: pidFile, encoding: .utf8))?.split(separator: "\n").first
            .flatMap { Int32($0.trimmingCharacters(in: .whitespaces)) }
        if let serverPID { kill(serverPID, SIGINT) } else { child.signal(SIGINT) }
        if await child.wait(timeout: .seconds(10)) == nil {
            if let serverPID { kill(serverPID, SIGKILL) }
            child.signal(SIGKILL)
            _ = await child.wait(timeout: .seconds(5))
        }
    }

    /// Stops the server and removes the cluster.
    func remove() async {
        await stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// The newest installed version's program (`/usr/lib/postgresql/N/bin/NAME`).
    static func program(_ name: String) throws -> URL {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
            let url = root.appendingPathComponent(version).appendingPathComponent("bin").appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw EndToEndError(
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/\(name)): apt install postgresql")
    }

    /// Runs `program` as the `postgres` user when this process is root (PostgreSQL refuses root), else as is.
    @discardableResult
    private static func asDatabaseUser(
        _ program: URL, _ arguments: [String], directory: URL, label: String, wait: Bool
    ) async throws -> ChildProcess? {
        var executable = program
        var arguments = arguments
        if getuid() == 0 {
            guard let runuser = ChildProcess.locate("runuser") else { throw EndToEndError("runuser is not installed") }
            let chown = try ChildProcess(
                executable: ChildProcess.locate("chown") ?? URL(fileURLWithPath: "/bin/chown"),
                arguments: ["-R", "postgres:postgres", directory.path], directory: directory, label: "chown-\(label)")
            guard await chown.wait(timeout: .seconds(10)) == 0 else {
                throw EndToEndError("cannot give \(directory.path) to the postgres user: \(chown.standardError)")
            }
            arguments = ["-u", "postgres", "--", program.path] + arguments
            executable = runuser
        }
        let child = try ChildProcess(executable: executable, arguments: arguments, directory: directory, label: label)
        guard wait else { return child }
        let status = await child.wait(timeout: .seconds(60))
        guard status == 0 else {
            throw EndToEndError(
                "\(program.lastPathComponent) failed (\(status.map(String.init) ?? "timeout")): "
                    + child.standardError + child.standardOutput)
        }
        return child
    }

    private static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, streamSocketType, 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
