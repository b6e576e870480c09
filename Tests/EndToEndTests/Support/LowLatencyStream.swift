import Foundation
import Glibc
import Synchronization
import TestSupport

/// A Low-Latency channel fed the way docs/low-latency.md documents: real ffmpeg with the segment muxer, which sends
/// each MPEG-TS segment as one chunked POST lasting the segment's duration (one HTTP chunk per frame), so the origin
/// cuts parts while the segment is encoded. Plus what the low-latency tests measure and check: playlists' parts,
/// latency figures, concurrent blocking requests.
enum LowLatencyStream {
    /// PART-TARGET of the test channel: 10 frames at 25 fps.
    static let partTarget = 0.4
    /// hls.js's `maxLiveSyncPlaybackRate` in the LL tests: it may play this much faster to get back to its target.
    static let catchUpRate = 1.5
    static let channel = "sport"
    static let rendition = "main"

    /// The origin's configuration: one pushed LL channel, 2 s segments, a 10-segment window.
    static func configuration() -> String {
        """
        logLevel: info
        ingest:
          autoCreate: true
        channels:
          - name: \(channel)
            segmentDuration: 2
            window: { segments: 10 }
            lowLatency: { partTarget: \(partTarget) }
        """
    }

    /// The multivariant playlist's path.
    static var multivariantPath: String { "/live/\(channel)/index.m3u8" }
    /// The media playlist's path.
    static var mediaPath: String { "/live/\(channel)/\(rendition)/index.m3u8" }

    /// ffmpeg's input and encoding for the LL tests: a 640x360 test pattern and a sine tone in real time (`-re`),
    /// H.264 (x264 zerolatency) with a keyframe every 2 s, AAC; the output format and URL follow.
    static let encoding = [
        "-nostdin", "-v", "error", "-re",
        "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25",
        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
        "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-pix_fmt", "yuv420p",
        "-g", "50", "-keyint_min", "50", "-sc_threshold", "0", "-b:v", "800k",
        "-c:a", "aac", "-b:a", "64k", "-ac", "2",
    ]

    /// Starts the documented LL push: a 640x360 test pattern and a sine tone encoded in real time (`-re`), H.264 with
    /// a keyframe every 2 s, AAC, cut by ffmpeg's segment muxer into 2 s MPEG-TS segments, each POSTed while it is
    /// encoded, the segment list pushed after each one.
    static func startPush(port: Int, directory: URL, label: String) throws -> ChildProcess {
        guard let ffmpeg = ChildProcess.locate("ffmpeg") else { throw EndToEndError("ffmpeg is not on the PATH") }
        let ingest = "http://127.0.0.1:\(port)/ingest/\(channel)/\(rendition)"
        return try ChildProcess(
            executable: ffmpeg,
            arguments: encoding + [
                "-f", "segment", "-segment_format", "mpegts", "-segment_time", "2",
                "-segment_list", "\(ingest)/index.m3u8", "-segment_list_type", "m3u8",
                "\(ingest)/%d.ts",
            ], directory: directory, label: label)
    }

    /// Polls `path` until its playlist lists at least `parts` EXT-X-PART tags; returns that playlist.
    static func awaitParts(
        client: HTTPClient, path: String, parts: Int, timeout: Duration = .seconds(25)
    )
        async throws -> LowLatencyPlaylist
    {
        let deadline = ContinuousClock.now + timeout
        var last = "(no answer)"
        while ContinuousClock.now < deadline {
            if let response = try? await client.get(path) {
                last = "\(response.status) \(response.text)"
                if response.status == 200 {
                    let playlist = LowLatencyPlaylist(response.text)
                    if playlist.parts.count >= parts { return playlist }
                }
            }
            try await Task.sleep(for: .milliseconds(250))
        }
        throw EndToEndError("\(path) did not list \(parts) parts within \(timeout); last answer:\n\(last)")
    }
}

/// What the low-latency tests read from a media playlist: its parts, preload hint, PDTs and server control.
struct LowLatencyPlaylist: Sendable {
    struct Part: Sendable, Equatable {
        let msn: UInt64
        let index: Int
        let uri: String
        let gap: Bool
        let independent: Bool
    }
    let text: String
    let mediaSequence: UInt64
    /// Every EXT-X-PART in order, with the MSN and index its URI (`{msn}.{index}.ts`) names.
    let parts: [Part]
    /// EXT-X-PRELOAD-HINT's URI.
    let preloadHint: String?
    /// MSN -> EXT-X-PROGRAM-DATE-TIME (seconds since 1970) of every segment or open segment that has one.
    let programDateTimes: [UInt64: Double]
    /// The segments' URI lines in order.
    let segmentURIs: [String]

