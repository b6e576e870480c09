import Foundation
import HLSPlaylist
import TestSupport

/// Reloads a channel's multivariant and media playlists like a player does, tracks every rendition with a
/// `RenditionTracker`, hands new segments to a `SegmentVerifier`, checks what GAP URIs answer (404, or a filler
/// segment that the verifier decodes like any other), and afterwards
/// checks media timestamps across consecutive segments and alignment across renditions.
final class LiveStreamWatcher {
    let client: HTTPClient
    let channel: String
    let renditions: [String]
    let verifier: SegmentVerifier
    private let start = ContinuousClock.now
    private(set) var trackers: [String: RenditionTracker]
    private(set) var violations: [String] = []
    private(set) var lastMultivariant: MultivariantPlaylist?
    private(set) var lastMultivariantText = ""
    private var gapsChecked: Set<String> = []
    private(set) var gapsAnswered404 = 0
    /// GAP entries whose URL was handed to the verifier as a filler segment (`gapAnswer == .filler`).
    private(set) var gapsSentForFiller = 0
    /// What the origin answers for the URL of an EXT-X-GAP entry (the channel's `gapResponse`).
    enum GapAnswer { case notFound, filler }
    let gapAnswer: GapAnswer

    init(
        client: HTTPClient, channel: String, renditions: [String], directory: URL, probeEvery: Int = 1,
        gapAnswer: GapAnswer = .notFound
    ) {
        self.gapAnswer = gapAnswer
        self.client = client
        self.channel = channel
        self.renditions = renditions
        self.verifier = SegmentVerifier(client: client, directory: directory, probeEvery: probeEvery)
        self.trackers = Dictionary(uniqueKeysWithValues: renditions.map { ($0, RenditionTracker(name: $0)) })
    }

    /// Seconds since the watcher was created.
    var now: Double { (ContinuousClock.now - start).seconds }

