import Foundation
import Glibc
import TestSupport

/// ffmpeg and ffprobe as the tests use them: an encoder pushing renditions to the origin, a live recorder, and
/// ffprobe's JSON about segments and files.
enum FFmpeg {
    /// A pushed rendition: name and frame size.
    struct PushedRendition: Sendable {
        let name: String
        let width: Int
        let height: Int
        let videoBitrate: String
    }

    /// The live sources every push encodes: a test pattern at 25 fps and a 440 Hz tone, in real time (`-re`).
    static let sourceArguments = [
        "-nostdin", "-v", "error", "-re",
        "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25",
        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
    ]

    /// H.264 (a keyframe every 2 s, constant bit rate) and AAC for one rendition.
    static func encodingArguments(_ rendition: PushedRendition) -> [String] {
        [
            "-map", "0:v", "-map", "1:a",
            "-c:v", "libx264", "-preset", "veryfast", "-profile:v", "main", "-pix_fmt", "yuv420p",
            "-s", "\(rendition.width)x\(rendition.height)",
            "-g", "50", "-keyint_min", "50", "-sc_threshold", "0",
            "-b:v", rendition.videoBitrate, "-maxrate", rendition.videoBitrate, "-bufsize", rendition.videoBitrate,
            "-c:a", "aac", "-b:a", "64k", "-ac", "2",
        ]
    }

    /// Starts one ffmpeg process that encodes a test pattern and a sine tone in real time (`-re`) and pushes every
    /// rendition with the HLS muxer over HTTP PUT (2-second segments, 6-segment encoder window, deletes sent too).
    /// - Parameter ingestToken: sent as `Authorization: Bearer` with every request when the origin requires one.
    static func startPush(
        port: Int, channel: String, renditions: [PushedRendition], directory: URL, label: String,
        ingestToken: String? = nil
    ) throws -> ChildProcess {
        guard let ffmpeg = ChildProcess.locate("ffmpeg") else { throw EndToEndError("ffmpeg is not on the PATH") }
        var arguments = sourceArguments
        for rendition in renditions {
            arguments +=
                encodingArguments(rendition) + [
                    "-f", "hls", "-hls_time", "2", "-hls_list_size", "6", "-hls_flags", "delete_segments",
                    "-method", "PUT", "-http_persistent", "1",
                ]
            if let ingestToken { arguments += ["-headers", "Authorization: Bearer \(ingestToken)\r\n"] }
            arguments += [
                "http://127.0.0.1:\(port)/ingest/\(channel)/\(rendition.name)/index.m3u8"
            ]
        }
        return try ChildProcess(executable: ffmpeg, arguments: arguments, directory: directory, label: label)
    }

    /// Starts one ffmpeg that encodes the test pattern and tone once per rendition, in real time, and pushes the same
    /// segments of every rendition to every origin in `ports` through its tee muxer, as an encoder feeding a redundant
    /// pair does: one HLS muxer per origin and rendition (2-second segments, PUT, a new connection per request). Each has `ignore_io_errors`, so a dead origin's
    /// failed PUTs neither stop the encoder nor the pushes to the others, and its pushes resume with the next segment
    /// once it listens again (measured with ffmpeg 5.1); `onfail=ignore` keeps the others going if one fails anyway.
    static func startTeePush(
        ports: [Int], channel: String, renditions: [PushedRendition], directory: URL, label: String
    ) throws -> ChildProcess {
        guard let ffmpeg = ChildProcess.locate("ffmpeg") else { throw EndToEndError("ffmpeg is not on the PATH") }
        let muxer =
            "f=hls:hls_time=2:hls_list_size=6:hls_flags=delete_segments:method=PUT:ignore_io_errors=1:onfail=ignore"
        var arguments = sourceArguments
        for rendition in renditions {
            let outputs = ports.map {
                "[\(muxer)]http://127.0.0.1:\($0)/ingest/\(channel)/\(rendition.name)/index.m3u8"
            }
            arguments +=
                encodingArguments(rendition) + [
                    "-f", "tee", outputs.joined(separator: "|"),
                ]
        }
        return try ChildProcess(executable: ffmpeg, arguments: arguments, directory: directory, label: label)
    }

