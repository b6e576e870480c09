import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEndInBrowser {
    /// Low-Latency HLS from a plain push, played by real players: ffmpeg's segment muxer POSTs each MPEG-TS segment
    /// while it encodes it, the origin cuts parts of 0.4 s from the body as it arrives, and hls.js 1.6.15 in
    /// low-latency mode (Debian's chromium, headless) plays 1-2.5 s behind the live edge; chromium's own HLS, ffmpeg's
    /// HLS reader and streamlink still play the same URLs as regular HLS. Each test prints the latency it measured.
    @Suite("End to end: low-latency playback", .tags(.endToEnd))
    struct LowLatencyPlaybackTests {
        /// Latency window the issue asks for, seconds behind the live edge.
        static let window = 1.0...2.5

        @Test(
            "hls.js in low-latency mode plays 60 s of an LL push with hls.latency in 1-2.5 s for >= 80 % of samples")
        func hlsjsPlaysWithinTheLatencyWindow() async throws {
            try await OriginProcess.withRunning(
                configuration: LowLatencyStream.configuration(), label: "ll-hlsjs"
            ) { origin in
                let encoder = try LowLatencyStream.startPush(
                    port: origin.port, directory: origin.directory, label: "ffmpeg-ll")
                defer { encoder.signal(SIGKILL) }
                let client = HTTPClient(port: origin.port)
                let first = try await LowLatencyStream.awaitParts(
                    client: client, path: LowLatencyStream.mediaPath, parts: 3)
                #expect(first.text.contains("#EXT-X-PART-INF:PART-TARGET="), "\(first.text)")
                #expect(first.preloadHint != nil, "no EXT-X-PRELOAD-HINT:\n\(first.text)")

                let run = try await Self.expectLowLatencyHlsjsPlayback(
                    origin: origin, seconds: 60, minimumPlayed: 50, minimumParts: 60, label: "ll-hlsjs")
                print(
                    "low-latency hls.js (\(run.report.browser ?? "?")): played \(String(format: "%.1f", run.played)) "
                        + "s; hls.latency \(run.latency); PDT lag \(run.hlsjs.dateLatencies); requests: "
                        + LowLatencyRequest.tally(run.urls))
            }
        }

        /// What `expectLowLatencyHlsjsPlayback` measured, for a test's further checks and its output.
        struct LowLatencyHlsjsRun {
            let report: BrowserPlayer.Report
            let hlsjs: BrowserPlayer.Played
            /// Seconds played.
            let played: Double
            let latency: LatencyFigures
            /// Every URL hls.js requested.
            let urls: [String]
        }

        /// hls.js in low-latency mode plays the LL stream's multivariant playlist (`LowLatencyStream`) on `origin`
        /// for `seconds`, configured as an LL page configures it (docs/low-latency.md): with its defaults one stall
        /// (a loaded machine starving the browser) raises its target by 1 s for good, which says nothing about the
        /// origin; these settings let it come back, so what is measured is how close the origin lets it play.
        /// Expects no player error, at least `minimumPlayed` s played, hls.latency in `window` for >= 80 % of the
        /// samples, no request refused or failed (404 aside), at least `minimumParts` part requests and a blocking
        /// or delta playlist request.
        static func expectLowLatencyHlsjsPlayback(
            origin: OriginProcess, seconds: Double, minimumPlayed: Double, minimumParts: Int, label: String
        ) async throws -> LowLatencyHlsjsRun {
            let report = try await BrowserPlayer.play(
                [
                    BrowserPlayer.Run(
                        player: .hlsjs, url: origin.baseURL + LowLatencyStream.multivariantPath, seconds: seconds,
                        interval: 0.25, requests: true, catchUpRate: LowLatencyStream.catchUpRate,
                        stallIncrease: 0)
                ], directory: origin.directory, label: label)
            let hlsjs = try #require(report.runs?.first)
            #expect(hlsjs.error == nil, "\(hlsjs.account)")
            #expect(hlsjs.fatalErrors.isEmpty, "hls.js fatal errors: \(hlsjs.fatalErrors) \(hlsjs.account)")
            let played = hlsjs.summary?.all.played ?? 0
            #expect(played >= minimumPlayed, "hls.js played \(played) s of \(Int(seconds)): \(hlsjs.account)")
            let latency = hlsjs.latencies
            #expect(
                latency.share(within: Self.window) >= 0.8,
                "hls.latency \(latency); samples: \(latency.samples.map { String(format: "%.2f", $0) })")
            let urls = (hlsjs.network?.requests ?? []).map(\.url)
            let refused = (hlsjs.network?.failed ?? []).filter { $0.status != 404 }
            #expect(refused.isEmpty, "refused or failed: \(refused.map { "\($0.status) \($0.url)" })")
            let kinds = urls.map(LowLatencyRequest.init(url:))
            #expect(
                kinds.filter { $0 == .part }.count >= minimumParts, "hls.js requests: \(LowLatencyRequest.tally(urls))")
            #expect(
                kinds.contains(.blockingPlaylist) || kinds.contains(.deltaPlaylist),
                "hls.js never blocked: \(LowLatencyRequest.tally(urls))")
            return LowLatencyHlsjsRun(report: report, hlsjs: hlsjs, played: played, latency: latency, urls: urls)
        }

        @Test(
            "hls.js plays through a 10 s encoder outage: no fatal error, latency back in 1-2.5 s within 10 s")
        func hlsjsPlaysThroughAnEncoderOutage() async throws {
            try await OriginProcess.withRunning(
                configuration: LowLatencyStream.configuration(), label: "ll-outage"
            ) { origin in
                let firstEncoder = try LowLatencyStream.startPush(
                    port: origin.port, directory: origin.directory, label: "ffmpeg-ll-1")
                defer { firstEncoder.signal(SIGKILL) }
                let client = HTTPClient(port: origin.port)
                _ = try await LowLatencyStream.awaitParts(client: client, path: LowLatencyStream.mediaPath, parts: 3)

                // The encoder dies 18 s into playback and a new one starts 10 s later.
                let outage = Task { () -> (killed: Double, restarted: Double, encoder: ChildProcess?) in
                    try? await Task.sleep(for: .seconds(18))
                    firstEncoder.signal(SIGKILL)
                    let killed = Date().timeIntervalSince1970
                    try? await Task.sleep(for: .seconds(10))
                    let restarted = Date().timeIntervalSince1970
                    let encoder = try? LowLatencyStream.startPush(
                        port: origin.port, directory: origin.directory, label: "ffmpeg-ll-2")
                    return (killed, restarted, encoder)
                }
                let report = try await BrowserPlayer.play(
                    [
                        // A player waits out a 10 s outage behind the live edge; hls.js comes back to its target
                        // only if it may play faster (its default never does), and by default it aims 1 s further
                        // behind for good after each stall (up to a target duration: 3.2 s here, measured 2.9 s
                        // after the return): the LL settings players use instead, so what is measured is whether
                        // the origin lets the player get back, not the player's policy (docs/low-latency.md).
                        BrowserPlayer.Run(
                            player: .hlsjs, url: origin.baseURL + LowLatencyStream.multivariantPath, seconds: 55,
                            interval: 0.25, requests: true, catchUpRate: LowLatencyStream.catchUpRate,
                            stallIncrease: 0)
                    ], directory: origin.directory, label: "ll-outage")
                let (killed, restarted, secondEncoder) = await outage.value
                defer { secondEncoder?.signal(SIGKILL) }
                #expect(secondEncoder != nil, "the second encoder did not start")

                let hlsjs = try #require(report.runs?.first)
                #expect(hlsjs.error == nil, "\(hlsjs.account)")
                #expect(hlsjs.fatalErrors.isEmpty, "hls.js fatal errors: \(hlsjs.fatalErrors) \(hlsjs.account)")
                let samples = hlsjs.samplesSincePlaying
                func latencies(_ range: Range<Double>) -> LatencyFigures {
                    LatencyFigures(
                        samples: samples.filter { range.contains($0.wallClock ?? 0) }.compactMap(\.latency))
                }
                let before = latencies(0..<killed)
                let during = latencies(killed..<restarted)
                let backAt = samples.first {
                    ($0.wallClock ?? 0) >= restarted && Self.window.contains($0.latency ?? -1)
                }?.wallClock
                let recovery = backAt.map { $0 - restarted }
                let after = latencies((restarted + 10)..<Double.infinity)
                #expect(before.share(within: Self.window) >= 0.8, "before the outage: \(before)")
                let afterReturn = latencies(restarted..<Double.infinity).samples.map { String(format: "%.2f", $0) }
                let recoveryText = recovery.map { String(format: "%.2f s", $0) } ?? "never"
                #expect(
                    recovery.map { $0 <= 10 } == true,
                    "latency not back in 1-2.5 s within 10 s of the encoder's return (\(recoveryText)): \(afterReturn)")
                #expect(after.share(within: Self.window) >= 0.8, "from 10 s after the return on: \(after)")
                print(
                    "low-latency hls.js through a 10 s encoder outage: before \(before); during \(during); back in "
                        + "range \(recovery.map { String(format: "%.2f s", $0) } ?? "never") after the encoder's "
                        + "return; from 10 s after it \(after); errors \(hlsjs.otherErrors.prefix(10))")
            }
        }

        @Test("chromium's own HLS, ffmpeg's HLS reader and streamlink play the LL channel as regular HLS")
        func regularClientsPlayTheSameURLs() async throws {
            _ = try await EndToEnd.StreamlinkTests.streamlink()
            try await OriginProcess.withRunning(
                configuration: LowLatencyStream.configuration(), label: "ll-regular"
            ) { origin in
                let encoder = try LowLatencyStream.startPush(
                    port: origin.port, directory: origin.directory, label: "ffmpeg-ll")
                defer { encoder.signal(SIGKILL) }
                let client = HTTPClient(port: origin.port)
                // Three whole segments for the readers that start three back from the end.
                _ = try await LowLatencyStream.awaitParts(client: client, path: LowLatencyStream.mediaPath, parts: 16)
                let url = origin.baseURL + LowLatencyStream.multivariantPath

                // PROGRAM-DATE-TIME per MSN while the native player plays, to estimate its latency.
                let dates = Task { () -> [UInt64: Double] in
                    var dates: [UInt64: Double] = [:]
                    while !Task.isCancelled {
                        if let text = try? await client.get(LowLatencyStream.mediaPath).text {
                            dates.merge(LowLatencyPlaylist(text).programDateTimes) { old, _ in old }
                        }
                        try? await Task.sleep(for: .seconds(1))
                    }
                    return dates
                }
                let recording = origin.directory.appendingPathComponent("ffmpeg-reader.ts")
                let reader = try FFmpeg.startRecorder(
                    url: url, seconds: 20, output: recording, directory: origin.directory, label: "ffmpeg-reader",
                    logLevel: "warning")
                defer { reader.signal(SIGKILL) }
                let streamlinkOutput = origin.directory.appendingPathComponent("streamlink.ts")
                let streamlink = try ChildProcess(
                    executable: try await EndToEnd.StreamlinkTests.streamlink(),
                    arguments: [
                        "--loglevel", "debug", "--hls-live-edge", "3", "--stream-segmented-duration", "20", "--force",
                        "-o", streamlinkOutput.path, url, "best",
                    ], directory: origin.directory, label: "streamlink")
                defer { streamlink.signal(SIGKILL) }
                // `hlsorigin validate` watches the same channel meanwhile: its parts keep rule 38.
                let validator = try ValidateRun.start(url: url, seconds: 20, directory: origin.directory)
                defer { validator.signal(SIGKILL) }
                let report = try await BrowserPlayer.play(
                    [BrowserPlayer.Run(player: .native, url: url, seconds: 30, interval: 0.25, requests: true)],
                    directory: origin.directory, label: "ll-native")
                dates.cancel()
                let programDateTimes = await dates.value

                let readerStatus = await reader.wait(timeout: .seconds(30))
                let streamlinkStatus = await streamlink.wait(timeout: .seconds(30))
                let validation = await ValidateRun.finish(validator, seconds: 20)
                #expect(validation.status == 0, "validate: \(validation.output)\(validation.errors)")
                let partDurations = validation.line("PASS", "part-durations")
                #expect(partDurations != nil, "validate: \(validation.output)")

                // Chromium's own HLS: when the browser has one, it must play the LL playlist (its parts and hints
                // ignored, the URI lines played).
                let nativeHLS = report.capabilities?.nativeHLS ?? ""
                var nativeAccount = "not available (canPlayType '\(nativeHLS)')"
                if !nativeHLS.isEmpty {
                    let native = try #require(report.runs?.first)
                    let played = native.summary?.all.played ?? 0
                    let urls = (native.network?.requests ?? []).map(\.url)
                    #expect(native.fatalErrors.isEmpty, "chromium's own HLS: \(native.account)")
                    #expect(played >= 20, "chromium's own HLS played \(played) s of 30: \(native.account)")
                    let latency = Self.nativeLatency(native, programDateTimes: programDateTimes)
                    nativeAccount =
                        "played \(String(format: "%.1f", played)) s, latency (PDT estimate) \(latency), "
                        + "requests: \(LowLatencyRequest.tally(urls))"
                }

                #expect(readerStatus == 0, "ffmpeg's HLS reader: status \(readerStatus.map(String.init) ?? "running")")
                let (readerFrames, readerErrors) = try await EndToEnd.StreamlinkTests.decode(
                    recording, in: origin.directory)
                #expect((readerFrames["video"] ?? 0) >= 400, "ffmpeg reader's file: \(readerFrames) \(readerErrors)")
                #expect((readerFrames["audio"] ?? 0) >= 400, "ffmpeg reader's file: \(readerFrames) \(readerErrors)")

                let streamlinkLog = streamlink.standardOutput + streamlink.standardError
                #expect(
                    streamlinkStatus == 0,
                    "streamlink: \(streamlinkStatus.map(String.init) ?? "running")\n\(streamlinkLog)")
                #expect(
                    EndToEnd.StreamlinkTests.failures(streamlinkLog).isEmpty,
                    "streamlink reported:\n\(EndToEnd.StreamlinkTests.failures(streamlinkLog).joined(separator: "\n"))")
                let (streamlinkFrames, streamlinkErrors) = try await EndToEnd.StreamlinkTests.decode(
                    streamlinkOutput, in: origin.directory)
                #expect(
                    (streamlinkFrames["video"] ?? 0) >= 375,
                    "streamlink's file: \(streamlinkFrames) \(streamlinkErrors)")
                print(
                    "low-latency channel as regular HLS: chromium native \(nativeAccount); ffmpeg reader decoded "
                        + "\(readerFrames); streamlink decoded \(streamlinkFrames); validate: "
                        + (partDurations ?? "no part-durations PASS"))
            }
        }

        /// Chromium's own HLS exposes no PROGRAM-DATE-TIME; its latency is estimated from the first segment it
        /// fetched: the element's time at that segment's start is its first buffered start, so the wall clock minus
        /// (that segment's PDT + currentTime - first buffered start) is how far behind real time the picture is.
        static func nativeLatency(
            _ native: BrowserPlayer.Played, programDateTimes: [UInt64: Double]
        )
            -> LatencyFigures
        {
            guard
                let firstSegment = native.network?.requests?.first(where: {
                    LowLatencyRequest(url: $0.url) == .segment
                }),
                let name = firstSegment.url.split(separator: "?").first?.split(separator: "/").last,
                let msn = UInt64(name.dropLast(3)), let date = programDateTimes[msn],
                let firstBuffered = native.samples?.lazy.compactMap({
                    $0.buffered?.split(separator: " ").first?.split(separator: "-").first.flatMap { Double($0) }
                }).first
            else { return LatencyFigures(samples: []) }
            return LatencyFigures(
                samples: native.samplesSincePlaying.compactMap { sample in
                    guard let wall = sample.wallClock, let time = sample.currentTime else { return nil }
                    return wall - (date + time - firstBuffered)
                })
        }
    }
}