    /// The instant `seconds` after the watcher was created.
    func instant(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int64(seconds * 1000)) }

    func fail(_ message: String) {
        if violations.count < 300 { violations.append(String(format: "[%.1f s] ", now) + message) }
    }

    /// Path of a rendition's media playlist.
    func mediaPath(_ rendition: String) -> String { "/live/\(channel)/\(rendition)/index.m3u8" }

    /// One reload of the multivariant playlist and every media playlist. Renditions that have no media yet (404)
    /// are skipped until they do.
    func poll() async throws {
        let multivariant = try await client.get("/live/\(channel)/index.m3u8")
        if multivariant.status == 200 {
            for problem in HeaderExpectations.playlist(multivariant, maxAgeAtMost: 5) {
                fail("multivariant: \(problem)")
            }
            lastMultivariantText = multivariant.text
            do {
                lastMultivariant = try MultivariantPlaylist.parse(multivariant.text)
            } catch {
                fail("multivariant does not parse: \(error)\n\(multivariant.text)")
            }
        } else if multivariant.status != 404 || lastMultivariant != nil {
            // 404 only until the channel has media; once answered, the multivariant playlist never goes away.
            fail("multivariant: status \(multivariant.status) \(multivariant.text)")
        }
        for rendition in renditions {
            let sent = now
            let response = try await client.get(mediaPath(rendition))
            let received = now
            guard response.status == 200 else {
                if response.status != 404 || trackers[rendition]?.lastMSN != nil {
                    fail("\(mediaPath(rendition)): status \(response.status) \(response.text)")
                }
                continue
            }
            let playlist: MediaPlaylist
            do {
                playlist = try MediaPlaylist.parse(response.text)
            } catch {
                fail("\(rendition) playlist does not parse: \(error)\n\(response.text)")
                continue
            }
            let targetDuration = playlist.targetDuration
            for problem in HeaderExpectations.playlist(response, maxAgeAtMost: targetDuration / 2) {
                fail("\(mediaPath(rendition)): \(problem)")
            }
            let before = trackers[rendition]!.entries
            trackers[rendition]!.observe(playlist, text: response.text, sent: sent, received: received)
            for (offset, segment) in playlist.segments.enumerated() {
                let msn = playlist.mediaSequence + UInt64(offset)
                guard before[msn] == nil else { continue }
                let path = "/live/\(channel)/\(rendition)/\(segment.uri)"
                if segment.gap {
                    try await checkGap(path: path, rendition: rendition, msn: msn)
                } else {
                    verifier.enqueue(.init(rendition: rendition, msn: msn, path: path))
                }
            }
        }
    }

    private func checkGap(path: String, rendition: String, msn: UInt64) async throws {
        guard gapsChecked.insert("\(rendition)/\(msn)").inserted else { return }
        if gapAnswer == .filler {
            // A segment like any other: 200, segment headers, decodes with video and audio. Asked for now, while
            // listed, as a player playing through the GAP would (and as the 404 check below does); only the decoding
            // waits for the verifier. Its queue can run tens of seconds behind under CPU load (one ffprobe per
            // segment), past the time a removed URL must stay downloadable (its duration plus the playlist's, RFC
            // 8216 section 6.2.2); a segment is still served from the store then, a GAP need not be.
            gapsSentForFiller += 1
            let response = try await client.get(path)
            verifier.enqueue(.init(rendition: rendition, msn: msn, path: path, prefetched: response))
            return
        }
        let response = try await client.get(path)
        if response.status == 404 {
            gapsAnswered404 += 1
        } else {
            fail("GAP entry \(path) answered \(response.status), expected 404")
        }
        for problem in HeaderExpectations.cors(response) { fail("GAP entry \(path): \(problem)") }
    }

    /// Polls every `interval` for `duration`, or until `until` returns true.
    func watch(
        for duration: Duration, interval: Duration = .milliseconds(500), until: (() -> Bool)? = nil
    )
        async throws
    {
        let deadline = ContinuousClock.now + duration
        while ContinuousClock.now < deadline {
            let started = ContinuousClock.now
            try await poll()
            if let until, until() { return }
            let next = started + interval
            if next > ContinuousClock.now { try await Task.sleep(until: next) }
        }
    }

    /// All segments are checked; returns the rule breaks of every kind.
    func finish() async -> [String] {
        await verifier.finish()
        var all = violations
        for rendition in renditions {
            all += trackers[rendition]!.violations
            all += timestampContinuity(rendition)
        }
        all += alignment()
        all += verifier.violations
        return all
    }

    /// Media timestamps of consecutive segments (no GAP, no DISCONTINUITY between), from ffprobe's packet PTS:
    /// in every stream the first PTS of n+1 equals the first PTS of n plus n's duration in that stream (its last
    /// packet's end), within one frame; and the video's first PTS moves by EXTINF(n), within one frame. (Audio is
    /// not held to EXTINF: an encoder's first segment starts its audio a few AAC frames before its video.)
    func timestampContinuity(_ rendition: String) -> [String] {
        var problems: [String] = []
        let results = verifier.results(rendition)
        guard let tracker = trackers[rendition] else { return [] }
        for msn in tracker.msns {
            guard let entry = tracker.entries[msn], let next = tracker.entries[msn + 1], !entry.gap, !next.gap,
                !next.discontinuity, let a = results[msn]?.probe, let b = results[msn + 1]?.probe
            else { continue }
            for (kind, first, second) in [("video", a.video, b.video), ("audio", a.audio, b.audio)] {
                guard let first, let second else { continue }
                let tolerance = max(first.frameDuration, 1)
                let join = Self.wrapped(second.firstPTS - first.endPTS)
                if abs(join) > tolerance {
                    problems.append(
                        "\(rendition) MSN \(msn)->\(msn + 1) \(kind): first PTS \(second.firstPTS) is \(join) ticks "
                            + "from first PTS + duration of the previous segment (\(first.endPTS)); tolerance one "
                            + "frame, "
                            + "\(tolerance)")
                }
                guard kind == "video" else { continue }
                let extinf = entry.durationMilliseconds * first.timeBase / 1000
                let step = Self.wrapped(second.firstPTS - first.firstPTS)
                if abs(step - extinf) > tolerance {
                    problems.append(
                        "\(rendition) MSN \(msn)->\(msn + 1) video: first PTS moved \(step) ticks, EXTINF is "
                            + "\(extinf) ticks (tolerance one frame, \(tolerance))")
                }
            }
        }
        return problems
    }

    /// Pairs of consecutive segments whose timestamps were compared, per rendition.
    func continuityPairs(_ rendition: String) -> Int {
        let results = verifier.results(rendition)
        guard let tracker = trackers[rendition] else { return 0 }
        return tracker.msns.filter { msn in
            guard let entry = tracker.entries[msn], let next = tracker.entries[msn + 1] else { return false }
            return !entry.gap && !next.gap && !next.discontinuity && results[msn]?.probe.video != nil
                && results[msn + 1]?.probe.video != nil
        }.count
    }

    /// The same MSN has the same PDT and EXTINF in every rendition, and every rendition has the same target
    /// duration (RFC 8216 section 6.2.4).
    func alignment() -> [String] {
        var problems: [String] = []
        guard let reference = renditions.first, let base = trackers[reference] else { return [] }
        for other in renditions.dropFirst() {
            guard let tracker = trackers[other] else { continue }
            if let a = base.targetDuration, let b = tracker.targetDuration, a != b {
                problems.append("target duration \(reference)=\(a) but \(other)=\(b)")
            }
            for msn in base.msns {
                guard let a = base.entries[msn], let b = tracker.entries[msn] else { continue }
                if a.programDateTimeMilliseconds != b.programDateTimeMilliseconds {
                    problems.append(
                        "MSN \(msn): PDT \(reference)=\(a.programDateTimeMilliseconds ?? -1) "
                            + "\(other)=\(b.programDateTimeMilliseconds ?? -1)")
                }
                if a.durationMilliseconds != b.durationMilliseconds {
                    problems.append(
                        "MSN \(msn): EXTINF \(reference)=\(a.durationMilliseconds) ms "
                            + "\(other)=\(b.durationMilliseconds) ms"
                    )
                }
            }
        }
        return problems
    }

    /// Every rendition lists the same MSNs, from the first MSN all of them listed to the newest all of them listed
    /// (the renditions are reloaded one after the other, so the newest may differ by a reload).
    func sameMSNs() -> [String] {
        let all = renditions.compactMap { trackers[$0] }
        guard let low = all.compactMap({ $0.msns.first }).max(), let high = all.compactMap(\.lastMSN).min() else {
            return ["no MSN listed in every rendition"]
        }
        var problems: [String] = []
        for tracker in all where tracker.msns.filter({ (low...high).contains($0) }) != Array(low...high) {
            problems.append("\(tracker.name) lists \(tracker.msns), expected every MSN of \(low)...\(high)")
        }
        let firsts = all.map { $0.msns.first ?? 0 }
        if Set(firsts).count > 1 { problems.append("renditions start at different MSNs: \(firsts)") }
        return problems
    }

    /// The same MSN has the same discontinuity sequence number (EXT-X-DISCONTINUITY-SEQUENCE plus the
    /// discontinuities up to it) in every rendition: RFC 8216 section 6.2.4, "Matching content in Variant Streams
    /// MUST have matching Discontinuity Sequence Numbers".
    func discontinuitySequenceAlignment() -> [String] {
        var problems: [String] = []
        guard let reference = renditions.first, let base = trackers[reference] else { return [] }
        for other in renditions.dropFirst() {
            guard let tracker = trackers[other] else { continue }
            for msn in base.msns {
                guard let a = base.entries[msn], let b = tracker.entries[msn],
                    a.discontinuitySequenceNumber != b.discontinuitySequenceNumber
                else { continue }
                problems.append(
                    "MSN \(msn): discontinuity sequence number \(reference)=\(a.discontinuitySequenceNumber) "
                        + "\(other)=\(b.discontinuitySequenceNumber)")
            }
        }
        return problems
    }

    /// A difference of 33-bit MPEG timestamps, brought into (-2^32, 2^32].
    static func wrapped(_ difference: Int64) -> Int64 {
        let wrap: Int64 = 1 << 33
        var value = difference % wrap
        if value > wrap / 2 { value -= wrap }
        if value <= -wrap / 2 { value += wrap }
        return value
    }
}

extension Duration {
    /// The duration in seconds.
    var seconds: Double {
        let (whole, fraction) = components
        return Double(whole) + Double(fraction) / 1e18
    }
}
