import Foundation

/// Runs ffmpeg and ffprobe for the decode checks, and makes source segments with them.
enum Tools {
    struct Output {
        let status: Int32
        let standardOutput: Data
        let standardError: String
        var text: String { String(decoding: standardOutput, as: UTF8.self) }
    }

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
        guard let executable = locate(name) else { throw ToolError("\(name) is not on the PATH") }
        let outURL = directory.appendingPathComponent("\(name)-\(UUID().uuidString).out")
        let errURL = directory.appendingPathComponent("\(name)-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
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
            status: process.terminationStatus, standardOutput: try Data(contentsOf: outURL),
            standardError: try String(contentsOf: errURL, encoding: .utf8))
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("GapFillerTests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Encodes `seconds` of test pattern and tone with libx264 and ffmpeg's AAC encoder into one MPEG-TS file.
    static func encode(
        seconds: Int, x264: [String], audio: [String], extra: [String] = [], in directory: URL
    ) throws -> [UInt8] {
        let result = try run(
            "ffmpeg",
            ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30", "-f", "lavfi", "-i",
             "sine=frequency=440:sample_rate=48000", "-t", "\(seconds)", "-c:v", "libx264"] + x264
                + ["-c:a", "aac"] + audio + extra + ["-f", "mpegts", "source.ts"], in: directory)
        guard result.status == 0 else { throw ToolError("ffmpeg failed: \(result.standardError)") }
        return [UInt8](try Data(contentsOf: directory.appendingPathComponent("source.ts")))
    }

    /// Writes the segments and a VOD playlist naming them, and reads it through with ffmpeg.
    static func playThrough(_ segments: [[UInt8]], durations: [Double], in directory: URL) throws -> Output {
        var playlist = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:\(Int(durations.max()!.rounded(.up)))\n"
        playlist += "#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:VOD\n"
        for (index, segment) in segments.enumerated() {
            try Data(segment).write(to: directory.appendingPathComponent("\(index).ts"))
            playlist += "#EXTINF:\(durations[index]),\n\(index).ts\n"
        }
        playlist += "#EXT-X-ENDLIST\n"
        try playlist.write(to: directory.appendingPathComponent("playlist.m3u8"), atomically: true, encoding: .utf8)
        return try run("ffmpeg", ["-v", "warning", "-i", "playlist.m3u8", "-f", "null", "-"], in: directory)
    }

    /// ffprobe decodes every frame of one file: `codec_type,nb_read_frames` per stream, errors on stderr.
    static func countFrames(_ segment: [UInt8], in directory: URL) throws -> Output {
        let name = "probe-\(UUID().uuidString).ts"
        try Data(segment).write(to: directory.appendingPathComponent(name))
        return try run(
            "ffprobe",
            ["-v", "error", "-count_frames", "-show_entries", "stream=codec_type,nb_read_frames", "-of", "csv=p=0",
             name], in: directory)
    }
}

struct ToolError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
