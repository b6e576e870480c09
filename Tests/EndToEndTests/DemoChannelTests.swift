import Foundation
import Glibc
import HLSPlaylist
import TestSupport
import Testing

extension EndToEnd {
    /// The demo channel of `config/default.yaml`, fed by the built-in test source, read for 30 s by a polling
    /// reader and recorded for 20 s by ffmpeg.
    @Suite("End to end: demo channel", .tags(.endToEnd))
    struct DemoChannelTests {
        @Test(
            "every segment decodes, timestamps continuous across fixture loops, renditions aligned, ffmpeg records 20 s"
        )
        func demoChannelPlaysContinuously() async throws {
            try await OriginProcess.withRunning(configuration: OriginProcess.defaultConfiguration(), label: "demo") {
                origin in
                let client = HTTPClient(port: origin.port)
                let watcher = LiveStreamWatcher(
                    client: client, channel: "demo", renditions: ["360p", "180p"], directory: origin.directory)
                let started = ContinuousClock.now

                // The recorder starts as soon as the channel has media (the first segments are due 2 s after start).
                try await watcher.watch(for: .seconds(10)) { watcher.trackers["180p"]?.lastMSN != nil }
                let recording = origin.directory.appendingPathComponent("rec.ts")
                let recorder = try FFmpeg.startRecorder(
                    url: "\(origin.baseURL)/live/demo/index.m3u8", seconds: 20, output: recording,
                    directory: origin.directory, label: "recorder")

                try await watcher.watch(for: .seconds(30) - (ContinuousClock.now - started))
                let recorderStatus = await recorder.wait(timeout: .seconds(20))
                recorder.signal(SIGKILL)
                let violations = await watcher.finish()

                #expect(
                    violations.isEmpty,
                    "\(violations.count) problems:\n\(violations.prefix(40).joined(separator: "\n"))")
                for rendition in ["360p", "180p"] {
                    let tracker = try #require(watcher.trackers[rendition])
                    #expect(tracker.msns.count >= 12, "\(rendition): only \(tracker.msns.count) segments in 30 s")
                    #expect(
                        tracker.entries.values.allSatisfy { !$0.gap && !$0.discontinuity },
                        "\(rendition): gap or discontinuity")
                    #expect(tracker.maxStalenessLowerBound <= Double(tracker.targetDuration ?? 0) * 1.5)
                    let decoded = watcher.verifier.results(rendition).values.filter { $0.probe.video != nil }.count
                    #expect(decoded == tracker.msns.count, "\(rendition): \(decoded) of \(tracker.msns.count) decoded")
                    #expect(watcher.continuityPairs(rendition) >= tracker.msns.count - 1)
                }
                #expect(watcher.sameMSNs().isEmpty, "\(watcher.sameMSNs())")
                #expect(watcher.discontinuitySequenceAlignment().isEmpty)

                #expect(
                    recorderStatus == 0,
                    "recorder status \(String(describing: recorderStatus)): \(recorder.standardError)")
                #expect(recorder.standardError.isEmpty, "ffmpeg said: \(recorder.standardError)")
                let (duration, probeErrors) = try await FFmpeg.formatDuration(of: recording, in: origin.directory)
                #expect(abs(duration - 20) <= 1, "recording lasts \(duration) s")
                #expect(probeErrors.isEmpty, "ffprobe of the recording said: \(probeErrors)")
                try? FileManager.default.removeItem(at: recording)

                let seconds = (ContinuousClock.now - started).seconds
                print(
                    "demo: \(watcher.trackers["360p"]!.msns.count) MSNs per rendition, "
                        + "\(watcher.verifier.downloaded) segments downloaded, \(watcher.verifier.probed) decoded, "
                        + "\(client.counter.value) requests, recording \(duration) s, "
                        + "staleness <= \(watcher.trackers["360p"]!.maxStalenessUpperBound) s, \(seconds) s")
            }
        }
        /// The binary copied alone, without the resource bundles SwiftPM puts beside it: the demo channel is not fed
        /// and the log says which bundle to install (not `Bundle.module`'s fatalError), the OpenAPI route answers 500
        /// naming its bundle, and the process keeps serving until SIGTERM.
        @Test("a binary copied without its resource bundles runs on and names the missing bundles")
        func binaryWithoutResourceBundlesRunsOn() async throws {
            let copy = try TemporaryDirectory.make("hlsorigin-e2e-bare-binary")
            let binary = copy.appendingPathComponent("hlsorigin")
            try FileManager.default.copyItem(at: OriginProcess.binary(), to: binary)
            defer { try? FileManager.default.removeItem(at: binary) }
            try await OriginProcess.withRunning(
                configuration: OriginProcess.defaultConfiguration(), label: "bare", executable: binary
            ) { origin in
                let client = HTTPClient(port: origin.port)
                try await Task.sleep(for: .seconds(3))  // the demo's first segments are due 2 s after start
                #expect(origin.child.isRunning)
                let fixtures = copy.appendingPathComponent("hlsorigin_TestSource.resources/Fixtures").path
                #expect(origin.child.standardError.contains("test source channel not fed"), "\(origin.logTail())")
                #expect(origin.child.standardError.contains(fixtures), "\(origin.logTail())")
                let openAPI = try await client.get("/admin/openapi.json")
                #expect(openAPI.status == 500)
                #expect(String(decoding: openAPI.body, as: UTF8.self).contains("hlsorigin_OriginServer.resources"))
                #expect(try await client.get("/admin/channels/demo").status == 200)
            }
        }

        /// The whole origin stops for 4.5 s right after it starts (a descheduled process, a paused VM): its first
        /// tick delivers two segments per rendition at once. The renditions must still start on the same MSN with
        /// the same media, without refusals, discontinuities or gaps.
        @Test("a 4.5 s stall of the process at start (SIGSTOP) leaves the renditions aligned")
        func stalledStartKeepsRenditionsAligned() async throws {
            try await OriginProcess.withRunning(configuration: OriginProcess.defaultConfiguration(), label: "stall") {
                origin in
                origin.child.signal(SIGSTOP)
                try await Task.sleep(for: .milliseconds(4500))
                origin.child.signal(SIGCONT)
                let client = HTTPClient(port: origin.port)
                let watcher = LiveStreamWatcher(
                    client: client, channel: "demo", renditions: ["360p", "180p"], directory: origin.directory)
                try await watcher.watch(for: .seconds(7))
                let violations = await watcher.finish()

                #expect(
                    violations.isEmpty,
                    "\(violations.count) problems:\n\(violations.prefix(40).joined(separator: "\n"))")
                #expect(watcher.discontinuitySequenceAlignment().isEmpty, "\(watcher.discontinuitySequenceAlignment())")
                let high = try #require(watcher.trackers["360p"])
                let low = try #require(watcher.trackers["180p"])
                #expect(watcher.sameMSNs().isEmpty, "\(watcher.sameMSNs())")
                #expect(high.msns.first == 0 && low.msns.first == 0)
                for tracker in [high, low] {
                    #expect(tracker.entries.values.allSatisfy { !$0.gap && !$0.discontinuity }, "\(tracker.name)")
                    #expect(watcher.continuityPairs(tracker.name) == tracker.msns.count - 1, "\(tracker.name)")
                }
                #expect(!origin.child.standardError.contains("rejected"), "\(origin.logTail())")
            }
        }
    }
}
