import Foundation
import Glibc
import HLSPlaylist
import Synchronization
import TestSupport
import Testing

/// Removed segments fetched again at a given instant, from tasks of their own.
final class RetentionLog: Sendable {
    struct Fetch: Sendable {
        let key: String
        let status: Int
        let text: String
        let body: [UInt8]
    }

    private let log = Mutex<[Fetch]>([])

    /// Fetches `path` at `instant` (not at all if cancelled before).
    func fetch(client: HTTPClient, path: String, key: String, at instant: ContinuousClock.Instant) -> Task<Void, Never>
    {
        Task {
            do {
                try await Task.sleep(until: instant)
                let response = try await client.get(path)
                let fetch = Fetch(
                    key: key, status: response.status, text: response.status == 200 ? "" : response.text,
                    body: response.body)
                log.withLock { $0.append(fetch) }
            } catch {
                return
            }
        }
    }

    var fetches: [Fetch] { log.withLock { $0 } }
    var count: Int { log.withLock { $0.count } }
}

extension EndToEnd {
    /// A real ffmpeg pushes two renditions over HTTP PUT to an origin that creates the channel on the first
    /// push; a polling reader checks every playlist rule, every segment and the HTTP answers; the encoder is killed and
    /// restarted; a second reader records 15 s with ffmpeg.
    @Suite("End to end: ffmpeg pushes two renditions", .tags(.endToEnd))
    struct PushTests {
        static let configuration = """
            logLevel: info
            ingest:
              autoCreate: true
              defaults:
                segmentDuration: 2
                window: { segments: 6 }
            channels: []
            """

        static let renditions = [
            FFmpeg.PushedRendition(name: "720p", width: 640, height: 360, videoBitrate: "800k"),
            FFmpeg.PushedRendition(name: "360p", width: 320, height: 180, videoBitrate: "300k"),
        ]

        /// A removed segment fetched again once its duration plus the window's duration has passed since the last
        /// reload that still listed it.
        struct RetentionCheck {
            let rendition: String
            let msn: UInt64
            let due: Double
        }

        @Test("live window, segments, HTTP semantics, encoder restart, ffmpeg recording")
        func pushedChannel() async throws {
            try await OriginProcess.withRunning(configuration: Self.configuration, label: "push") { origin in
                let run = PushRun(origin: origin, renditions: Self.renditions)
                defer { run.killEncoders() }
                try await run.http.checkNotFound("/live/e2e/index.m3u8")  // no channel before the first push
                try run.startEncoder(label: "encoder-1")

                // Phase 1: 24 s of pushing.
                try await run.watch(for: .seconds(24))
                let firstEncoderErrors = run.encoder.standardError
                #expect(run.encoder.isRunning, "encoder exited early: \(firstEncoderErrors)")
                let multivariant = run.watcher.lastMultivariant

                // Kill the encoder, wait 3 s (reading on), restart it.
                let restart = try await run.restartEncoder(after: .seconds(3))

                // Phase 2: until both renditions joined and listed three more segments, and the recorder is done.
                try await run.watch(for: .seconds(40)) { run.isDone(after: restart) }
                let secondEncoderErrors = run.encoder.standardError
                let recorderStatus = await run.stopEncoderRecorderAndFetches()
                let violations = await run.watcher.finish()
                let retentionFetches = run.retentionLog.fetches
                let retentionProblems = run.retentionProblems(retentionFetches)

                // Playlists, segments, timestamps, alignment.
                let watcher = run.watcher
                #expect(
                    violations.isEmpty,
                    "\(violations.count) problems:\n\(violations.prefix(40).joined(separator: "\n"))")
                #expect(watcher.sameMSNs().isEmpty, "\(watcher.sameMSNs())")
                #expect(watcher.discontinuitySequenceAlignment().isEmpty, "\(watcher.discontinuitySequenceAlignment())")
                #expect(run.http.problems.isEmpty, "HTTP semantics:\n\(run.http.problems.joined(separator: "\n"))")
                #expect(run.semanticsChecked)
                #expect(retentionProblems.isEmpty, "\(retentionProblems.joined(separator: "\n"))")
                #expect(retentionFetches.count >= 2, "only \(retentionFetches.count) removed segments fetched again")
                #expect(firstEncoderErrors.isEmpty, "encoder 1 said: \(firstEncoderErrors)")
                #expect(secondEncoderErrors.isEmpty, "encoder 2 said: \(secondEncoderErrors)")

                try Self.expectMultivariant(multivariant, text: watcher.lastMultivariantText)
                let (gapCount, joinSeen) = try Self.expectGapsCoverTheRestart(
                    watcher: watcher, names: run.names, lastAtKill: restart.lastAtKill)
                let duration = try await Self.expectRecording(run: run, status: recorderStatus)

                let names = run.names
                let segments = names.map { watcher.trackers[$0]!.msns.count }.reduce(0, +)
                print(
                    "push: \(segments) entries seen (\(gapCount) GAP), "
                        + "\(watcher.verifier.downloaded) segments downloaded, "
                        + "\(watcher.verifier.probed) decoded, "
                        + "\(names.map { watcher.continuityPairs($0) }) continuity pairs, "
                        + "\(retentionFetches.count) retention fetches, \(run.http.checks) HTTP checks, "
                        + "\(run.client.counter.value) requests, recording \(duration) s, "
                        + "MSN at kill \(restart.lastAtKill), "
                        + "last MSN \(names.map { watcher.trackers[$0]!.lastMSN ?? 0 }), "
                        + "staleness <= \(names.map { watcher.trackers[$0]!.maxStalenessUpperBound }) s, "
                        + "killed at \(restart.killedAt) s, restarted at \(restart.restartedAt) s, join first seen at "
                        + "\(names.map { name in joinSeen[name].map { String(format: "%.1f", $0) } ?? "-" }) s")
            }
        }