    init(_ text: String) {
        self.text = text
        var mediaSequence: UInt64 = 0
        var parts: [Part] = []
        var hint: String?
        var dates: [UInt64: Double] = [:]
        var uris: [String] = []
        var msn: UInt64?
        for line in text.split(separator: "\n").map(String.init) {
            if line.hasPrefix("#EXT-X-MEDIA-SEQUENCE:") {
                mediaSequence = UInt64(line.dropFirst("#EXT-X-MEDIA-SEQUENCE:".count)) ?? 0
                msn = mediaSequence
            } else if line.hasPrefix("#EXT-X-PART:") {
                let uri = Self.attribute("URI", in: line) ?? ""
                let pieces = uri.split(separator: "/").last?.split(separator: ".") ?? []
                if pieces.count == 3, let m = UInt64(pieces[0]), let i = Int(pieces[1]) {
                    parts.append(
                        Part(
                            msn: m, index: i, uri: uri, gap: line.contains("GAP=YES"),
                            independent: line.contains("INDEPENDENT=YES")))
                }
            } else if line.hasPrefix("#EXT-X-PRELOAD-HINT:") {
                hint = Self.attribute("URI", in: line)
            } else if line.hasPrefix("#EXT-X-PROGRAM-DATE-TIME:"), let current = msn {
                dates[current] = Self.date(String(line.dropFirst("#EXT-X-PROGRAM-DATE-TIME:".count)))
            } else if !line.hasPrefix("#"), !line.isEmpty {
                uris.append(line)
                msn = (msn ?? mediaSequence) + 1
            }
        }
        self.mediaSequence = mediaSequence
        self.parts = parts
        self.preloadHint = hint
        self.programDateTimes = dates
        self.segmentURIs = uris
    }

    /// The last listed part.
    var lastPart: Part? { parts.last }

    /// A quoted or plain attribute value of a tag line.
    static func attribute(_ name: String, in line: String) -> String? {
        guard let range = line.range(of: "\(name)=") else { return nil }
        let rest = line[range.upperBound...]
        if rest.first == "\"" {
            return String(rest.dropFirst().prefix { $0 != "\"" })
        }
        return String(rest.prefix { $0 != "," })
    }

    /// `2026-11-24T01:00:16.800Z` as seconds since 1970.
    static func date(_ text: String) -> Double? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date.timeIntervalSince1970 }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)?.timeIntervalSince1970
    }
}

/// Latency samples (seconds) summarized: median, 90th percentile, and the share inside a window.
struct LatencyFigures: Sendable, CustomStringConvertible {
    let samples: [Double]

    var median: Double { percentile(0.5) }
    var p90: Double { percentile(0.9) }

    /// The value below which `fraction` of the samples lie (nearest rank); NaN without samples.
    func percentile(_ fraction: Double) -> Double {
        guard !samples.isEmpty else { return .nan }
        let sorted = samples.sorted()
        let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }

    /// The share of samples within `range` (0 without samples).
    func share(within range: ClosedRange<Double>) -> Double {
        guard !samples.isEmpty else { return 0 }
        return Double(samples.filter { range.contains($0) }.count) / Double(samples.count)
    }

    var description: String {
        String(
            format: "median %.2f s, p90 %.2f s, %d samples, %.0f %% in [1.0, 2.5]", median, p90, samples.count,
            share(within: 1.0...2.5) * 100)
    }
}

/// Many identical requests sent at one instant, each on its own thread and connection (a thread pool would run only
/// a few of them at once, and these wait seconds for their answer).
enum ConcurrentRequests {
    struct Answer: Sendable {
        let path: String
        let status: Int
        let seconds: Double
        let body: [UInt8]
        let cacheStatus: String?
        let error: String?
    }

