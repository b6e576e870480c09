import Foundation
import HLSPlaylist
import Synchronization
import Testing

import Glibc

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
    /// Issue 2: a real ffmpeg pushes two renditions over HTTP PUT to an origin that creates the channel on the first
    /// push; a polling reader checks every playlist rule, every segment and the HTTP answers; the encoder is killed and
    /// restarted; a second reader records 15 s with ffmpeg.
    @Suite("End to end: ffmpeg pushes two renditions")
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
                let client = HTTPClient(port: origin.port)
                let names = Self.renditions.map(\.name)
                let watcher = LiveStreamWatcher(
                    client: client, channel: "e2e", renditions: names, directory: origin.directory, gapAnswer: .filler)
                var http = HTTPSemanticsCheck(client: client, directory: origin.directory)
                try await http.checkNotFound("/live/e2e/index.m3u8")  // no channel before the first push

                var encoder = try FFmpeg.startPush(
                    port: origin.port, channel: "e2e", renditions: Self.renditions, directory: origin.directory,
                    label: "encoder-1")
                var encoders = [encoder]
                defer { for encoder in encoders { encoder.signal(SIGKILL) } }
                var recorder: ChildProcess?
                let recording = origin.directory.appendingPathComponent("out.ts")
                var semanticsChecked = false
                var retention: [String: RetentionCheck] = [:]
                let retentionLog = RetentionLog()
                var retentionTasks: [Task<Void, Never>] = []

                /// Work done after every reload: start the recorder, check HTTP semantics once, schedule and perform
                /// retention fetches.
                func afterPoll() async throws {
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
                        try await http.checkPlaylist("/live/e2e/720p/index.m3u8")
                        try await http.checkPlaylist("/live/e2e/index.m3u8")
                        try await http.checkSegment("/live/e2e/720p/\(msn).ts")
                        try await http.checkNotFound("/live/nope/index.m3u8")
                        try await http.checkNotFound("/live/e2e/nope/index.m3u8")
                        try await http.checkNotFound("/live/e2e/720p/99999999.ts")
                        try await http.checkNotFound("/live/e2e/720p/\(msn + 1000).ts")
                        try await http.checkNotFound("/live/e2e/720p/nope.ts")
                    }
                    for rendition in names {
                        guard let tracker = watcher.trackers[rendition], let head = tracker.mediaSequence else {
                            continue
                        }
                        for msn in tracker.msns where msn < head && !tracker.entries[msn]!.gap {
                            let key = "\(rendition)/\(msn)"
                            guard retention[key] == nil, let listed = tracker.lastListed[msn],
                                let window = tracker.windowWhenLastListed[msn]
                            else { continue }
                            let duration = Double(tracker.entries[msn]!.durationMilliseconds) / 1000
                            let due = listed + duration + Double(window) / 1000
                            retention[key] = RetentionCheck(rendition: rendition, msn: msn, due: due)
                            retentionTasks.append(
                                retentionLog.fetch(
                                    client: client, path: "/live/e2e/\(rendition)/\(msn).ts", key: key,
                                    at: watcher.instant(due - 0.1)))
                        }
                    }
                }

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

                // Phase 1: 24 s of pushing.
                try await watch(for: .seconds(24))
                let firstEncoderErrors = encoder.standardError
                #expect(encoder.isRunning, "encoder exited early: \(firstEncoderErrors)")
                let multivariant = watcher.lastMultivariant

                // Kill the encoder, wait 3 s (reading on), restart it.
                encoder.signal(SIGKILL)
                let killedAt = watcher.now
                _ = await encoder.wait(timeout: .seconds(5))
                try await watcher.poll()
                let lastAtKill = Dictionary(
                    uniqueKeysWithValues: names.map { ($0, watcher.trackers[$0]?.lastMSN ?? 0) })
                try await watch(for: .seconds(3))
                encoder = try FFmpeg.startPush(
                    port: origin.port, channel: "e2e", renditions: Self.renditions, directory: origin.directory,
                    label: "encoder-2")
                let restartedAt = watcher.now
                encoders.append(encoder)

                // Phase 2: until both renditions joined and listed three more segments, and the recorder is done.
                func joined(_ rendition: String) -> Bool {
                    guard let tracker = watcher.trackers[rendition], let last = tracker.lastMSN else { return false }
                    guard
                        let join = tracker.msns.first(where: {
                            $0 > lastAtKill[rendition]! && !tracker.entries[$0]!.gap
                        })
                    else { return false }
                    return last >= join + 3
                }
                try await watch(for: .seconds(40)) {
                    names.allSatisfy(joined) && !(recorder?.isRunning ?? true) && retentionLog.count >= 2
                }
                let secondEncoderErrors = encoder.standardError
                encoder.signal(SIGKILL)
                let recorderStatus = await recorder?.wait(timeout: .seconds(10))
                recorder?.signal(SIGKILL)
                for task in retentionTasks { task.cancel() }
                for task in retentionTasks { await task.value }
                let violations = await watcher.finish()
                var retentionProblems: [String] = []
                let retentionFetches = retentionLog.fetches
                for fetch in retentionFetches {
                    let parts = fetch.key.split(separator: "/")
                    if fetch.status != 200 {
                        retentionProblems.append(
                            "\(fetch.key) left the window and answered \(fetch.status) (\(fetch.text)) before its "
                                + "duration "
                                + "plus the window's had passed since the last reload that listed it")
                    } else if watcher.verifier.bytes(String(parts[0]), UInt64(parts[1])!) != fetch.body {
                        retentionProblems.append("\(fetch.key): the bytes changed after it left the window")
                    }
                }

                // Playlists, segments, timestamps, alignment.
                #expect(
                    violations.isEmpty,
                    "\(violations.count) problems:\n\(violations.prefix(40).joined(separator: "\n"))")
                #expect(watcher.sameMSNs().isEmpty, "\(watcher.sameMSNs())")
                #expect(watcher.discontinuitySequenceAlignment().isEmpty, "\(watcher.discontinuitySequenceAlignment())")
                #expect(http.problems.isEmpty, "HTTP semantics:\n\(http.problems.joined(separator: "\n"))")
                #expect(semanticsChecked)
                #expect(retentionProblems.isEmpty, "\(retentionProblems.joined(separator: "\n"))")
                #expect(retentionFetches.count >= 2, "only \(retentionFetches.count) removed segments fetched again")
                #expect(firstEncoderErrors.isEmpty, "encoder 1 said: \(firstEncoderErrors)")
                #expect(secondEncoderErrors.isEmpty, "encoder 2 said: \(secondEncoderErrors)")

                // Multivariant playlist.
                let variants = try #require(multivariant?.variants, "no multivariant playlist")
                #expect(
                    Set(variants.map(\.uri)) == Set(names.map { "\($0)/index.m3u8" }) && variants.count == names.count,
                    "\(watcher.lastMultivariantText)")
                for pushed in Self.renditions {
                    let variant = try #require(variants.first { $0.uri == "\(pushed.name)/index.m3u8" })
                    #expect(variant.bandwidth > 0)
                    #expect((variant.averageBandwidth ?? 0) > 0 && (variant.averageBandwidth ?? 0) <= variant.bandwidth)
                    #expect(variant.codecs.count == 2 && variant.codecs.contains { $0.hasPrefix("avc1.") })
                    #expect(variant.codecs.contains("mp4a.40.2"), "\(variant.codecs)")
                    #expect(variant.resolution == Resolution(width: pushed.width, height: pushed.height))
                    #expect(variant.frameRate == 25)
                }

                // The encoder restart: MSNs go on, GAP entries (filler, with EXTINF and a URI) cover the outage, the join
                // carries EXT-X-DISCONTINUITY.
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

                // The recording.
                let recorded = try #require(recorder)
                #expect(
                    recorderStatus == 0,
                    "recorder: status \(String(describing: recorderStatus)), \(recorded.standardError)")
                #expect(recorded.standardError.isEmpty, "recorder said: \(recorded.standardError)")
                let (duration, probeErrors) = try await FFmpeg.formatDuration(of: recording, in: origin.directory)
                #expect(abs(duration - 15) <= 1, "recording lasts \(duration) s")
                #expect(probeErrors.isEmpty, "ffprobe of the recording: \(probeErrors)")
                try? FileManager.default.removeItem(at: recording)

                let segments = names.map { watcher.trackers[$0]!.msns.count }.reduce(0, +)
                print(
                    "push: \(segments) entries seen (\(gapCount) GAP), "
                        + "\(watcher.verifier.downloaded) segments downloaded, "
                        + "\(watcher.verifier.probed) decoded, "
                        + "\(names.map { watcher.continuityPairs($0) }) continuity pairs, "
                        + "\(retentionFetches.count) retention fetches, \(http.checks) HTTP checks, "
                        + "\(client.counter.value) requests, recording \(duration) s, MSN at kill \(lastAtKill), "
                        + "last MSN \(names.map { watcher.trackers[$0]!.lastMSN ?? 0 }), "
                        + "staleness <= \(names.map { watcher.trackers[$0]!.maxStalenessUpperBound }) s, "
                        + "killed at \(killedAt) s, restarted at \(restartedAt) s, join first seen at "
                        + "\(names.map { name in joinSeen[name].map { String(format: "%.1f", $0) } ?? "-" }) s")
            }
        }
    }
}