        /// The multivariant playlist names every pushed rendition with bandwidths, codecs, resolution, frame rate.
        static func expectMultivariant(_ multivariant: MultivariantPlaylist?, text: String) throws {
            let variants = try #require(multivariant?.variants, "no multivariant playlist")
            let names = renditions.map(\.name)
            #expect(
                Set(variants.map(\.uri)) == Set(names.map { "\($0)/index.m3u8" }) && variants.count == names.count,
                "\(text)")
            for pushed in renditions {
                let variant = try #require(variants.first { $0.uri == "\(pushed.name)/index.m3u8" })
                #expect(variant.bandwidth > 0)
                #expect((variant.averageBandwidth ?? 0) > 0 && (variant.averageBandwidth ?? 0) <= variant.bandwidth)
                #expect(variant.codecs.count == 2 && variant.codecs.contains { $0.hasPrefix("avc1.") })
                #expect(variant.codecs.contains("mp4a.40.2"), "\(variant.codecs)")
                #expect(variant.resolution == Resolution(width: pushed.width, height: pushed.height))
                #expect(variant.frameRate == 25)
            }
        }

        /// The encoder restart: MSNs go on, GAP entries (filler, with EXTINF and a URI) cover the outage, the join
        /// carries EXT-X-DISCONTINUITY at the same MSN in every rendition. Returns the GAP count and when each
        /// rendition's join was first seen.
        static func expectGapsCoverTheRestart(
            watcher: LiveStreamWatcher, names: [String], lastAtKill: [String: UInt64]
        ) throws -> (gapCount: Int, joinSeen: [String: Double]) {
            var gapCount = 0
            var joins: Set<UInt64> = []
            var joinSeen: [String: Double] = [:]
            for rendition in names {
                let tracker = try #require(watcher.trackers[rendition])
                let killMSN = lastAtKill[rendition]!
                let after = tracker.msns.filter { $0 > killMSN }
                // A segment finished just before the kill may still arrive: the outage starts at the first GAP.
                let firstGap = after.first { tracker.entries[$0]!.gap }
                let join = try #require(
                    after.first { $0 > (firstGap ?? killMSN) && !tracker.entries[$0]!.gap },
                    "\(rendition): no segment after the restart")
                let entry = tracker.entries[join]!
                joinSeen[rendition] = tracker.firstSeen[join]
                #expect(entry.discontinuity, "\(rendition): the join at MSN \(join) has no EXT-X-DISCONTINUITY")
                let gaps = after.filter { $0 >= (firstGap ?? join) && $0 < join }
                #expect(gaps.allSatisfy { tracker.entries[$0]!.gap })
                #expect(
                    gaps.allSatisfy {
                        tracker.entries[$0]!.durationMilliseconds > 0 && !tracker.entries[$0]!.uri.isEmpty
                    })
                gapCount += gaps.count
                joins.insert(join)
                #expect(tracker.maxStalenessLowerBound <= 1.5 * Double(tracker.targetDuration ?? 0))
            }
            // The discontinuity is at the same MSN in every rendition (RFC 8216 section 6.2.4): the earliest join.
            let sharedJoin = try #require(joins.min())
            for rendition in names {
                let tracker = try #require(watcher.trackers[rendition])
                let discontinuities = tracker.entries.values.filter(\.discontinuity).map(\.msn).sorted()
                #expect(discontinuities.first == sharedJoin, "\(rendition): discontinuities at \(discontinuities)")
            }
            #expect(watcher.gapsSentForFiller == gapCount)
            return (gapCount, joinSeen)
        }

        /// ffmpeg recorded 15 s through the restart without a word; returns the recording's duration.
        static func expectRecording(run: PushRun, status: Int32?) async throws -> Double {
            let recorded = try #require(run.recorder)
            #expect(status == 0, "recorder: status \(String(describing: status)), \(recorded.standardError)")
            #expect(recorded.standardError.isEmpty, "recorder said: \(recorded.standardError)")
            let (duration, probeErrors) = try await FFmpeg.formatDuration(of: run.recording, in: run.origin.directory)
            #expect(abs(duration - 15) <= 1, "recording lasts \(duration) s")
            #expect(probeErrors.isEmpty, "ffprobe of the recording: \(probeErrors)")
            try? FileManager.default.removeItem(at: run.recording)
            return duration
        }
    }

    /// The moving parts of one `PushTests` run: the origin, the pushing encoder, the polling reader, the recorder,
    /// the HTTP checks and the retention fetches, and the steps that drive them.
    final class PushRun {
        let origin: OriginProcess
        let renditions: [FFmpeg.PushedRendition]
        let names: [String]
        let client: HTTPClient
        let watcher: LiveStreamWatcher
        var http: HTTPSemanticsCheck
        private(set) var encoder: ChildProcess!
        private var encoders: [ChildProcess] = []
        private(set) var recorder: ChildProcess?
        let recording: URL
        private(set) var semanticsChecked = false
        private var retention: [String: PushTests.RetentionCheck] = [:]
        let retentionLog = RetentionLog()
        private var retentionTasks: [Task<Void, Never>] = []

        /// When the encoder was killed and restarted, and the last MSN of each rendition at the kill.
        struct Restart {
            let killedAt: Double
            let restartedAt: Double
            let lastAtKill: [String: UInt64]
        }

        init(origin: OriginProcess, renditions: [FFmpeg.PushedRendition]) {
            self.origin = origin
            self.renditions = renditions
            names = renditions.map(\.name)
            client = HTTPClient(port: origin.port)
            watcher = LiveStreamWatcher(
                client: client, channel: "e2e", renditions: names, directory: origin.directory, gapAnswer: .filler)
            http = HTTPSemanticsCheck(client: client, directory: origin.directory)
            recording = origin.directory.appendingPathComponent("out.ts")
        }

        /// Starts ffmpeg pushing every rendition to channel `e2e`.
        func startEncoder(label: String) throws {
            encoder = try FFmpeg.startPush(
                port: origin.port, channel: "e2e", renditions: renditions, directory: origin.directory, label: label)
            encoders.append(encoder)
        }

        func killEncoders() {
            for encoder in encoders { encoder.signal(SIGKILL) }
        }

        /// Polls every 500 ms for `duration` (or until `until` holds), doing `afterPoll()` after each reload.
        func watch(for duration: Duration, until: () -> Bool = { false }) async throws {
            let deadline = ContinuousClock.now + duration
            while ContinuousClock.now < deadline {
                let started = ContinuousClock.now
                try await watcher.poll()
                try await afterPoll()
                if until() { return }
                let next = started + .milliseconds(500)
                if next > ContinuousClock.now { try await Task.sleep(until: next) }
            }
        }

        /// Work done after every reload: start the recorder, check HTTP semantics once, schedule retention fetches.
        private func afterPoll() async throws {
            let counts = names.map { watcher.trackers[$0]?.msns.count ?? 0 }
            if recorder == nil, counts.allSatisfy({ $0 >= 3 }) {
                recorder = try FFmpeg.startRecorder(
                    url: "\(origin.baseURL)/live/e2e/index.m3u8", seconds: 15, output: recording,
                    directory: origin.directory, label: "recorder")
            }
            if !semanticsChecked, counts.allSatisfy({ $0 >= 2 }), let tracker = watcher.trackers["720p"],
                let msn = tracker.msns.last(where: { !tracker.entries[$0]!.gap })
            {
                semanticsChecked = true
                try await checkHTTPSemantics(segment: msn)
            }
            scheduleRetentionFetches()
        }

        private func checkHTTPSemantics(segment msn: UInt64) async throws {
            try await http.checkPlaylist("/live/e2e/720p/index.m3u8")
            try await http.checkPlaylist("/live/e2e/index.m3u8")
            try await http.checkSegment("/live/e2e/720p/\(msn).ts")
            try await http.checkNotFound("/live/nope/index.m3u8")
            try await http.checkNotFound("/live/e2e/nope/index.m3u8")
            try await http.checkNotFound("/live/e2e/720p/99999999.ts")
            try await http.checkNotFound("/live/e2e/720p/\(msn + 1000).ts")
            try await http.checkNotFound("/live/e2e/720p/nope.ts")
        }

        /// Every segment that left the window is fetched again just before its duration plus the window's has
        /// passed since the last reload that listed it.
        private func scheduleRetentionFetches() {
            for rendition in names {
                guard let tracker = watcher.trackers[rendition], let head = tracker.mediaSequence else { continue }
                for msn in tracker.msns where msn < head && !tracker.entries[msn]!.gap {
                    let key = "\(rendition)/\(msn)"
                    guard retention[key] == nil, let listed = tracker.lastListed[msn],
                        let window = tracker.windowWhenLastListed[msn]
                    else { continue }
                    let duration = Double(tracker.entries[msn]!.durationMilliseconds) / 1000
                    let due = listed + duration + Double(window) / 1000
                    retention[key] = PushTests.RetentionCheck(rendition: rendition, msn: msn, due: due)
                    retentionTasks.append(
                        retentionLog.fetch(
                            client: client, path: "/live/e2e/\(rendition)/\(msn).ts", key: key,
                            at: watcher.instant(due - 0.1)))
                }
            }
        }

        /// Kills the encoder, reads on for `pause`, starts a second encoder.
        func restartEncoder(after pause: Duration) async throws -> Restart {
            encoder.signal(SIGKILL)
            let killedAt = watcher.now
            _ = await encoder.wait(timeout: .seconds(5))
            try await watcher.poll()
            let lastAtKill = Dictionary(uniqueKeysWithValues: names.map { ($0, watcher.trackers[$0]?.lastMSN ?? 0) })
            try await watch(for: pause)
            try startEncoder(label: "encoder-2")
            return Restart(killedAt: killedAt, restartedAt: watcher.now, lastAtKill: lastAtKill)
        }

        /// Both renditions joined after the restart and listed three more segments, the recorder is done, and at
        /// least two retention fetches came back.
        func isDone(after restart: Restart) -> Bool {
            func joined(_ rendition: String) -> Bool {
                guard let tracker = watcher.trackers[rendition], let last = tracker.lastMSN else { return false }
                guard
                    let join = tracker.msns.first(where: {
                        $0 > restart.lastAtKill[rendition]! && !tracker.entries[$0]!.gap
                    })
                else { return false }
                return last >= join + 3
            }
            return names.allSatisfy(joined) && !(recorder?.isRunning ?? true) && retentionLog.count >= 2
        }

        /// Stops the encoder, waits for the recorder (returns its status), ends the retention fetches.
        func stopEncoderRecorderAndFetches() async -> Int32? {
            encoder.signal(SIGKILL)
            let recorderStatus = await recorder?.wait(timeout: .seconds(10))
            recorder?.signal(SIGKILL)
            for task in retentionTasks { task.cancel() }
            for task in retentionTasks { await task.value }
            return recorderStatus
        }

        /// Retention fetches that did not answer 200 with the bytes the segment had while listed.
        func retentionProblems(_ fetches: [RetentionLog.Fetch]) -> [String] {
            var problems: [String] = []
            for fetch in fetches {
                let parts = fetch.key.split(separator: "/")
                if fetch.status != 200 {
                    problems.append(
                        "\(fetch.key) left the window and answered \(fetch.status) (\(fetch.text)) before its "
                            + "duration "
                            + "plus the window's had passed since the last reload that listed it")
                } else if watcher.verifier.bytes(String(parts[0]), UInt64(parts[1])!) != fetch.body {
                    problems.append("\(fetch.key): the bytes changed after it left the window")
                }
            }
            return problems
        }
    }
}
