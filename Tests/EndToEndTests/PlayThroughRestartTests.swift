import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

/// Keeps an encoder running as a production supervisor does (systemd's `Restart=always`, a shell loop): ffmpeg's HLS
/// muxer exits when a PUT fails, for instance when its origin dies, and is started again one second later.
final class EncoderSupervisor: Sendable {
    private struct State {
        var current: ChildProcess?
        var starts = 0
        var stopped = false
        /// The last lines of each exited encoder's stderr.
        var exits: [String] = []
    }

    private let state = Mutex(State())
    private let loop = Mutex<Task<Void, Never>?>(nil)

    /// Starts the first encoder at once; `start` gets the number of the start (1, 2, ...).
    init(start: @escaping @Sendable (Int) throws -> ChildProcess) {
        let task = Task { [self] in
            while !state.withLock({ $0.stopped }) {
                let number = state.withLock { $0.starts + 1 }
                guard let child = try? start(number) else { return }
                state.withLock {
                    $0.current = child
                    $0.starts = number
                }
                while child.isRunning, !state.withLock({ $0.stopped }) {
                    try? await Task.sleep(for: .milliseconds(50))
                }
                if state.withLock({ $0.stopped }) { break }
                let tail = child.standardError.split(separator: "\n").suffix(3).joined(separator: " | ")
                state.withLock { $0.exits.append("encoder \(number) exited: \(tail)") }
                try? await Task.sleep(for: .seconds(1))
            }
        }
        loop.withLock { $0 = task }
    }

    /// How many encoders were started.
    var starts: Int { state.withLock { $0.starts } }
    /// One line per encoder that exited on its own.
    var exits: [String] { state.withLock { $0.exits } }

    /// Kills the running encoder (a crash): the loop starts the next one a second later.
    func crashCurrent() {
        state.withLock { $0.current }?.signal(SIGKILL)
    }

    /// Stops the loop and kills the running encoder.
    func stop() async {
        let current = state.withLock {
            $0.stopped = true
            return $0.current
        }
        current?.signal(SIGKILL)
        let task = loop.withLock { $0 }
        await task?.value
    }
}

extension EndToEndRestarts {
    /// The origin is killed with SIGKILL and restarted at once on the same port and data directory while a real ffmpeg
    /// pushes two renditions from a supervisor loop, and three real players read the multivariant playlist: ffmpeg's
    /// HLS reader, streamlink and GStreamer's playbin. Before the kill the encoder crashes once, so the window holds
    /// GAP entries (answered with filler) and a discontinuity. A restart must be invisible to the players: the
    /// restored window is listed again with the same facts, the downtime becomes GAP entries on the shared clock, no
    /// playlist and no listed segment or GAP URL answers 404, and every reader plays on without an error.
    @Suite("End to end: players through a SIGKILL and restart of the origin", .tags(.endToEnd))
    struct PlayThroughRestartTests {
        static let channel = "pr"
        static let configuration = """
            logLevel: info
            ingest:
              autoCreate: false
            channels:
              - name: \(channel)
                segmentDuration: 2
                window: { segments: 10 }
                gapResponse: filler
                renditions: [{name: hi}, {name: lo}]
            """
        static let renditions = [
            FFmpeg.PushedRendition(name: "hi", width: 640, height: 360, videoBitrate: "600k"),
            FFmpeg.PushedRendition(name: "lo", width: 320, height: 180, videoBitrate: "200k"),
        ]
        static let names = renditions.map(\.name)
        /// How long each reader plays, seconds; the restart comes `secondsBeforeKill` after they start.
        static let readSeconds = 30
        static let secondsBeforeKill = 11

        /// The players and what they wrote.
        struct Readers {
            let ffmpeg: ChildProcess
            let ffmpegOutput: URL
            let streamlink: ChildProcess
            let streamlinkOutput: URL
            let gstreamer: ChildProcess
            var all: [ChildProcess] { [ffmpeg, streamlink, gstreamer] }
        }

