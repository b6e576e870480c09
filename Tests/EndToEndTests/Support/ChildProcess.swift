import Foundation

import Glibc

/// A child process whose output goes to files (a chatty child can never fill a pipe and stall), awaited without
/// blocking a Swift concurrency thread, and killed when the value goes away while the child still runs.
final class ChildProcess: @unchecked Sendable {
    // @unchecked: `Process` is not Sendable; after `init` this class only reads `pid` and calls thread-safe
    // `isRunning` / `terminationStatus`, and sends signals with kill(2).
    private let process: Process
    /// What the child wrote on its standard output, as a file.
    let standardOutputURL: URL
    /// What the child wrote on its standard error, as a file.
    let standardErrorURL: URL
    /// The command line, for messages.
    let commandLine: String

    /// Starts `executable` with `arguments`; output goes to `<directory>/<label>.out` and `.err`.
    init(executable: URL, arguments: [String], directory: URL, label: String) throws {
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
    var pid: Int32 { process.processIdentifier }

    /// True until the child exits.
    var isRunning: Bool { process.isRunning }

    /// Sends a signal (SIGTERM, SIGKILL, ...) if the child still runs.
    func signal(_ number: Int32) {
        if process.isRunning { kill(process.processIdentifier, number) }
    }

    /// Waits for the child to exit; returns its exit status (or the signal number for a signalled child), or nil
    /// when `timeout` passed first (the child is left running).
    func wait(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(25))
        }
        return process.terminationStatus
    }

    /// True if the child was ended by a signal rather than by exiting.
    var wasSignalled: Bool { !process.isRunning && process.terminationReason == .uncaughtSignal }

    /// The standard output so far.
    var standardOutput: String { (try? String(contentsOf: standardOutputURL, encoding: .utf8)) ?? "" }

    /// The standard error so far.
    var standardError: String { (try? String(contentsOf: standardErrorURL, encoding: .utf8)) ?? "" }

    /// The executable's URL when it is on the PATH.
    static func locate(_ name: String) -> URL? {
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

    /// Runs a tool from the PATH to completion (killed after `timeout`).
    static func run(
        _ name: String, _ arguments: [String], in directory: URL, timeout: Duration = .seconds(60)
    ) async throws -> ToolOutput {
        guard let executable = locate(name) else { throw EndToEndError("\(name) is not on the PATH") }
        let child = try ChildProcess(
            executable: executable, arguments: arguments, directory: directory,
            label: "\(executable.lastPathComponent)-\(UUID().uuidString)")
        guard let status = await child.wait(timeout: timeout) else {
            child.signal(SIGKILL)
            _ = await child.wait(timeout: .seconds(5))
            throw EndToEndError("\(child.commandLine) did not finish within \(timeout)")
        }
        defer {
            try? FileManager.default.removeItem(at: child.standardOutputURL)
            try? FileManager.default.removeItem(at: child.standardErrorURL)
        }
        return ToolOutput(
            status: status, standardOutput: child.standardOutput, standardError: child.standardError)
    }
}

/// What a finished tool printed.
struct ToolOutput: Sendable {
    let status: Int32
    let standardOutput: String
    let standardError: String
}

/// A failure of the end-to-end machinery (not of the origin), with a message that says what to do.
struct EndToEndError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Temporary directories of one test.
enum TemporaryDirectory {
    /// A fresh directory under the system's temporary directory.
    static func make(_ prefix: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
