import Foundation
import TestSupport

/// ffmpeg and ffprobe for the decode checks (through `ChildProcess`), and source segments made with them.
enum Tools {
    /// Encodes `seconds` of test pattern and tone with libx264 and ffmpeg's AAC encoder into one MPEG-TS file.
    static func encode(
        seconds: Int, x264: [String], audio: [String], extra: [String] = [], in directory: URL
    ) async throws -> [UInt8] {
        let result = try await ChildProcess.run(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30", "-f", "lavfi", "-i",
                "sine=frequency=440:sample_rate=48000", "-t", "\(seconds)", "-c:v", "libx264",
            ] + x264
                + ["-c:a", "aac"] + audio + extra + ["-f", "mpegts", "source.ts"], in: directory)
        guard result.status == 0 else { throw TestFailure("ffmpeg failed: \(result.standardError)") }
        return [UInt8](try Data(contentsOf: directory.appendingPathComponent("source.ts")))
    }

    /// Writes the segments and a VOD playlist naming them, and reads it through with ffmpeg.
    static func playThrough(_ segments: [[UInt8]], durations: [Double], in directory: URL) async throws -> ToolOutput {
        var playlist = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:\(Int(durations.max()!.rounded(.up)))\n"
        playlist += "#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:VOD\n"
        for (index, segment) in segments.enumerated() {
            try Data(segment).write(to: directory.appendingPathComponent("\(index).ts"))
            playlist += "#EXTINF:\(durations[index]),\n\(index).ts\n"
        }
        playlist += "#EXT-X-ENDLIST\n"
        try playlist.write(to: directory.appendingPathComponent("playlist.m3u8"), atomically: true, encoding: .utf8)
        return try await ChildProcess.run(
            "ffmpeg", ["-v", "warning", "-i", "playlist.m3u8", "-f", "null", "-"], in: directory)
    }

    /// ffprobe decodes every frame of one file: `codec_type,nb_read_frames` per stream, errors on stderr.
    static func countFrames(_ segment: [UInt8], in directory: URL) async throws -> ToolOutput {
        let name = "probe-\(UUID().uuidString).ts"
        try Data(segment).write(to: directory.appendingPathComponent(name))
        return try await ChildProcess.run(
            "ffprobe",
            [
                "-v", "error", "-count_frames", "-show_entries", "stream=codec_type,nb_read_frames", "-of", "csv=p=0",
                name,
            ], in: directory)
    }
}