    /// GETs every path at once on 127.0.0.1:`port`; returns the answers in the order of `paths`.
    static func get(_ paths: [String], port: Int, timeout: Duration = .seconds(20)) async -> [Answer] {
        let collector = Collector(count: paths.count)
        let start = ContinuousClock.now
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            collector.onComplete(continuation)
            for (index, path) in paths.enumerated() {
                Thread {
                    collector.set(index, Self.exchange(path: path, port: port, timeout: timeout, start: start))
                }.start()
            }
        }
        return collector.answers
    }

    private static func exchange(
        path: String, port: Int, timeout: Duration, start: ContinuousClock.Instant
    )
        -> Answer
    {
        do {
            let connection = try RawHTTPConnection(port: port, timeout: timeout)
            try connection.send(
                RawHTTPConnection.requestBytes(
                    "GET", path, headers: [("Host", "127.0.0.1:\(port)"), ("Connection", "close")], body: nil))
            let response = try connection.readResponseUntilClose()
            return Answer(
                path: path, status: response.status, seconds: (ContinuousClock.now - start).seconds,
                body: response.body, cacheStatus: response.header("X-Cache-Status"), error: nil)
        } catch {
            return Answer(
                path: path, status: 0, seconds: (ContinuousClock.now - start).seconds, body: [], cacheStatus: nil,
                error: "\(error)")
        }
    }

    /// The answers as the threads deliver them; resumes the waiting task when the last one arrives.
    private final class Collector: Sendable {
        private struct State {
            var answers: [Answer?]
            var remaining: Int
            var continuation: CheckedContinuation<Void, Never>?
        }
        private let state: Mutex<State>

        init(count: Int) {
            state = Mutex(State(answers: Array(repeating: nil, count: count), remaining: count))
        }

        func onComplete(_ continuation: CheckedContinuation<Void, Never>) {
            let done = state.withLock { state -> Bool in
                state.continuation = continuation
                return state.remaining == 0
            }
            if done { continuation.resume() }
        }

        func set(_ index: Int, _ answer: Answer) {
            let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.answers[index] = answer
                state.remaining -= 1
                return state.remaining == 0 ? state.continuation : nil
            }
            continuation?.resume()
        }

        var answers: [Answer] { state.withLock { $0.answers.map { $0! } } }
    }
}

extension BrowserPlayer.Played {
    /// Samples from the first one in which the element played (currentTime above 0) on.
    var samplesSincePlaying: [Sample] {
        Array((samples ?? []).drop { ($0.currentTime ?? 0) <= 0 })
    }

    /// `hls.latency` of every sample since playback started.
    var latencies: LatencyFigures { LatencyFigures(samples: samplesSincePlaying.compactMap(\.latency)) }

    /// Wall clock minus the PROGRAM-DATE-TIME shown, for every sample since playback started (hls.js).
    var dateLatencies: LatencyFigures { LatencyFigures(samples: samplesSincePlaying.compactMap(\.dateLatency)) }

    /// Fatal errors the player reported (hls.js `ERROR` with `fatal`, the element's `error` event).
    var fatalErrors: [String] { state?.errors ?? [] }

    /// Non-fatal hls.js errors other than the buffer stalls it reports while waiting at the live edge.
    var otherErrors: [String] {
        (state?.events ?? []).filter { $0.kind == "hls-error" }.compactMap(\.detail).filter {
            !$0.contains("bufferStalledError") && !$0.contains("bufferNudgeOnStall")
        }
    }

    /// The requests whose URL path ends with `suffix` (query ignored), e.g. `.m3u8`.
    func requests(endingWith suffix: String) -> [Network.Request] {
        (network?.requests ?? []).filter { ($0.url.split(separator: "?").first ?? "").hasSuffix(suffix) }
    }
}

/// What a player's request asked for, from its URL.
enum LowLatencyRequest: String, Sendable, CaseIterable {
    /// `{msn}.{part}.ts`
    case part
    /// `{msn}.ts`
    case segment
    /// A playlist with `_HLS_msn` (blocking reload).
    case blockingPlaylist
    /// A playlist with `_HLS_skip` (delta update; may block too).
    case deltaPlaylist
    /// A playlist without directives.
    case playlist
    case other

    init(url: String) {
        let pieces = url.split(separator: "?", maxSplits: 1)
        let name = pieces.first?.split(separator: "/").last ?? ""
        let query = pieces.count > 1 ? String(pieces[1]) : ""
        let dotted = name.split(separator: ".")
        if name.hasSuffix(".m3u8") {
            if query.contains("_HLS_skip=") {
                self = .deltaPlaylist
            } else if query.contains("_HLS_msn=") {
                self = .blockingPlaylist
            } else {
                self = .playlist
            }
        } else if dotted.count == 3, dotted[2] == "ts", UInt64(dotted[0]) != nil, Int(dotted[1]) != nil {
            self = .part
        } else if dotted.count == 2, dotted[1] == "ts", UInt64(dotted[0]) != nil {
            self = .segment
        } else {
            self = .other
        }
    }

    /// What an LL cache keeps per URL and a player asks for once per part: parts and blocking reloads.
    static let cacheable: Set<LowLatencyRequest> = [.part, .blockingPlaylist, .deltaPlaylist]

    /// Counts per kind, e.g. "part 120, blockingPlaylist 118, ...".
    static func tally(_ urls: [String]) -> String {
        var counts: [LowLatencyRequest: Int] = [:]
        for url in urls { counts[LowLatencyRequest(url: url), default: 0] += 1 }
        return allCases.compactMap { kind in counts[kind].map { "\(kind.rawValue) \($0)" } }.joined(separator: ", ")
    }
}
