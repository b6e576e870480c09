import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEnd {
    /// `hlsorigin validate` as a user runs it: the built binary against hlsorigin's demo channel (it passes) and
    /// against the faults peers really have, made with ffmpeg's HLS muxer writing into a directory served by
    /// `python3 -m http.server` (each must be reported, exit status 1).
    @Suite("End to end: hlsorigin validate", .tags(.endToEnd))
    struct ValidateTests {
        @Test("the demo channel passes every check that can run (exit status 0)")
        func demoChannelPasses() async throws {
            try await OriginProcess.withRunning(configuration: OriginProcess.defaultConfiguration(), label: "validate")
            { origin in
                let client = HTTPClient(port: origin.port)
                try await waitUntil("the demo channel's first segment", timeout: .seconds(15)) {
                    let answer = try? await client.get("/live/demo/360p/index.m3u8")
                    return answer?.status == 200 && String(decoding: answer!.body, as: UTF8.self).contains("#EXTINF")
                }
                let url = "\(origin.baseURL)/live/demo/index.m3u8"
                let run = await ValidateRun.finish(
                    try ValidateRun.start(url: url, seconds: 14, directory: origin.directory), seconds: 14)
                print(run.output)
                #expect(run.status == 0, "status \(String(describing: run.status)):\n\(run.output)\(run.errors)")
                let lines = run.output.split(separator: "\n")
                #expect(!lines.contains { $0.hasPrefix("FAIL") }, "\(run.output)")
                // The checks that need a sliding window, removals and two renditions did run.
                for check in [
                    "media-sequence", "freshness", "window", "removed-segments", "renditions-pdt", "renditions-dsn",
                    "bandwidth", "codecs", "discontinuities", "segments-downloadable",
                ] {
                    #expect(run.line("PASS", check) != nil, "\(check) did not pass:\n\(run.output)")
                }
                #expect(lines.last?.hasPrefix("PASS: no check failed") == true)
            }
        }

        @Test("ffmpeg's delete_segments: removed segments answer 404 (rule 17), a .ts served as text (rule 45)")
        func deletedSegmentsAreReported() async throws {
            let stream = try await DirectoryHLSStream(label: "validate-deleted")
            defer { Task { await stream.stop() } }
            let run = await ValidateRun.finish(
                try ValidateRun.start(url: stream.url, seconds: 14, directory: stream.directory), seconds: 14)
            await stream.stop()
            print(run.output)
            #expect(run.status == 1, "status \(String(describing: run.status)):\n\(run.output)\(run.errors)")
            let removed = try #require(run.line("FAIL", "removed-segments"), "\(run.output)")
            #expect(removed.contains("answered status 404"), "\(removed)")
            let types = try #require(run.line("FAIL", "content-types"), "\(run.output)")
            #expect(types.contains("text/vnd.trolltech.linguist for mpegts"), "\(types)")
            #expect(run.line("PASS", "media-sequence") != nil, "\(run.output)")
            #expect(run.line("PASS", "live") != nil, "\(run.output)")
        }

        @Test("ffmpeg ending and restarted into the same directory: EXT-X-ENDLIST (rule 18), MSN back to 0 (rule 10)")
        func encoderRestartIsReported() async throws {
            // The first encoder ends after 10 s of media, about 5 s into the watch; the next starts 1 s later.
            let stream = try await DirectoryHLSStream(label: "validate-restart", encoderSeconds: 10)
            defer { Task { await stream.stop() } }
            let validator = try ValidateRun.start(
                url: stream.url, seconds: 16, more: ["--json"], directory: stream.directory)
            try await stream.waitForEncoderToEnd()
            try await Task.sleep(for: .seconds(1))
            try stream.startEncoder()
            let run = await ValidateRun.finish(validator, seconds: 16)
            await stream.stop()
            print(run.output)
            #expect(run.status == 1, "status \(String(describing: run.status)):\n\(run.output)\(run.errors)")
            let document = try #require(
                try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any], "\(run.output)")
            let results = try #require(document["results"] as? [[String: Any]])
            func result(_ check: String) -> [String: Any]? { results.first { $0["check"] as? String == check } }
            #expect(document["exitStatus"] as? Int == 1)
            let live = try #require(result("live"))
            #expect(live["verdict"] as? String == "FAIL")
            let liveEvidence = (live["evidence"] as? [String] ?? []).joined(separator: "\n")
            #expect(liveEvidence.contains("EXT-X-ENDLIST after MSN"), "\(liveEvidence)")
            #expect(liveEvidence.contains("EXT-X-ENDLIST removed, MSN 0+ listed again"), "\(liveEvidence)")
            let numbering = try #require(result("media-sequence"))
            #expect(numbering["verdict"] as? String == "FAIL")
            #expect((numbering["summary"] as? String)?.contains(" to 0 at ") == true, "\(numbering)")
        }

        @Test("ffmpeg frozen for 6 s (SIGSTOP): no new segment within 1.5 × TD (rule 15)")
        func stalledEncoderIsReported() async throws {
            let stream = try await DirectoryHLSStream(label: "validate-stall")
            defer { Task { await stream.stop() } }
            let validator = try ValidateRun.start(url: stream.url, seconds: 14, directory: stream.directory)
            try await Task.sleep(for: .seconds(3))
            stream.encoder?.signal(SIGSTOP)
            try await Task.sleep(for: .seconds(6))
            stream.encoder?.signal(SIGCONT)
            let run = await ValidateRun.finish(validator, seconds: 14)
            await stream.stop()
            print(run.output)
            #expect(run.status == 1, "status \(String(describing: run.status)):\n\(run.output)\(run.errors)")
            let stale = try #require(run.line("FAIL", "freshness"), "\(run.output)")
            #expect(stale.contains("no new segment for at least"), "\(stale)")
            #expect(run.line("PASS", "media-sequence") != nil, "\(run.output)")
        }
    }
}
