import Foundation
import Glibc
import Synchronization
import TestSupport

/// How many a peer serves live HLS: ffmpeg's HLS muxer writing into a directory (`-hls_flags delete_segments`, 2 s
/// segments, a 5-segment list, PDT on every segment) and a static HTTP server (`python3 -m http.server`) serving it.
/// The encoder can end (it writes EXT-X-ENDLIST), be restarted into the same directory (it numbers from 0 again) or
/// be frozen (SIGSTOP).
final class DirectoryHLSStream: Sendable {
    let directory: URL
    let port: Int
    let server: ChildProcess
    private let encoders = EncoderSlot()

    /// The playlist's URL.
    var url: String { "http://127.0.0.1:\(port)/out.m3u8" }

    /// The running encoder.
    var encoder: ChildProcess? { encoders.current }

    /// Starts the server and the encoder, and waits until the playlist lists two segments.
    /// - Parameter encoderSeconds: the first encoder ends after this much media (see ``startEncoder(seconds:)``).
    init(label: String, encoderSeconds: Int? = nil) async throws {
        directory = try TemporaryDirectory.make("hlsorigin-e2e-\(label)")
        port = try OriginProcess.freePort()
        guard let python = ChildProcess.locate("python3") else { throw EndToEndError("python3 is not on the PATH") }
        server = try ChildProcess(
            executable: python,
            arguments: ["-m", "http.server", "\(port)", "--bind", "127.0.0.1", "--directory", directory.path],
            directory: directory.deletingLastPathComponent(), label: "\(label)-http")
        try startEncoder(seconds: encoderSeconds)
        let playlist = directory.appendingPathComponent("out.m3u8")
        try await waitUntil("ffmpeg to list two segments in \(playlist.path)", timeout: .seconds(20)) {
            ((try? String(contentsOf: playlist, encoding: .utf8)) ?? "").components(separatedBy: "#EXTINF").count > 2
        }
        let client = HTTPClient(port: port)
        try await waitUntil("python3 -m http.server on port \(port)", timeout: .seconds(10)) {
            (try? await client.get("/out.m3u8").status) == 200
        }
    }

    /// Starts an encoder writing into the directory (from MSN 0, as ffmpeg does without `append_list`).
    /// - Parameter seconds: ffmpeg ends by itself after this much media (`-t`), as when an operator stops it: it
    ///   writes EXT-X-ENDLIST. (A signal would not do: the children of the test process inherit its blocked signal
    ///   mask, SIGINT and SIGTERM included; SIGSTOP and SIGKILL cannot be blocked.) nil: it runs until killed.
    func startEncoder(seconds: Int? = nil) throws {
        guard let ffmpeg = ChildProcess.locate("ffmpeg") else { throw EndToEndError("ffmpeg is not on the PATH") }
        let child = try ChildProcess(
            executable: ffmpeg,
            arguments: [
                "-nostdin", "-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25",
            ] + (seconds.map { ["-t", "\($0)"] } ?? []) + [
                "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
                "-g", "50", "-keyint_min", "50", "-sc_threshold", "0",
                "-f", "hls", "-hls_time", "2", "-hls_list_size", "5",
                "-hls_flags", "delete_segments+program_date_time", "out.m3u8",
            ],
            directory: directory, label: "ffmpeg-\(UUID().uuidString.prefix(8))")
        encoders.replace(with: child)
    }

    /// Waits for an encoder started with `seconds` to end (ffmpeg ending its output writes EXT-X-ENDLIST).
    func waitForEncoderToEnd() async throws {
        guard let encoder else { return }
        guard await encoder.wait(timeout: .seconds(30)) != nil else {
            throw EndToEndError("ffmpeg did not end within 30 s: \(encoder.standardError)")
        }
    }

    /// Kills the encoder and the server.
    func stop() async {
        encoder?.signal(SIGCONT)
        encoder?.signal(SIGKILL)
        server.signal(SIGKILL)
        _ = await encoder?.wait(timeout: .seconds(5))
        _ = await server.wait(timeout: .seconds(5))
    }

    /// The current encoder, behind a lock (replaced by a restart).
    private final class EncoderSlot: Sendable {
        private let child = Mutex<ChildProcess?>(nil)
        var current: ChildProcess? { child.withLock { $0 } }
        func replace(with new: ChildProcess) { child.withLock { $0 = new } }
    }
}

/// `hlsorigin validate` run as a user runs it: the built binary, its output and exit status.
struct ValidateRun {
    let status: Int32?
    let output: String
    let errors: String

    /// The report lines that start with `verdict` and the check's rule label and name, e.g. `FAIL`, `removed-segments`.
    func line(_ verdict: String, _ check: String) -> String? {
        output.split(separator: "\n").map(String.init).first {
            $0.hasPrefix(verdict + " ")
                && $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst(2)
                    .first == Substring(check)
        }
    }

    /// Starts `hlsorigin validate URL --seconds N [more]` in `directory`.
    static func start(url: String, seconds: Int, more: [String] = [], directory: URL) throws -> ChildProcess {
        try ChildProcess(
            executable: OriginProcess.binary(), arguments: ["validate", url, "--seconds", "\(seconds)"] + more,
            directory: directory, label: "validate-\(UUID().uuidString.prefix(8))")
    }

    /// Waits for a started validator (its watch plus 30 s).
    static func finish(_ child: ChildProcess, seconds: Int) async -> ValidateRun {
        let status = await child.wait(timeout: .seconds(seconds + 30))
        if status == nil { child.signal(SIGKILL) }
        return ValidateRun(status: status, output: child.standardOutput, errors: child.standardError)
    }
}
