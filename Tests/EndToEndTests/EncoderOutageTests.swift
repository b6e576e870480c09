import Foundation
import Glibc
import HLSPlaylist
import Synchronization
import TestSupport
import Testing

/// Polls a channel's admin status every 200 ms in a task of its own and writes down each change of a rendition's
/// accepted segments or GAP entries with the drift at that moment (the arrival of the newest segment minus the end of
/// its slot): when a GAP shows up where an encoder was pushing, this says how close to its deadline it came.
final class ChannelStatusLog: Sendable {
    private let lines = Mutex<[String]>([])
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(client: HTTPClient, channel: String) {
        start(client: client, channel: channel)
    }

    private func start(client: HTTPClient, channel: String) {
        let start = ContinuousClock.now
        let started = Task { [self] in
            var last: [String: String] = [:]
            while !Task.isCancelled {
                if let response = try? await client.get("/admin/channels/\(channel)"), response.status == 200,
                    let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
                    let renditions = object["renditions"] as? [[String: Any]]
                {
                    for rendition in renditions {
                        let name = rendition["name"] as? String ?? "?"
                        let key =
                            "accepted=\(rendition["segmentsAccepted"] ?? "?") gaps=\(rendition["gapsWritten"] ?? "?")"
                        guard last[name] != key else { continue }
                        last[name] = key
                        let at = (ContinuousClock.now - start).seconds
                        let line =
                            String(format: "%.1f ", at)
                            + "\(name) \(key) drift=\(rendition["driftMilliseconds"] ?? "?")"
                        self.lines.withLock { $0.append(line) }
                    }
                }
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
        task.withLock { $0 = started }
    }

    /// Stops polling; returns what was written down.
    func finish() async -> [String] {
        let running = task.withLock { $0 }
        running?.cancel()
        await running?.value
        return lines.withLock { $0 }
    }
}

extension EndToEndRestarts {
    /// A real ffmpeg pushes two renditions; it is killed for 12 s and started again. GAP entries
    /// cover the outage in both renditions on the PDT timeline, the playlists never go stale, the join carries a
    /// discontinuity, a real ffmpeg reader plays through it; then the origin itself is killed with SIGKILL and
    /// restarted on the same port: MSNs continue, PDT stays monotonic.
    @Suite("End to end: encoder outage and origin restart", .tags(.endToEnd))
    struct EncoderOutageTests {
        static let channel = "e2e"

        static func configuration(gapResponse: String) -> String {
            PushedChannelConfiguration.yaml(
                channel: channel, renditions: names, channelKeys: ["gapResponse: \(gapResponse)"])
        }

        static let renditions = [
            FFmpeg.PushedRendition(name: "hi", width: 640, height: 360, videoBitrate: "600k"),
            FFmpeg.PushedRendition(name: "lo", width: 320, height: 180, videoBitrate: "200k"),
        ]
        static let names = renditions.map(\.name)
        static let outageSeconds = 12

        @Test("filler: GAP timing, never stale, discontinuity at the join, ffmpeg reads through, SIGKILL restart")
        func encoderOutageWithFiller() async throws {
            let port = try OriginProcess.freePort()
            let configuration = Self.configuration(gapResponse: "filler")
            let origin = try await OriginProcess(configuration: configuration, label: "outage-filler", port: port)
            var encoders: [ChildProcess] = []
            var restarted: OriginProcess?
            do {
                try await Self.filler(origin: origin, port: port, configuration: configuration, encoders: &encoders) {
                    restarted = $0
                }
            } catch {
                for encoder in encoders { encoder.signal(SIGKILL) }
                origin.kill()
                restarted?.kill()
                throw EndToEndError(
                    "\(error)\n--- hlsorigin log tail (\(origin.directory.path)) ---\n\(origin.logTail())")
            }
            for encoder in encoders { encoder.signal(SIGKILL) }
            let status = await restarted?.stop()
            #expect(status == 0, "the restarted origin did not exit cleanly: \(restarted?.logTail() ?? "")")
        }

        @Test("notFound: GAP URLs answer 404, GAP timing, never stale, discontinuity at the join")
        func encoderOutageWithNotFound() async throws {
            try await OriginProcess.withRunning(
                configuration: Self.configuration(gapResponse: "notFound"), label: "outage-404"
            ) { origin in
                var encoders: [ChildProcess] = []
                defer { for encoder in encoders { encoder.signal(SIGKILL) } }
                let client = HTTPClient(port: origin.port)
                let watcher = LiveStreamWatcher(
                    client: client, channel: Self.channel, renditions: Self.names, directory: origin.directory,
                    probeEvery: 2, gapAnswer: .notFound)
                let statusLog = ChannelStatusLog(client: client, channel: Self.channel)
                let outage = try await Self.runOutage(
                    origin: origin, watcher: watcher, encoders: &encoders, reader: nil)
                let statusLines = await statusLog.finish()
                let violations = await watcher.finish()
                #expect(
                    violations.isEmpty,
                    "\(violations.count) problems:\n\(violations.prefix(40).joined(separator: "\n"))")
                _ = try Self.checkOutage(watcher: watcher, outage: outage)
                let gapCount = Self.allGaps(watcher)
                #expect(watcher.gapsAnswered404 == gapCount, "\(watcher.gapsAnswered404) of \(gapCount) GAP URLs 404")
                print(
                    "encoder outage (GAP URLs 404): \(Self.report(watcher: watcher, outage: outage, gaps: gapCount))\n"
                        + "status changes:\n\(statusLines.joined(separator: "\n"))")
            }
        }

        /// The filler scenario, up to and including the restarted origin's checks.
        private static func filler(
            origin: OriginProcess, port: Int, configuration: String, encoders: inout [ChildProcess],
            restartedOrigin: (OriginProcess) -> Void
        ) async throws {
            let client = HTTPClient(port: port)
            let watcher = LiveStreamWatcher(
                client: client, channel: channel, renditions: names, directory: origin.directory, probeEvery: 1,
                gapAnswer: .filler)
            let wallStart = Date().timeIntervalSince1970
            let statusLog = ChannelStatusLog(client: client, channel: channel)
            let recording = origin.directory.appendingPathComponent("reader.ts")
            var reader: ChildProcess?
            let outage = try await runOutage(origin: origin, watcher: watcher, encoders: &encoders) {
                let child = try FFmpeg.startRecorder(
                    url: "\(origin.baseURL)/live/\(channel)/index.m3u8", seconds: 30, output: recording,
                    directory: origin.directory, label: "reader", logLevel: "warning")
                reader = child
                return child
            }
            let reader_ = try #require(reader)
            let readerStatus = await reader_.wait(timeout: .seconds(30))
            reader_.signal(SIGKILL)
            let violations = await watcher.finish()
            let statusLines = await statusLog.finish()
            #expect(
                violations.isEmpty, "\(violations.count) problems:\n\(violations.prefix(40).joined(separator: "\n"))")
            _ = try checkOutage(watcher: watcher, outage: outage)
            let gapCount = allGaps(watcher)

            // Filler: every GAP URL answered a segment that ffprobe decodes (the verifier checked each one).
            #expect(watcher.gapsSentForFiller == gapCount)
            let fillersDecoded = try expectEveryFillerDecoded(watcher: watcher, gapCount: gapCount)

            // The reader played through the outage without a failed fetch.
            #expect(readerStatus == 0, "ffmpeg reader: status \(String(describing: readerStatus))")
            let readerLog = reader_.standardError
            let failures = readerLog.split(separator: "\n").filter {
                $0.contains("HTTP error") || $0.contains("Failed to open segment")
            }
            #expect(failures.isEmpty, "ffmpeg reader logged failed fetches:\n\(failures.joined(separator: "\n"))")
            let (recorded, probeErrors) = try await FFmpeg.formatDuration(of: recording, in: origin.directory)
            #expect(probeErrors.isEmpty, "ffprobe of the reader's recording: \(probeErrors)")

            let edge = edgeError(watcher: watcher, wallStart: wallStart)
            print(
                "encoder outage (GAP URLs served with filler): "
                    + "\(report(watcher: watcher, outage: outage, gaps: gapCount)), \(fillersDecoded) fillers decoded, "
                    + "reader recorded \(String(format: "%.1f", recorded)) s, reader log "
                    + "\(readerLog.split(separator: "\n").count) lines (warning level), \(edge)\nstatus changes:\n"
                    + statusLines.joined(separator: "\n"))

            try await restartAndExpectContinuity(
                origin: origin, port: port, configuration: configuration, watcher: watcher, encoders: &encoders,
                restartedOrigin: restartedOrigin)
        }

        /// Every GAP entry's filler segment decoded with video and audio; returns how many did.
        static func expectEveryFillerDecoded(watcher: LiveStreamWatcher, gapCount: Int) throws -> Int {
            var fillersDecoded = 0
            for rendition in names {
                let tracker = try #require(watcher.trackers[rendition])
                let results = watcher.verifier.results(rendition)
                for msn in tracker.msns where tracker.entries[msn]!.gap {
                    if let probe = results[msn]?.probe, probe.video != nil, probe.audio != nil { fillersDecoded += 1 }
                }
            }
            #expect(fillersDecoded == gapCount, "\(fillersDecoded) of \(gapCount) filler segments decoded")
            return fillersDecoded
        }

        /// kill -9 and restart on the same port with the same data directory: the restarted origin lists segments
        /// again, MSNs go on with a discontinuity, PDT does not go back.
        private static func restartAndExpectContinuity(
            origin: OriginProcess, port: Int, configuration: String, watcher: LiveStreamWatcher,
            encoders: inout [ChildProcess], restartedOrigin: (OriginProcess) -> Void
        ) async throws {
            // Read just before the kill: the watcher's last reload can be many seconds old by now (the verifier drained
            // its backlog, ffprobe read the recording), and the encoder pushed on meanwhile.
            let lastBefore = try await newestListed(port: port)
            origin.kill()
            _ = await origin.child.wait(timeout: .seconds(5))
            let killedAt = ContinuousClock.now
            let restarted = try await OriginProcess(
                configuration: configuration, label: "restarted", port: port, restarting: origin.directory)
            restartedOrigin(restarted)
            let bindTime = (ContinuousClock.now - killedAt).seconds
            let after = LiveStreamWatcher(
                client: HTTPClient(port: port), channel: channel, renditions: names, directory: origin.directory,
                probeEvery: 2, gapAnswer: .filler)
            let afterWallStart = Date().timeIntervalSince1970
            // What the restarted origin lists before any encoder reaches it (or just after): the restored window.
            try await after.poll()
            let restoredThrough = names.reduce(into: [String: UInt64]()) { $0[$1] = after.trackers[$1]?.lastMSN }
            let restartedEncoder = try await watchUntilThreeSegmentsEach(
                after, above: lastBefore.mapValues(\.msn), port: port, directory: origin.directory,
                encoders: &encoders)
            let afterViolations = await after.finish()
            #expect(
                afterViolations.isEmpty,
                Comment(
                    rawValue: "after the restart, \(afterViolations.count) problems:\n"
                        + afterViolations.prefix(40).joined(separator: "\n")))
            #expect(after.sameMSNs().isEmpty, "\(after.sameMSNs())")
            #expect(after.discontinuitySequenceAlignment().isEmpty, "\(after.discontinuitySequenceAlignment())")
            let firstAfter = try expectContinuityAcrossTheRestart(
                after: after, lastBefore: lastBefore, restoredThrough: restoredThrough)
            print(
                "origin restart: bound the same port \(String(format: "%.2f", bindTime)) s after SIGKILL, last "
                    + "MSN before \(names.map { lastBefore[$0]!.msn }), first after \(firstAfter), "
                    + "encoder restarted: \(restartedEncoder), "
                    + "\(edgeError(watcher: after, wallStart: afterWallStart))")
        }

