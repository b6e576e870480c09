import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEndInBrowser {
    /// Low-Latency HLS from an SRT caller (issue 31): ffmpeg pushes one continuous MPEG-TS over SRT (no segment muxer,
    /// a keyframe every 2 s), the origin cuts the 2 s segments on its slot clock and the 0.4 s parts at access units as
    /// the bytes arrive, and hls.js 1.6.15 in low-latency mode (headless chromium) plays it 1-2.5 s behind the live
    /// edge, loading parts, the preload hint and blocking playlist reloads. Prints the latency measured.
    @Suite("End to end: LL-HLS from an SRT caller", .tags(.endToEnd))
    struct SRTLowLatencyBrowserTests {
        static func configuration(srtPort: Int) -> String {
            """
            logLevel: info
            ingest:
              autoCreate: true
              srt: { port: \(srtPort), latencyMilliseconds: 120, idleTimeoutMilliseconds: 2000 }
            channels:
              - name: \(LowLatencyStream.channel)
                segmentDuration: 2
                window: { segments: 10 }
                lowLatency: { partTarget: \(LowLatencyStream.partTarget) }
            """
        }

        /// The LL test's encoding (LowLatencyStream.startPush: 640x360, x264 zerolatency, a keyframe every 2 s, AAC)
        /// sent as one continuous MPEG-TS to the SRT listener.
        static func startCaller(srtPort: Int, directory: URL, label: String) throws -> ChildProcess {
            let streamID = "#!::r=\(LowLatencyStream.channel)/\(LowLatencyStream.rendition),m=publish"
            return try ChildProcess(
                executable: try #require(ChildProcess.locate("ffmpeg")),
                arguments: LowLatencyStream.encoding + [
                    "-f", "mpegts", "srt://127.0.0.1:\(srtPort)?streamid=\(streamID)&latency=120000",
                ], directory: directory, label: label)
        }

        @Test("hls.js in low-latency mode plays an SRT caller's stream with hls.latency in 1-2.5 s")
        func hlsjsPlaysAnSRTCallerWithinTheLatencyWindow() async throws {
            try await OriginProcess.withRunning(
                configuration: Self.configuration(srtPort: 0), label: "srt-ll-hlsjs"
            ) { origin in
                let srtPort = try await SRTProbe.port(of: origin)
                let caller = try Self.startCaller(srtPort: srtPort, directory: origin.directory, label: "ffmpeg-srt-ll")
                defer { caller.signal(SIGKILL) }
                let client = HTTPClient(port: origin.port)
                let first = try await LowLatencyStream.awaitParts(
                    client: client, path: LowLatencyStream.mediaPath, parts: 3)
                #expect(first.text.contains("#EXT-X-PART-INF:PART-TARGET="), "\(first.text)")
                #expect(first.preloadHint != nil, "no EXT-X-PRELOAD-HINT:\n\(first.text)")
                // The parts are cut at access units, not only at the keyframes (one every 2 s, five parts a
                // segment): most parts do not start with one.
                let partLines = first.text.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-PART:") }
                #expect(
                    partLines.contains { !$0.contains("INDEPENDENT=YES") },
                    "every part is INDEPENDENT: not cut between keyframes\n\(first.text)")

                // The hinted part, asked for before it exists, is answered from the caller's bytes as they arrive:
                // the answer is the whole part (TS packets), complete once the part is (up to a part target later).
                let hinted = try await LowLatencyStream.awaitParts(
                    client: client, path: LowLatencyStream.mediaPath, parts: 4)
                let hint = try #require(hinted.preloadHint)
                let asked = ContinuousClock.now
                let part = try await client.get("/live/\(LowLatencyStream.channel)/\(LowLatencyStream.rendition)/\(hint)")
                let waited = (ContinuousClock.now - asked).seconds
                #expect(part.status == 200, "the preload hint \(hint) answered \(part.status)")
                #expect(
                    part.body.count >= 188 && part.body.count % 188 == 0 && part.body.first == 0x47,
                    "the preload hint's answer is not whole TS packets: \(part.body.count) bytes")
                #expect(waited < 2, "the preload hint \(hint) was answered after \(waited) s")

                let run = try await LowLatencyPlaybackTests.expectLowLatencyHlsjsPlayback(
                    origin: origin, seconds: 20, minimumPlayed: 15, minimumParts: 20, label: "srt-ll-hlsjs")
                // The PROGRAM-DATE-TIME of an SRT stream is the arrival of its media at the origin: the wall clock
                // minus the date shown is how far behind the encoder's output the picture is.
                let dates = run.hlsjs.dateLatencies
                #expect(dates.median <= LowLatencyPlaybackTests.window.upperBound, "PDT lag \(dates)")
                print(
                    "low-latency hls.js from an SRT caller (\(run.report.browser ?? "?")): preload hint answered in "
                        + "\(String(format: "%.2f", waited)) s (\(part.body.count) bytes); played "
                        + "\(String(format: "%.1f", run.played)) s; hls.latency \(run.latency); PDT lag \(dates); "
                        + "requests: " + LowLatencyRequest.tally(run.urls))
            }
        }
    }
}
