import Foundation

/// Runs ffmpeg and ffprobe for the end-to-end tests.
enum ExternalTool {
    struct Output {
        let status: Int32
        let standardOutput: String
        let standardError: String
    }

    /// The executable's URL when it is on the PATH.
    static func locate(_ name: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let url = URL(fileURLWithPath: String(directory)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return nil
    }

    static var ffmpegInstalled: Bool { locate("ffmpeg") != nil && locate("ffprobe") != nil }

    /// Runs the tool to completion; output goes through files so a chatty tool cannot fill a pipe and stall.
    static func run(_ name: String, _ arguments: [String], in directory: URL) throws -> Output {
        guard let executable = locate(name) else { throw ReaderError("\(name) is not on the PATH") }
        let outURL = directory.appendingPathComponent("\(name)-\(UUID().uuidString).out")
        let errURL = directory.appendingPathComponent("\(name)-\(UUID().uuidString).err")
        FileManager.default.createFile(atPath: outURL.path, contents: nil)
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()
        return Output(
            status: process.terminationStatus,
            standardOutput: try String(contentsOf: outURL, encoding: .utf8),
            standardError: try String(contentsOf: errURL, encoding: .utf8))
    }

    /// A fresh temporary directory.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("TestSourceTests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