        /// The newest entry each rendition's media playlist lists now.
        static func newestListed(port: Int) async throws -> [String: RenditionTracker.Entry] {
            let client = HTTPClient(port: port)
            var newest: [String: RenditionTracker.Entry] = [:]
            for rendition in names {
                let response = try await client.get("/live/\(channel)/\(rendition)/index.m3u8")
                guard response.status == 200 else {
                    throw EndToEndError("\(rendition) playlist before the kill: \(response.status) \(response.text)")
                }
                var tracker = RenditionTracker(name: rendition)
                tracker.observe(try MediaPlaylist.parse(response.text), text: response.text, sent: 0, received: 0)
                newest[rendition] = try #require(tracker.lastMSN.flatMap { tracker.entries[$0] })
            }
            return newest
        }

        /// Polls the restarted origin every 250 ms (at most 30 s) until each rendition lists three segments above the
        /// MSN in `above` (the last one before the kill: a restored window lists older ones at once); starts a new
        /// encoder once if the old one gave up. Returns whether it did.
        static func watchUntilThreeSegmentsEach(
            _ after: LiveStreamWatcher, above: [String: UInt64], port: Int, directory: URL,
            encoders: inout [ChildProcess]
        ) async throws -> Bool {
            var restartedEncoder = false
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                let started = ContinuousClock.now
                try await after.poll()
                if !restartedEncoder, let encoder = encoders.last, !encoder.isRunning {
                    // ffmpeg's HLS muxer gives up when its PUT fails: a new encoder, as an operator would start.
                    restartedEncoder = true
                    encoders.append(
                        try FFmpeg.startPush(
                            port: port, channel: channel, renditions: renditions, directory: directory,
                            label: "encoder-3"))
                }
                let done = names.allSatisfy { name in
                    guard let tracker = after.trackers[name] else { return false }
                    let floor = above[name] ?? 0
                    return tracker.msns.filter { $0 > floor && !tracker.entries[$0]!.gap }.count >= 3
                }
                if done { break }
                try await Task.sleep(until: started + .milliseconds(250))
            }
            return restartedEncoder
        }

        /// Each rendition goes on across the restart: its first new MSN does not start before the last one before the
        /// kill ended on the PDT timeline (a restored window covers the downtime with GAP entries; without one, MSNs
        /// and PDT jump ahead), the first segment the restarted origin accepted carries a discontinuity, and three
        /// segments follow the kill. Returns the first new MSN after the restart per rendition.
        ///
        /// Which segment the restarted origin accepted first is not exactly visible from outside: the old origin can
        /// list one more (continuous, rightly without a discontinuity) between the last reload and the kill, and the
        /// restored window lists it; an encoder can push before the restarted origin's first reload
        /// (`restoredThrough`, its newest MSN then). So the discontinuity is looked for from the first segment after
        /// the last one seen before the kill up to the first segment above `restoredThrough`: segments the old
        /// origin accepted in between continue the media and carry none, so it is the restarted origin's.
        static func expectContinuityAcrossTheRestart(
            after: LiveStreamWatcher, lastBefore: [String: RenditionTracker.Entry], restoredThrough: [String: UInt64]
        ) throws -> [UInt64] {
            var firstAfter: [UInt64] = []
            for rendition in names {
                let tracker = try #require(after.trackers[rendition])
                let previous = try #require(lastBefore[rendition])
                let newer = tracker.msns.filter { $0 > previous.msn }
                let first = try #require(newer.first, "\(rendition): nothing new listed after the restart")
                firstAfter.append(first)
                let entry = tracker.entries[first]!
                let segments = newer.filter { !tracker.entries[$0]!.gap }
                let restored = max(restoredThrough[rendition] ?? previous.msn, previous.msn)
                let firstNew = try #require(
                    segments.first { $0 > restored }, "\(rendition): no segment above the restored MSN \(restored)")
                let join = segments.filter { $0 <= firstNew }
                #expect(
                    join.contains { tracker.entries[$0]!.discontinuity },
                    Comment(
                        rawValue: "\(rendition): no discontinuity in the segments \(join) after the restart (last MSN "
                            + "before the kill \(previous.msn), newest listed at the first reload \(restored))"))
                let before = try #require(previous.programDateTimeMilliseconds)
                let now = try #require(entry.programDateTimeMilliseconds)
                #expect(
                    now >= before + previous.durationMilliseconds,
                    Comment(
                        rawValue: "\(rendition): PDT went back across the restart: MSN \(previous.msn) ends at "
                            + "\(before + previous.durationMilliseconds) ms, MSN \(first) starts at \(now) ms"))
                #expect(segments.count >= 3, "\(rendition): fewer than 3 segments within 30 s of the restart")
            }
            return firstAfter
        }

        /// What `runOutage` saw.
        struct Outage {
            var lastAtKill: [String: UInt64]
            var killedAt: Double
            var restartedAt: Double
            var targetDuration: Double
        }

        /// Starts the encoder, waits for three segments per rendition, starts `reader` (if any), kills the encoder
        /// for 12 s, starts it again and reads on until both renditions listed three segments after the join.
        private static func runOutage(
            origin: OriginProcess, watcher: LiveStreamWatcher, encoders: inout [ChildProcess],
            reader: (() throws -> ChildProcess)?
        ) async throws -> Outage {
            let interval = Duration.milliseconds(200)
            encoders.append(
                try FFmpeg.startPush(
                    port: origin.port, channel: channel, renditions: renditions, directory: origin.directory,
                    label: "encoder-1"))
            try await watcher.watch(for: .seconds(30), interval: interval) {
                names.allSatisfy { (watcher.trackers[$0]?.msns.count ?? 0) >= 3 }
            }
            guard names.allSatisfy({ (watcher.trackers[$0]?.msns.count ?? 0) >= 3 }) else {
                throw EndToEndError("no three segments per rendition within 30 s: \(encoders[0].standardError)")
            }
            let readerChild = try reader?()
            try await watcher.watch(for: .seconds(2), interval: interval)
            let encoderErrors = encoders[0].standardError
            #expect(encoderErrors.isEmpty, "encoder 1 said: \(encoderErrors)")

            encoders[0].signal(SIGKILL)
            let killedAt = watcher.now
            try await watcher.poll()
            let lastAtKill = Dictionary(
                uniqueKeysWithValues: names.map { ($0, watcher.trackers[$0]?.lastMSN ?? 0) })
            try await watcher.watch(
                for: .seconds(outageSeconds) - .milliseconds(Int64((watcher.now - killedAt) * 1000)))
            encoders.append(
                try FFmpeg.startPush(
                    port: origin.port, channel: channel, renditions: renditions, directory: origin.directory,
                    label: "encoder-2"))
            let restartedAt = watcher.now
            func joined(_ rendition: String) -> Bool {
                guard let tracker = watcher.trackers[rendition], let last = tracker.lastMSN,
                    let gap = tracker.msns.first(where: { $0 > lastAtKill[rendition]! && tracker.entries[$0]!.gap }),
                    let join = tracker.msns.first(where: { $0 > gap && !tracker.entries[$0]!.gap })
                else { return false }
                return last >= join + 3
            }
            try await watcher.watch(for: .seconds(30), interval: interval) {
                names.allSatisfy(joined) && !(readerChild?.isRunning ?? false)
            }
            let targetDuration = Double(watcher.trackers[names[0]]?.targetDuration ?? 0)
            return Outage(
                lastAtKill: lastAtKill, killedAt: killedAt, restartedAt: restartedAt, targetDuration: targetDuration)
        }

        /// GAP entries seen in every rendition.
        static func allGaps(_ watcher: LiveStreamWatcher) -> Int {
            watcher.trackers.values.map { tracker in tracker.entries.values.filter(\.gap).count }.reduce(0, +)
        }

        /// The acceptance checks of the outage; returns the number of GAP entries (both renditions).
        private static func checkOutage(watcher: LiveStreamWatcher, outage: Outage) throws -> Int {
            #expect(watcher.sameMSNs().isEmpty, "\(watcher.sameMSNs())")
            #expect(watcher.discontinuitySequenceAlignment().isEmpty, "\(watcher.discontinuitySequenceAlignment())")
            #expect(outage.targetDuration == 2)
            var gapCount = 0
            for rendition in names {
                let tracker = try #require(watcher.trackers[rendition])
                let killMSN = outage.lastAtKill[rendition]!
                let after = tracker.msns.filter { $0 > killMSN }
                let firstGap = try #require(
                    after.first { tracker.entries[$0]!.gap }, "\(rendition): no GAP entry for the outage")
                let join = try #require(
                    after.first { $0 > firstGap && !tracker.entries[$0]!.gap },
                    "\(rendition): no segment after the outage")
                let gaps = after.filter { $0 >= firstGap && $0 < join }
                // Within 1.5 target durations of the drop (the last reload that did not list it was sent then).
                let appeared = (tracker.appearedAfter[firstGap] ?? 0) - outage.killedAt
                #expect(
                    appeared <= 1.5 * outage.targetDuration,
                    "\(rendition): first GAP (MSN \(firstGap)) appeared \(appeared) s or more after the kill")
                // One per slot: consecutive MSNs up to the join, each one slot long.
                #expect(
                    gaps == Array(firstGap..<join) && gaps.allSatisfy { tracker.entries[$0]!.gap },
                    "\(rendition): GAP MSNs \(gaps), join at \(join)")
                #expect(gaps.allSatisfy { tracker.entries[$0]!.durationMilliseconds == 2000 }, "\(rendition)")
                #expect(
                    gaps.count >= outageSeconds / 2 - 1,
                    "\(rendition): \(gaps.count) GAP entries for a \(outageSeconds) s outage")
                let entry = tracker.entries[join]!
                #expect(entry.discontinuity, "\(rendition): the join at MSN \(join) has no EXT-X-DISCONTINUITY")
                #expect(
                    tracker.maxStalenessLowerBound <= 1.5 * outage.targetDuration,
                    "\(rendition): went at least \(tracker.maxStalenessLowerBound) s without a new entry")
                gapCount += gaps.count
                // After the join the encoder pushes in real time again: one join, no GAP or discontinuity after it.
                // Known origin issue: a resumed feed keeps the channel's slot grid, so its segments arrive anywhere
                // from 1 s before to just under 1 s after their slot's end (the deadline is end + 1 s); near the
                // deadline, the next segment's jitter makes it miss its slot: a GAP and a second discontinuity one
                // slot after the join. Seen in 2 of 6 runs; the check runs and reports it as a known issue.
                let afterJoin = tracker.msns.filter { $0 > join }
                let relapses = afterJoin.filter { tracker.entries[$0]!.gap || tracker.entries[$0]!.discontinuity }
                // A resumed feed re-anchors its slot on the clock, so it keeps its margin to the next deadlines.
                #expect(
                    relapses.isEmpty, "\(rendition): GAP or discontinuity at \(relapses) after the join at MSN \(join)")
            }
            return gapCount
        }

        private static func report(watcher: LiveStreamWatcher, outage: Outage, gaps: Int) -> String {
            let parts = names.map { name -> String in
                let tracker = watcher.trackers[name]!
                let gapMSNs = tracker.msns.filter { tracker.entries[$0]!.gap }
                let firstGap = gapMSNs.first.map { tracker.appearedAfter[$0]! - outage.killedAt } ?? -1
                let discontinuities = tracker.msns.filter { tracker.entries[$0]!.discontinuity }
                return "\(name): MSNs \(tracker.msns.first ?? 0)...\(tracker.lastMSN ?? 0), GAP \(gapMSNs), first GAP "
                    + String(format: "%.2f", firstGap) + " s after the kill (lower bound), discontinuities at "
                    + "\(discontinuities), worst staleness in ["
                    + String(format: "%.2f", tracker.maxStalenessLowerBound)
                    + ", " + String(format: "%.2f", tracker.maxStalenessUpperBound) + "] s"
            }
            return parts.joined(separator: "; ") + "; \(gaps) GAP entries, killed at "
                + String(format: "%.1f", outage.killedAt) + " s, encoder restarted at "
                + String(format: "%.1f", outage.restartedAt) + " s, \(watcher.verifier.downloaded) segments downloaded"
        }

        /// The live edge against the clock: for every entry that appeared while the watcher read (not the ones of
        /// its first reload), the wall clock when it first appeared minus the end of the entry on the PDT timeline.
        /// The appearance lies between the last reload that did not list it and the first that did; the figure per
        /// entry is the middle of that interval. Segments and GAP entries apart (a GAP is written at its deadline).
        static func edgeError(watcher: LiveStreamWatcher, wallStart: Double) -> String {
            var figures: [Bool: [(msn: UInt64, low: Double, high: Double)]] = [:]
            guard let name = watcher.renditions.first, let tracker = watcher.trackers[name] else { return "" }
            for msn in tracker.msns {
                guard let after = tracker.appearedAfter[msn], after > 0, let seen = tracker.firstSeen[msn],
                    let entry = tracker.entries[msn], let pdt = entry.programDateTimeMilliseconds
                else { continue }
                let end = Double(pdt + entry.durationMilliseconds) / 1000
                figures[entry.gap, default: []].append((msn, wallStart + after - end, wallStart + seen - end))
            }
            func describe(_ list: [(msn: UInt64, low: Double, high: Double)]) -> String {
                guard let low = list.map(\.low).min(), let high = list.map(\.high).max() else { return "none" }
                let each = list.map { "\($0.msn):" + String(format: "%+.2f", ($0.low + $0.high) / 2) }
                return "[" + String(format: "%+.3f", low) + ", " + String(format: "%+.3f", high) + "] s over "
                    + "\(list.count) (" + each.joined(separator: " ") + ")"
            }
            return "PDT-versus-clock error of the live edge in \(name) (wall clock at first appearance minus end PDT): "
                + "segments \(describe(figures[false] ?? [])), GAP entries \(describe(figures[true] ?? []))"
        }
    }
}