        @Test("a reader's log line reports status 404 only as a number of its own, never inside a timestamp")
        func readerFailuresTell404FromTimestamps() {
            let streamlinkDebug =
                "[stream.segmented][debug] Queuing HLSSegment(num=8, init=False, discontinuity=True, duration=2.000, "
                + "date=2026-11-29T18:53:41.404000Z, map=None, fileext='ts')"
            #expect(Self.failures(streamlinkDebug).isEmpty)
            #expect(Self.failures("[stream.hls][debug] Reloading playlist /live/demo/360p/2404.ts").isEmpty)
            let notFound = "[stream.hls][error] Failed to fetch segment 12: 404 Client Error: Not Found for url: x"
            #expect(Self.failures(notFound) == [notFound])
            let ffmpeg = "[hls @ 0x55] HTTP error 404 Not Found"
            #expect(Self.failures(ffmpeg) == [ffmpeg])
            // After a refused connection (the origin down), a 404 still counts; other complaints do not.
            let refused = "[urllib3][debug] Connection refused"
            #expect(Self.failures(refused + "\n" + "ffmpeg: 404") == ["ffmpeg: 404"])
            #expect(Self.failures(refused + "\n" + "Unable to open").isEmpty)
        }

        @Test("ffmpeg, streamlink and GStreamer play through kill -9 + restart: no 404, no reader error")
        func playersKeepPlayingThroughKillAndRestart() async throws {
            _ = try await EndToEnd.StreamlinkTests.streamlink()
            try await GStreamerPlayer.requireInstalled(in: try TemporaryDirectory.make("hlsorigin-e2e-gstreamer"))
            let port = try OriginProcess.freePort()
            let origin = try await OriginProcess(configuration: Self.configuration, label: "play-restart", port: port)
            let supervisor = EncoderSupervisor { number in
                try FFmpeg.startPush(
                    port: port, channel: Self.channel, renditions: Self.renditions, directory: origin.directory,
                    label: "encoder-\(number)")
            }
            let restarted = Mutex<OriginProcess?>(nil)
            var readers: [ChildProcess] = []
            do {
                try await Self.run(origin: origin, port: port, supervisor: supervisor, readers: &readers) { next in
                    restarted.withLock { $0 = next }
                }
            } catch {
                await supervisor.stop()
                for reader in readers { reader.signal(SIGKILL) }
                origin.kill()
                let last = restarted.withLock { $0 }
                last?.kill()
                throw EndToEndError(
                    "\(error)\n--- hlsorigin log tail (\(origin.directory.path)) ---\n"
                        + "\(last?.logTail() ?? origin.logTail())")
            }
            await supervisor.stop()
            for reader in readers { reader.signal(SIGKILL) }
            let last = restarted.withLock { $0 }
            let status = await last?.stop()
            #expect(status == 0, "the restarted origin did not exit cleanly: \(last?.logTail() ?? "")")
        }