    /// Starts `ffmpeg -i URL -c copy -t SECONDS output` (the live recorder a player stands for).
    /// - Parameter logLevel: ffmpeg's `-v`: `error` (the default), or `warning` to see failed segment fetches.
    static func startRecorder(
        url: String, seconds: Int, output: URL, directory: URL, label: String, logLevel: String = "error"
    ) throws -> ChildProcess {
        guard let ffmpeg = ChildProcess.locate("ffmpeg") else { throw EndToEndError("ffmpeg is not on the PATH") }
        return try ChildProcess(
            executable: ffmpeg,
            arguments: ["-nostdin", "-v", logLevel, "-y", "-i", url, "-c", "copy", "-t", "\(seconds)", output.path],
            directory: directory, label: label)
    }

    /// ffprobe's `format.duration` of a file, in seconds.
    static func formatDuration(of file: URL, in directory: URL) async throws -> (Double, stderr: String) {
        let output = try await ChildProcess.run(
            "ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "json", file.path], in: directory)
        struct Root: Decodable {
            struct Format: Decodable { let duration: String? }
            let format: Format?
        }
        let root = try JSONDecoder().decode(Root.self, from: Data(output.standardOutput.utf8))
        guard output.status == 0, let text = root.format?.duration, let seconds = Double(text) else {
            throw EndToEndError("ffprobe gave no duration for \(file.path): \(output.standardError)")
        }
        return (seconds, output.standardError)
    }

    /// Decodes a segment with ffprobe (packets and frames) and returns its timing per stream kind, and whatever
    /// ffprobe printed at `-v error` (must be nothing).
    static func probeSegment(_ bytes: [UInt8], in directory: URL, name: String) async throws -> SegmentProbe {
        let file = directory.appendingPathComponent(name)
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let output = try await ChildProcess.run(
            "ffprobe",
            [
                "-v", "error",
                "-show_entries",
                "stream=index,codec_type,codec_name,time_base,r_frame_rate,sample_rate"
                    + ":packet=stream_index,pts,duration:frame=stream_index,pts",
                "-of", "json", file.path,
            ], in: directory)
        return try SegmentProbe(json: output.standardOutput, status: output.status, errors: output.standardError)
    }
}

/// What ffprobe says about one segment.
struct SegmentProbe: Sendable {
    /// Timing of one stream, in its time base (90 kHz for MPEG-TS).
    struct StreamTiming: Sendable {
        let codecName: String
        /// Smallest packet PTS.
        let firstPTS: Int64
        /// Largest packet PTS plus its duration.
        let endPTS: Int64
        /// Duration of one frame (the most common packet duration).
        let frameDuration: Int64
        let packets: Int
        let decodedFrames: Int
        let timeBase: Int64
    }

    /// ffprobe's exit status.
    let status: Int32
    /// What ffprobe printed on stderr at `-v error`.
    let errors: String
    let video: StreamTiming?
    let audio: StreamTiming?

    init(json: String, status: Int32, errors: String) throws {
        struct Root: Decodable {
            struct Stream: Decodable {
                let index: Int
                let codec_type: String?
                let codec_name: String?
                let time_base: String?
            }
            struct Item: Decodable {
                let type: String?
                let stream_index: Int?
                let pts: Int64?
                let duration: Int64?
            }
            let streams: [Stream]?
            let packets_and_frames: [Item]?
        }
        self.status = status
        self.errors = errors
        let root = try JSONDecoder().decode(Root.self, from: Data(json.utf8))
        func timing(_ kind: String) -> StreamTiming? {
            guard let stream = root.streams?.first(where: { $0.codec_type == kind }) else { return nil }
            let items = (root.packets_and_frames ?? []).filter { $0.stream_index == stream.index }
            let packets = items.filter { $0.type == "packet" }
            let frames = items.filter { $0.type == "frame" }
            let withPTS = packets.compactMap { packet in packet.pts.map { ($0, packet.duration ?? 0) } }
            guard let first = withPTS.map(\.0).min(), let last = withPTS.max(by: { $0.0 < $1.0 }) else { return nil }
            var counts: [Int64: Int] = [:]
            for (_, duration) in withPTS { counts[duration, default: 0] += 1 }
            let timeBase = stream.time_base.flatMap { $0.split(separator: "/").last.flatMap { Int64($0) } } ?? 90000
            return StreamTiming(
                codecName: stream.codec_name ?? "?", firstPTS: first, endPTS: last.0 + last.1,
                frameDuration: counts.max { $0.value < $1.value }?.key ?? 0, packets: packets.count,
                decodedFrames: frames.count, timeBase: timeBase)
        }
        video = timing("video")
        audio = timing("audio")
    }
}
