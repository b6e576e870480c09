public import Foundation
import Glibc

/// A child process whose output goes to files (a chatty child can never fill a pipe and stall), awaited with a
/// deadline, and killed when the value goes away while the child still runs.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked: `Process` is not Sendable; after `init` this class only reads `pid` and calls thread-safe
    // `isRunning` / `terminationStatus`, and sends signals with kill(2).
    private let process: Process
    /// What the child wrote on its standard output, as a file.
    public let standardOutputURL: URL
    /// What the child wrote on its standard error, as a file.
    public let standardErrorURL: URL
    /// The command line, for messages.
    public let commandLine: String

    /// Starts `executable` with `arguments` in `directory`; output goes to `<directory>/<label>.out` and `.err`.
    /// `environment` is added to (and overrides) this process's environment.
    public init(
        executable: URL, arguments: [String], directory: URL, label: String, environment: [String: String] = [:]
    ) throws {
        standardOutputURL = directory.appendingPathComponent("\(label).out")
        standardErrorURL = directory.appendingPathComponent("\(label).err")
        _ = FileManager.default.createFile(atPath: standardOutputURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: standardErrorURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: standardOutputURL)
        let err = try FileHandle(forWritingTo: standardErrorURL)
        defer {
            try? out.close()
            try? err.close()
        }
        process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.currentDirectoryURL = directory
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        commandLine = ([executable.path] + arguments).joined(separator: " ")
        try process.run()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// The child's process id.
    public var pid: Int32 { process.processIdentifier }

    /// True until the child exits.
    public var isRunning: Bool { process.isRunning }

    /// Sends a signal (SIGTERM, SIGKILL, ...) if the child still runs.
    public func signal(_ number: Int32) {
        if process.isRunning { kill(process.processIdentifier, number) }
    }

    /// Waits for the child to exit; returns its exit status (or the signal number for a signalled child), or nil
    /// when `timeout` passed first (the child is left running).
    public func wait(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(25))
        }
        return process.terminationStatus
    }

    /// `wait(timeout:)` for synchronous callers: blocks the calling thread, so only off the Swift concurrency pool
    /// (a `.offThePool` suite, `offThePool { }`, a thread of its own); async code awaits `wait(timeout:)`.
    public func waitBlocking(timeout: Duration) -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            if ContinuousClock.now >= deadline { return nil }
            usleep(5_000)
        }
        return process.terminationStatus
    }

    /// True if the child was ended by a signal rather than by exiting.
    public var wasSignalled: Bool { !process.isRunning && process.terminationReason == .uncaughtSignal }

    /// The standard output so far, as text.
    public var standardOutput: String { (try? String(contentsOf: standardOutputURL, encoding: .utf8)) ?? "" }

    /// The standard error so far, as text.
    public var standardError: String { (try? String(contentsOf: standardErrorURL, encoding: .utf8)) ?? "" }

    /// The executable's URL: `name` itself when it contains a `/`, else the first match on the PATH.
    public static func locate(_ name: String) -> URL? {
        if name.contains("/") {
            return FileManager.default.isExecutableFile(atPath: name) ? URL(fileURLWithPath: name) : nil
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let url = URL(fileURLWithPath: String(directory)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return nil
    }

    /// True when both ffmpeg and ffprobe are on the PATH.
    public static var ffmpegInstalled: Bool { locate("ffmpeg") != nil && locate("ffprobe") != nil }

    /// Runs a tool (a name on the PATH or a path) to completion in `directory`; killed, and a `TestFailure` thrown,
    /// when `timeout` passes first.
    public static func run(
        _ name: String, _ arguments: [String], in directory: URL, timeout: Duration = .seconds(60)
    ) async throws -> ToolOutput {
        let child = try start(name, arguments, in: directory)
        guard let status = await child.wait(timeout: timeout) else {
            child.signal(SIGKILL)
            _ = await child.wait(timeout: .seconds(5))
            throw TestFailure("\(child.commandLine) did not finish within \(timeout)")
        }
        return try child.finish(status: status)
    }

    /// `run(_:_:in:timeout:)` for synchronous tests: blocks the calling thread until the tool exits or the deadline,
    /// so only off the Swift concurrency pool (a `.offThePool` suite, `offThePool { }`, a static initialiser that
    /// runs once); async tests await `run`.
    public static func runBlocking(
        _ name: String, _ arguments: [String], in directory: URL, timeout: Duration = .seconds(60)
    ) throws -> ToolOutput {
        let child = try start(name, arguments, in: directory)
        guard let status = child.waitBlocking(timeout: timeout) else {
            child.signal(SIGKILL)
            _ = child.waitBlocking(timeout: .seconds(5))
            throw TestFailure("\(child.commandLine) did not finish within \(timeout)")
        }
        return try child.finish(status: status)
    }

    private static func start(_ name: String, _ arguments: [String], in directory: URL) throws -> ChildProcess {
        guard let executable = locate(name) else { throw TestFailure("\(name) is not on the PATH") }
        return try ChildProcess(
            executable: executable, arguments: arguments, directory: directory,
            label: "\(executable.lastPathComponent)-\(UUID().uuidString)")
    }

    /// What the exited child printed; its output files are removed.
    private func finish(status: Int32) throws -> ToolOutput {
        defer {
            try? FileManager.default.removeItem(at: standardOutputURL)
            try? FileManager.default.removeItem(at: standardErrorURL)
        }
        return ToolOutput(
            status: status, standardOutputData: try Data(contentsOf: standardOutputURL), standardError: standardError)
    }
}

/// What a finished tool printed.
public struct ToolOutput: Sendable {
    /// Exit status (or the signal number for a signalled child).
    public let status: Int32
    /// The standard output as bytes (a decoder's raw samples, say).
    public let standardOutputData: Data
    /// The standard error as text.
    public let standardError: String

    /// The standard output as UTF-8 text.
    public var standardOutput: String { String(decoding: standardOutputData, as: UTF8.self) }
}

/// Temporary directories of one test.
public enum TemporaryDirectory {
    /// A fresh directory under the system's temporary directory, named `<prefix>-<UUID>`.
    public static func make(_ prefix: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