        /// The scenario: encoder up, readers started, kill -9 + restart, readers to their end, then the checks.
        private static func run(
            origin: OriginProcess, port: Int, supervisor: EncoderSupervisor, readers started: inout [ChildProcess],
            restartedOrigin: (OriginProcess) -> Void
        ) async throws {
            let client = HTTPClient(port: port)
            let watcher = LiveStreamWatcher(
                client: client, channel: channel, renditions: names, directory: origin.directory, probeEvery: 3,
                gapAnswer: .filler)
            try await watcher.watch(for: .seconds(40), interval: .milliseconds(250)) {
                names.allSatisfy { (watcher.trackers[$0]?.msns.count ?? 0) >= 3 }
            }
            guard names.allSatisfy({ (watcher.trackers[$0]?.msns.count ?? 0) >= 3 }) else {
                throw EndToEndError("no three segments per rendition within 40 s: \(supervisor.exits)")
            }
            let readers = try await startReaders(origin: origin)
            started = readers.all
            // The encoder crashes once and its supervisor starts it again: the window the restart must restore holds
            // GAP entries and a discontinuity too.
            let readersStarted = ContinuousClock.now
            try await watcher.watch(for: .seconds(2), interval: .milliseconds(250))
            let lastBeforeCrash = names.map { watcher.trackers[$0]?.lastMSN ?? 0 }
            supervisor.crashCurrent()
            func back() -> Bool {
                zip(names, lastBeforeCrash).allSatisfy { name, floor in
                    guard let tracker = watcher.trackers[name] else { return false }
                    let newer = tracker.msns.filter { $0 > floor }
                    guard let gap = newer.first(where: { tracker.entries[$0]!.gap }) else { return false }
                    return newer.contains { $0 > gap && !tracker.entries[$0]!.gap }
                }
            }
            try await watcher.watch(for: .seconds(15), interval: .milliseconds(250), until: back)
            if !back() { Issue.record("no GAP entry and segment after the encoder's crash: \(supervisor.exits)") }
            let killAt = readersStarted + .seconds(secondsBeforeKill)
            if ContinuousClock.now < killAt {
                try await watcher.watch(for: killAt - ContinuousClock.now, interval: .milliseconds(250))
            }

            // The last playlist each rendition listed before the kill.
            try await watcher.poll()
            var listedBeforeKill: [String: [RenditionTracker.Entry]] = [:]
            for name in names {
                let tracker = try #require(watcher.trackers[name])
                let lastPoll = tracker.lastListed.values.max() ?? 0
                listedBeforeKill[name] = tracker.msns.filter { tracker.lastListed[$0] == lastPoll }.map {
                    tracker.entries[$0]!
                }
            }
            origin.kill()
            _ = await origin.child.wait(timeout: .seconds(5))
            let killedAt = watcher.now
            let killedAtEpoch = Date().timeIntervalSince1970
            let restarted = try await OriginProcess(
                configuration: configuration, label: "restarted", port: port, restarting: origin.directory)
            restartedOrigin(restarted)
            let restartedAt = watcher.now
            let restartedAtEpoch = Date().timeIntervalSince1970

            // At once, before the encoder is back: every playlist answers, every segment listed before is served.
            let firstAnswers = try await firstAnswersAfterRestart(client: client)
            let unserved = try await segmentsNotServedAgain(
                client: client, listed: listedBeforeKill, verifier: watcher.verifier)
            var pollErrors: [String] = []
            let deadline = ContinuousClock.now + .seconds(readSeconds + 25)
            while readers.all.contains(where: \.isRunning), ContinuousClock.now < deadline {
                let began = ContinuousClock.now
                do {
                    try await watcher.poll()
                } catch {
                    pollErrors.append(String(format: "[%.1f s] ", watcher.now) + "\(error)")
                }
                try await Task.sleep(until: began + .milliseconds(250))
            }
            for reader in readers.all where reader.isRunning { reader.signal(SIGKILL) }

            let violations = await watcher.finish()
            #expect(firstAnswers.isEmpty, "right after the restart: \(firstAnswers.joined(separator: "; "))")
            #expect(
                unserved.isEmpty,
                "listed before the kill, not served after the restart:\n\(unserved.joined(separator: "\n"))")
            #expect(pollErrors.isEmpty, "the restarted origin did not answer: \(pollErrors.prefix(5))")
            let firstViolations = violations.prefix(40).joined(separator: "\n")
            #expect(
                violations.isEmpty,
                "\(violations.count) problems (404s, changed MSNs, undecodable segments):\n\(firstViolations)")
            expectWindowRestoredAndDowntimeCovered(
                watcher: watcher, listedBeforeKill: listedBeforeKill, restartedAt: restartedAt)
            #expect(watcher.sameMSNs().isEmpty, "\(watcher.sameMSNs())")
            #expect(watcher.discontinuitySequenceAlignment().isEmpty, "\(watcher.discontinuitySequenceAlignment())")
            let report = try await expectReadersPlayedThrough(
                readers, directory: origin.directory, killedAtEpoch: killedAtEpoch,
                restartedAtEpoch: restartedAtEpoch)
            print(
                "play through restart: killed at \(String(format: "%.1f", killedAt)) s, listening again after "
                    + String(format: "%.2f", restartedAt - killedAt) + " s; encoder starts \(supervisor.starts) "
                    + "(\(supervisor.exits.joined(separator: "; "))); "
                    + names.map { name in
                        let tracker = watcher.trackers[name]!
                        let gaps = tracker.msns.filter { tracker.entries[$0]!.gap }
                        let discontinuities = tracker.msns.filter { tracker.entries[$0]!.discontinuity }
                        return "\(name): MSNs \(tracker.msns.first ?? 0)...\(tracker.lastMSN ?? 0), last before the "
                            + "kill \(listedBeforeKill[name]?.last?.msn ?? 0), GAP \(gaps), discontinuities "
                            + "\(discontinuities)"
                    }.joined(separator: "; ") + "\n" + report)
        }

        /// Starts the three players on the multivariant playlist.
        private static func startReaders(origin: OriginProcess) async throws -> Readers {
            let url = "\(origin.baseURL)/live/\(channel)/index.m3u8"
            let ffmpegOutput = origin.directory.appendingPathComponent("reader-ffmpeg.ts")
            let ffmpeg = try FFmpeg.startRecorder(
                url: url, seconds: readSeconds, output: ffmpegOutput, directory: origin.directory,
                label: "reader-ffmpeg", logLevel: "warning")
            let streamlinkOutput = origin.directory.appendingPathComponent("reader-streamlink.ts")
            let streamlink = try ChildProcess(
                executable: try await EndToEnd.StreamlinkTests.streamlink(),
                arguments: [
                    "--loglevel", "debug", "--hls-live-edge", "3", "--stream-segmented-duration", "\(readSeconds)",
                    "--force", "-o", streamlinkOutput.path, url, "best",
                ], directory: origin.directory, label: "reader-streamlink")
            let gstreamer = try GStreamerPlayer.start(
                url: url, seconds: readSeconds, directory: origin.directory, label: "reader-gstreamer")
            return Readers(
                ffmpeg: ffmpeg, ffmpegOutput: ffmpegOutput, streamlink: streamlink,
                streamlinkOutput: streamlinkOutput, gstreamer: gstreamer)
        }

        /// The multivariant and every media playlist, requested once the restarted origin listens and before
        /// anything is pushed to it: problems (anything but 200 with entries).
        private static func firstAnswersAfterRestart(client: HTTPClient) async throws -> [String] {
            var problems: [String] = []
            let paths = ["/live/\(channel)/index.m3u8"] + names.map { "/live/\(channel)/\($0)/index.m3u8" }
            for path in paths {
                let answer = try await client.get(path)
                if answer.status != 200 {
                    problems.append("\(path) answered \(answer.status) \(answer.text)")
                } else if !answer.text.contains("#EXT-X-STREAM-INF"), !answer.text.contains("#EXTINF") {
                    problems.append("\(path) answered 200 without entries:\n\(answer.text)")
                }
            }
            return problems
        }

        /// Every entry of the last playlists before the kill, requested from the restarted origin at the same URL:
        /// problems (not 200, or a segment with other bytes than the watcher downloaded before; a GAP entry answers a
        /// filler made again, whose bytes were never acknowledged).
        private static func segmentsNotServedAgain(
            client: HTTPClient, listed: [String: [RenditionTracker.Entry]], verifier: SegmentVerifier
        ) async throws -> [String] {
            var problems: [String] = []
            for name in names {
                for entry in listed[name] ?? [] {
                    let path = "/live/\(channel)/\(name)/\(entry.uri)"
                    let answer = try await client.get(path)
                    if answer.status != 200 {
                        let kind = entry.gap ? "GAP entry" : "segment"
                        problems.append("\(path) (\(kind), MSN \(entry.msn)) answered \(answer.status) \(answer.text)")
                    } else if !entry.gap, let before = verifier.bytes(name, entry.msn), before != answer.body {
                        problems.append(
                            "\(path) (MSN \(entry.msn)): \(answer.body.count) bytes differ from the \(before.count) "
                                + "served before the kill")
                    }
                }
            }
            return problems
        }

        /// Every MSN of the last playlists before the kill is listed again by the restarted origin (the tracker
        /// checks that its URI, EXTINF, PDT, DSN and GAP did not change); the slot after the last one is the next MSN
        /// and starts where it ended on the PDT timeline (the downtime is GAP entries, no MSN or time jumps of a
        /// target duration or more); the encoder's first segment after the restart carries EXT-X-DISCONTINUITY.
        private static func expectWindowRestoredAndDowntimeCovered(
            watcher: LiveStreamWatcher, listedBeforeKill: [String: [RenditionTracker.Entry]], restartedAt: Double
        ) {
            for name in names {
                guard let tracker = watcher.trackers[name], let listed = listedBeforeKill[name], let last = listed.last
                else {
                    Issue.record("\(name): nothing listed before the kill")
                    continue
                }
                let notListedAgain = listed.map(\.msn).filter { (tracker.lastListed[$0] ?? 0) < restartedAt }
                let firstAfter = tracker.msns.first { (tracker.lastListed[$0] ?? 0) >= restartedAt }
                #expect(
                    notListedAgain.isEmpty,
                    Comment(
                        rawValue: "\(name): MSNs \(notListedAgain) were listed before the kill and never after the "
                            + "restart (the restarted origin's first MSN: \(firstAfter.map(String.init) ?? "none"))"))
                guard let next = tracker.entries[last.msn + 1] else {
                    Issue.record(
                        Comment(
                            rawValue: "\(name): MSN \(last.msn + 1), the slot after the last one before the kill, was "
                                + "never listed; after the restart the MSNs were "
                                + "\(tracker.msns.filter { $0 > last.msn })"))
                    continue
                }
                // The next slot starts where the last one ended; a segment that starts a discontinuity may re-anchor on
                // the clock, less than a target duration later (a longer hole would be downtime without GAP entries).
                let end = (last.programDateTimeMilliseconds ?? 0) + last.durationMilliseconds
                let hole = (next.programDateTimeMilliseconds ?? Int64.min / 2) - end
                let allowed: Range<Int64> = next.discontinuity && !next.gap ? 0..<2000 : 0..<1
                #expect(
                    allowed.contains(hole),
                    Comment(
                        rawValue: "\(name): MSN \(next.msn) starts at PDT \(next.programDateTimeMilliseconds ?? -1) "
                            + "ms, MSN \(last.msn) ended at \(end) ms: the downtime is not covered on the shared clock")
                )
                if let firstSegment = tracker.msns.first(where: {
                    $0 > last.msn && !tracker.entries[$0]!.gap && (tracker.firstSeen[$0] ?? 0) >= restartedAt
                }) {
                    #expect(
                        tracker.entries[firstSegment]!.discontinuity,
                        Comment(
                            rawValue: "\(name): the encoder's first segment after the restart (MSN \(firstSegment)) "
                                + "has no EXT-X-DISCONTINUITY"))
                } else {
                    Issue.record("\(name): no segment from the encoder after the restart")
                }
            }
        }

        /// Lines of a reader's log that report a failure, except those about the connection that the kill refused
        /// or cut (the origin was not running then: every origin does that) and the line right after one of those.
        static func failures(_ log: String) -> [String] {
            let lines = log.split(separator: "\n").map(String.init)
            let downtime = [
                "Connection refused", "Connection reset", "Connection aborted", "RemoteDisconnected",
                "Broken pipe", "Connection timed out", "End of file",
            ]
            let failure = ["error", "Error", "Failed", "failed", "Unable", "Skipping", "HTTP error"]
            var found: [String] = []
            for (index, line) in lines.enumerated() where failure.contains(where: line.contains) || mentions404(line) {
                if downtime.contains(where: line.contains) { continue }
                if index > 0, downtime.contains(where: lines[index - 1].contains), !mentions404(line) { continue }
                found.append(line)
            }
            return found
        }

        /// Whether `line` names status 404: the number on its own, not digits of another number (streamlink's debug
        /// lines carry PROGRAM-DATE-TIMEs, and a `.404000Z` once failed a full CI run).
        static func mentions404(_ line: String) -> Bool {
            let bytes = Array(line.utf8)
            func isNumeric(_ index: Int) -> Bool {
                index >= 0 && index < bytes.count
                    && ((UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) || bytes[index] == UInt8(ascii: "."))
            }
            var index = 0
            while index + 3 <= bytes.count {
                if bytes[index..<index + 3].elementsEqual("404".utf8), !isNumeric(index - 1), !isNumeric(index + 3) {
                    return true
                }
                index += 1
            }
            return false
        }

        /// Each reader ended well, logged no failure, and its output decodes and goes on well past the restart.
        /// Returns a report line per reader.
        private static func expectReadersPlayedThrough(
            _ readers: Readers, directory: URL, killedAtEpoch: Double, restartedAtEpoch: Double
        ) async throws -> String {
            var report: [String] = []
            for (name, child, output) in [
                ("ffmpeg", readers.ffmpeg, readers.ffmpegOutput),
                ("streamlink", readers.streamlink, readers.streamlinkOutput),
            ] {
                let status = await child.wait(timeout: .seconds(1))
                let log = child.standardOutput + child.standardError
                #expect(status == 0, "\(name) reader: status \(String(describing: status))\n\(log.suffix(3000))")
                let failures = Self.failures(log)
                #expect(failures.isEmpty, "\(name) reader logged:\n\(failures.prefix(20).joined(separator: "\n"))")
                guard FileManager.default.fileExists(atPath: output.path) else {
                    Issue.record("\(name) reader wrote no output")
                    continue
                }
                let (duration, _) = try await FFmpeg.formatDuration(of: output, in: directory)
                let (frames, errors) = try await EndToEnd.StreamlinkTests.decode(output, in: directory)
                #expect(errors.isEmpty, "ffprobe decoding the \(name) reader's output said: \(errors)")
                // A reader that stopped at the kill wrote what it had buffered then: about secondsBeforeKill + 6 s of
                // 25 fps video. (Not ffprobe's duration: the encoder's restart started its timestamps again.)
                #expect(
                    (frames["video"] ?? 0) >= (readSeconds - 4) * 25,
                    Comment(
                        rawValue: "the \(name) reader's output decodes to \(frames) frames, not \(readSeconds) s of "
                            + "video: it stopped at the restart"))
                let downtimeLines = log.split(separator: "\n").filter { $0.contains("refused") || $0.contains("reset") }
                report.append(
                    "\(name): status \(status.map(String.init) ?? "running"), ffprobe duration "
                        + "\(String(format: "%.1f", duration)) s, frames \(frames), \(downtimeLines.count) log lines "
                        + "about the refused connection")
            }
            let status = await readers.gstreamer.wait(timeout: .seconds(1))
            let summary = try GStreamerPlayer.summary(of: readers.gstreamer)
            #expect(status == 0, "GStreamer: status \(String(describing: status)), errors \(summary.errors)")
            #expect(summary.errors.isEmpty, "GStreamer posted errors: \(summary.errors)")
            #expect(!summary.eos, "GStreamer reached the end of the stream (a live stream has none)")
            let afterRestart = summary.videoFrames(after: restartedAtEpoch)
            let secondsAfter = summary.ended - restartedAtEpoch
            #expect(
                Double(afterRestart) >= (secondsAfter - 8) * 25,
                "GStreamer decoded \(afterRestart) video frames in the \(secondsAfter) s after the restart")
            #expect(summary.maxVideoStall < 6, "GStreamer's video stalled for \(summary.maxVideoStall) s")
            report.append(
                "GStreamer: \(summary.video) video frames and \(summary.audio) audio buffers decoded, "
                    + "\(afterRestart) frames after the restart, longest video stall "
                    + String(format: "%.2f", summary.maxVideoStall) + " s, \(summary.warnings.count) warnings "
                    + "\(summary.warnings.prefix(3)), killed "
                    + String(format: "%.1f", killedAtEpoch - summary.started) + " s after it started")
            return report.joined(separator: "\n")
        }
    }
}
