import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEnd {
    /// Another real player: streamlink (from PyPI, installed into `.build/e2e-venv` when missing) reads the demo
    /// channel from the live edge and writes what it got to a file that ffprobe must decode; through an encoder
    /// outage of the variant it reads, with GAP filler on, it must not report a failed segment.
    @Suite("End to end: streamlink", .tags(.endToEnd))
    struct StreamlinkTests {
        /// `.build/e2e-venv/bin/streamlink`, installed with pip when missing. Throws (the test fails) when it cannot
        /// be installed.
        static func streamlink() async throws -> URL {
            let root = OriginProcess.packageRoot
            let venv = root.appendingPathComponent(".build/e2e-venv")
            let executable = venv.appendingPathComponent("bin/streamlink")
            if FileManager.default.isExecutableFile(atPath: executable.path) { return executable }
            try FileManager.default.createDirectory(
                at: root.appendingPathComponent(".build"), withIntermediateDirectories: true)
            let created = try await ChildProcess.run("python3", ["-m", "venv", venv.path], in: root)
            guard created.status == 0 else {
                throw EndToEndError("python3 -m venv \(venv.path) failed: \(created.standardError)")
            }
            let pip = try await ChildProcess.run(
                venv.appendingPathComponent("bin/python").path,
                ["-m", "pip", "install", "--quiet", "streamlink"], in: root, timeout: .seconds(300))
            guard pip.status == 0, FileManager.default.isExecutableFile(atPath: executable.path) else {
                throw EndToEndError("pip install streamlink into \(venv.path) failed: \(pip.standardError)")
            }
            return executable
        }

        /// Runs streamlink on the demo channel's best variant for `seconds` of output.
        static func startStreamlink(
            origin: OriginProcess, seconds: Int, output: URL, label: String
        )
            async throws
            -> ChildProcess
        {
            try ChildProcess(
                executable: try await streamlink(),
                arguments: [
                    "--loglevel", "debug", "--hls-live-edge", "3", "--stream-segmented-duration",
                    "\(seconds)",
                    "--force", "-o", output.path, "\(origin.baseURL)/live/demo/index.m3u8", "best",
                ], directory: origin.directory, label: label)
        }

        /// Decodes a whole file with ffprobe (every frame); returns the frames decoded per stream kind and what
        /// ffprobe said at `-v error`.
        static func decode(
            _ file: URL, in directory: URL
        ) async throws -> (
            frames: [String: Int], errors: String
        ) {
            let output = try await ChildProcess.run(
                "ffprobe",
                [
                    "-v", "error", "-count_frames", "-show_entries", "stream=codec_type,nb_read_frames",
                    "-of", "json",
                    file.path,
                ], in: directory)
            struct Root: Decodable {
                struct Stream: Decodable {
                    let codec_type: String?
                    let nb_read_frames: String?
                }
                let streams: [Stream]?
            }
            let root = try JSONDecoder().decode(Root.self, from: Data(output.standardOutput.utf8))
            var frames: [String: Int] = [:]
            for stream in root.streams ?? [] {
                frames[stream.codec_type ?? "?", default: 0] += Int(stream.nb_read_frames ?? "") ?? 0
            }
            return (
                frames,
                output.status == 0
                    ? output.standardError : "status \(output.status) \(output.standardError)"
            )
        }

        /// Lines of streamlink's log that report a failed segment or playlist fetch.
        static func failures(_ log: String) -> [Substring] {
            log.split(separator: "\n").filter {
                $0.contains("[error]") || $0.contains("Failed to") || $0.contains("failed")
                    || $0.contains("Skipping")
                    || $0.contains("Retrying")
            }
        }

        @Test("streamlink reads the demo channel 15 s from the live edge; the output decodes")
        func streamlinkReadsDemo() async throws {
            _ = try await Self.streamlink()
            try await OriginProcess.withRunning(
                configuration: OriginProcess.defaultConfiguration(), label: "streamlink"
            ) { origin in
                let client = HTTPClient(port: origin.port)
                let ready = ContinuousClock.now + .seconds(15)
                while try await client.get("/live/demo/360p/index.m3u8").status != 200,
                    ContinuousClock.now < ready
                {
                    try await Task.sleep(for: .milliseconds(250))
                }
                try await Task.sleep(for: .seconds(6))  // three segments behind the live edge
                let output = origin.directory.appendingPathComponent("streamlink.ts")
                let started = ContinuousClock.now
                let player = try await Self.startStreamlink(
                    origin: origin, seconds: 15, output: output, label: "sl")
                let status = await player.wait(timeout: .seconds(45))
                player.signal(SIGKILL)
                let elapsed = (ContinuousClock.now - started).seconds
                let log = player.standardOutput + player.standardError
                #expect(status == 0, "streamlink: status \(String(describing: status))\n\(log)")
                #expect(
                    Self.failures(log).isEmpty,
                    "streamlink reported:\n\(Self.failures(log).joined(separator: "\n"))")
                #expect(log.contains("360p"), "streamlink did not pick 360p:\n\(log)")
                let (duration, _) = try await FFmpeg.formatDuration(of: output, in: origin.directory)
                #expect(duration >= 14 && duration <= 20, "the output lasts \(duration) s")
                let (frames, errors) = try await Self.decode(output, in: origin.directory)
                #expect(errors.isEmpty, "ffprobe decoding the output said: \(errors)")
                #expect((frames["video"] ?? 0) >= 14 * 25, "video frames decoded: \(frames)")
                #expect((frames["audio"] ?? 0) > 0, "audio frames decoded: \(frames)")
                print(
                    "streamlink: \(String(format: "%.1f", duration)) s written in "
                        + "\(String(format: "%.1f", elapsed)) s, "
                        + "frames \(frames)")
            }
        }

        @Test(
            "streamlink plays through a 360p outage with filler: no segment failure, the output decodes")
        func streamlinkThroughOutage() async throws {
            _ = try await Self.streamlink()
            try await OriginProcess.withRunning(
                configuration: OriginProcess.defaultConfiguration(), label: "streamlink-outage"
            ) { origin in
                let client = HTTPClient(port: origin.port)
                let ready = ContinuousClock.now + .seconds(15)
                while try await client.get("/live/demo/360p/index.m3u8").status != 200,
                    ContinuousClock.now < ready
                {
                    try await Task.sleep(for: .milliseconds(250))
                }
                try await Task.sleep(for: .seconds(6))
                let output = origin.directory.appendingPathComponent("streamlink-outage.ts")
                let player = try await Self.startStreamlink(
                    origin: origin, seconds: 24, output: output, label: "sl-outage")
                try await Task.sleep(for: .seconds(2))
                let answer = try await client.request(
                    "POST", "/admin/channels/demo/outage", headers: [("Content-Type", "application/json")],
                    body: Array(#"{"seconds": 8, "renditions": ["360p"]}"#.utf8))
                #expect(answer.status == 202, "outage: \(answer.status) \(answer.text)")
                // Reads the 360p playlist while streamlink runs: which GAP entries it was offered.
                var gapURIs: Set<String> = []
                let deadline = ContinuousClock.now + .seconds(50)
                while player.isRunning, ContinuousClock.now < deadline {
                    let playlist = try await client.get("/live/demo/360p/index.m3u8")
                    gapURIs.formUnion(Self.gapURIs(playlist.text))
                    try await Task.sleep(for: .milliseconds(500))
                }
                let status = await player.wait(timeout: .seconds(1))
                player.signal(SIGKILL)
                let log = player.standardOutput + player.standardError
                #expect(status == 0, "streamlink: status \(String(describing: status))\n\(log)")
                let failures = Self.failures(log)
                #expect(failures.isEmpty, "streamlink reported:\n\(failures.joined(separator: "\n"))")
                #expect(!gapURIs.isEmpty, "no GAP entry in 360p during the outage")
                // Streamlink ignores EXT-X-GAP: it fetched GAP URLs and got filler segments it wrote out.
                let completed = Set(
                    log.split(separator: "\n").compactMap { line -> String? in
                        guard line.contains("] Segment "), line.hasSuffix(" complete") else { return nil }
                        return line.split(separator: " ").dropLast().last.map { "\($0).ts" }
                    })
                let fetchedGaps = gapURIs.intersection(completed)
                #expect(
                    !fetchedGaps.isEmpty, "streamlink completed none of the GAP entries \(gapURIs.sorted())")
                let (frames, errors) = try await Self.decode(output, in: origin.directory)
                #expect(errors.isEmpty, "ffprobe decoding the output said: \(errors)")
                #expect((frames["video"] ?? 0) >= 20 * 25, "video frames decoded: \(frames)")
                let (duration, _) = try await FFmpeg.formatDuration(of: output, in: origin.directory)
                let warnings = log.split(separator: "\n").filter { $0.contains("[warning]") }.count
                print(
                    "streamlink through the outage: \(String(format: "%.1f", duration)) s, frames \(frames), GAP "
                        + "entries listed \(gapURIs.sorted()), written by streamlink \(fetchedGaps.sorted()), "
                        + "\(completed.count) segments completed, \(warnings) warnings (discontinuity)")
            }
        }

        /// URIs of the EXT-X-GAP entries of a media playlist.
        static func gapURIs(_ text: String) -> [String] {
            var gap = false
            var uris: [String] = []
            for line in text.split(separator: "\n") {
                if line == "#EXT-X-GAP" { gap = true }
                if !line.hasPrefix("#") {
                    if gap { uris.append(String(line)) }
                    gap = false
                }
            }
            return uris
        }
    }
}
