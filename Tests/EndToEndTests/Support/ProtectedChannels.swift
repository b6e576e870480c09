import Foundation
import Glibc
import TestSupport

/// What the I-frame, encryption, token and browser end-to-end tests share: one ffmpeg encoder pushing one rendition
/// in the container asked for, waiting for a playlist to fill, issuing playback tokens through the admin API.
enum ProtectedChannels {
    /// What ffmpeg writes the segments in.
    enum Container: String, Sendable {
        case transportStream = "MPEG-TS"
        case fragmentedMP4 = "fMP4 H.264"
        case fragmentedMP4HEVC = "fMP4 HEVC"

        var segmentExtension: String { self == .transportStream ? "ts" : "m4s" }

        /// HEVC when this ffmpeg has libx265, else H.264 in fMP4 (the issue's fallback).
        static var fragmentedMP4WithHEVCIfAvailable: Container {
            get async {
                guard
                    let output = try? await ChildProcess.run(
                        "ffmpeg", ["-hide_banner", "-encoders"], in: URL(fileURLWithPath: NSTemporaryDirectory()))
                else { return .fragmentedMP4 }
                return output.standardOutput.contains("libx265") ? .fragmentedMP4HEVC : .fragmentedMP4
            }
        }
    }

    /// Starts ffmpeg encoding a 640x360 25 fps test pattern and a tone in real time and pushing rendition
    /// `rendition` of `channel` (2-second segments of 50 frames, each starting with an IDR).
    static func startPush(
        port: Int, channel: String, rendition: String = "hi", container: Container, directory: URL, label: String
    ) throws -> ChildProcess {
        guard let ffmpeg = ChildProcess.locate("ffmpeg") else { throw EndToEndError("ffmpeg is not on the PATH") }
        var arguments = [
            "-nostdin", "-v", "error", "-re",
            "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
            "-map", "0:v", "-map", "1:a",
        ]
        switch container {
        case .transportStream, .fragmentedMP4:
            arguments += [
                "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "50", "-keyint_min", "50",
                "-sc_threshold", "0",
            ]
        case .fragmentedMP4HEVC:
            arguments += [
                "-c:v", "libx265", "-preset", "ultrafast", "-tag:v", "hvc1", "-pix_fmt", "yuv420p",
                "-x265-params", "keyint=50:min-keyint=50:scenecut=0:log-level=error",
            ]
        }
        arguments += ["-c:a", "aac", "-b:a", "64k", "-ac", "2", "-f", "hls", "-hls_time", "2", "-hls_list_size", "6"]
        if container != .transportStream { arguments += ["-hls_segment_type", "fmp4"] }
        arguments += [
            "-method", "PUT", "-http_persistent", "1",
            "http://127.0.0.1:\(port)/ingest/\(channel)/\(rendition)/index.m3u8",
        ]
        return try ChildProcess(executable: ffmpeg, arguments: arguments, directory: directory, label: label)
    }

    /// Reloads `path` until its playlist lists at least `entries` entries; returns it.
    static func awaitPlaylist(
        client: HTTPClient, path: String, entries: Int, timeout: Duration = .seconds(45)
    ) async throws -> MediaPlaylistText {
        let deadline = ContinuousClock.now + timeout
        var last = "(nothing yet)"
        while ContinuousClock.now < deadline {
            let response = try await client.get(path)
            if response.status == 200 {
                let playlist = try MediaPlaylistText(response.text)
                if playlist.entries.count >= entries { return playlist }
                last = response.text
            } else {
                last = "\(response.status): \(response.text.prefix(300))"
            }
            try await Task.sleep(for: .milliseconds(500))
        }
        throw EndToEndError("\(path) did not list \(entries) entries within \(timeout); last answer:\n\(last)")
    }

    /// A playback token from the admin API (`POST /admin/channels/{ch}/tokens`).
    static func issueToken(client: HTTPClient, channel: String, ttlSeconds: Int) async throws -> String {
        let answer = try await client.request(
            "POST", "/admin/channels/\(channel)/tokens", headers: [("Content-Type", "application/json")],
            body: Array(#"{"ttlSeconds": \#(ttlSeconds)}"#.utf8))
        struct Issued: Decodable {
            let token: String
            let expires: String
            let multivariant: String
        }
        guard answer.status == 201, let issued = try? JSONDecoder().decode(Issued.self, from: Data(answer.body)) else {
            throw EndToEndError("the token endpoint answered \(answer.status): \(answer.text)")
        }
        return issued.token
    }

    /// Fetches `path` and returns the body of a 200.
    static func fetch(client: HTTPClient, _ path: String) async throws -> [UInt8] {
        let answer = try await client.get(path)
        guard answer.status == 200 else {
            throw EndToEndError("GET \(path) answered \(answer.status): \(answer.text.prefix(300))")
        }
        return answer.body
    }

    /// The `ffprobe` check every reader's output gets: every video frame decodes, and how many there are.
    static func expectDecodes(_ file: URL, in directory: URL) async throws -> FrameCount.Result {
        let frames = try await FrameCount.videoFrames(of: file, in: directory)
        guard frames.status == 0 else {
            throw EndToEndError("ffprobe failed (\(frames.status)) on \(file.lastPathComponent): \(frames.errors)")
        }
        return frames
    }
}
