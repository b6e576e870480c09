import Foundation
import Synchronization
import TestSupport

/// Downloads every segment the watcher finds, checks the HTTP answer and decodes it with ffprobe, in a task of its
/// own so playlist polling keeps its pace. Results are read after `finish()`.
final class SegmentVerifier: Sendable {
    /// One segment to check.
    struct Job: Sendable {
        let rendition: String
        let msn: UInt64
        let path: String
        /// The answer, when the watcher already asked (a GAP URL: asked for while listed); nil: asked for here.
        var prefetched: RawHTTPResponse? = nil
    }

    /// What a checked segment gave.
    struct Result: Sendable {
        let bytes: [UInt8]
        let probe: SegmentProbe
    }

    private struct State {
        var results: [String: [UInt64: Result]] = [:]
        var violations: [String] = []
        var downloaded = 0
        var probed = 0
    }

    private let client: HTTPClient
    private let directory: URL
    private let probeEvery: Int
    private let state = Mutex(State())
    private let jobs: AsyncStream<Job>
    private let continuation: AsyncStream<Job>.Continuation
    private let worker = Mutex<Task<Void, Never>?>(nil)

    /// - Parameter probeEvery: decode one segment in this many (1 = all).
    init(client: HTTPClient, directory: URL, probeEvery: Int = 1) {
        self.client = client
        self.directory = directory
        self.probeEvery = probeEvery
        (jobs, continuation) = AsyncStream.makeStream(of: Job.self)
        let task = Task { [self] in
            for await job in jobs { await check(job) }
        }
        worker.withLock { $0 = task }
    }

    /// Queues a segment.
    func enqueue(_ job: Job) { continuation.yield(job) }

    /// Waits until every queued segment is checked.
    func finish() async {
        continuation.finish()
        let task = worker.withLock { $0 }
        await task?.value
    }

    /// Checked segments of a rendition, by MSN.
    func results(_ rendition: String) -> [UInt64: Result] { state.withLock { $0.results[rendition] ?? [:] } }

    /// The first bytes downloaded for a segment.
    func bytes(_ rendition: String, _ msn: UInt64) -> [UInt8]? {
        state.withLock { $0.results[rendition]?[msn]?.bytes }
    }

    var violations: [String] { state.withLock { $0.violations } }
    var downloaded: Int { state.withLock { $0.downloaded } }
    var probed: Int { state.withLock { $0.probed } }

    private func fail(_ message: String) {
        state.withLock { if $0.violations.count < 200 { $0.violations.append(message) } }
    }

    private func check(_ job: Job) async {
        let label = "\(job.rendition)/\(job.msn)"
        do {
            let response: RawHTTPResponse
            if let prefetched = job.prefetched {
                response = prefetched
            } else {
                response = try await client.get(job.path)
            }
            state.withLock { $0.downloaded += 1 }
            guard response.status == 200 else {
                fail("GET \(job.path) of a listed segment: status \(response.status) \(response.text)")
                return
            }
            for problem in HeaderExpectations.segment(response) { fail("GET \(job.path): \(problem)") }
            let shouldProbe = job.msn % UInt64(probeEvery) == 0
            let probe: SegmentProbe
            if shouldProbe {
                probe = try await FFmpeg.probeSegment(
                    response.body, in: directory, name: "\(job.rendition)-\(job.msn).ts")
                state.withLock { $0.probed += 1 }
                if probe.status != 0 || !probe.errors.isEmpty {
                    fail("ffprobe of \(label): status \(probe.status), said: \(probe.errors)")
                }
                if probe.video == nil || probe.audio == nil {
                    fail("ffprobe of \(label): expected a video and an audio stream")
                }
                if let video = probe.video, video.decodedFrames == 0 || video.decodedFrames != video.packets {
                    fail(
                        "ffprobe of \(label): \(video.packets) video packets but \(video.decodedFrames) frames decoded")
                }
                if let audio = probe.audio, audio.decodedFrames == 0 {
                    fail("ffprobe of \(label): no audio frame decoded")
                }
            } else {
                probe = try SegmentProbe(json: "{}", status: 0, errors: "")
            }
            state.withLock {
                $0.results[job.rendition, default: [:]][job.msn] = Result(bytes: response.body, probe: probe)
            }
        } catch {
            fail("\(label): \(error)")
        }
    }
}

/// What the origin's HTTP answers must carry.
enum HeaderExpectations {
    /// Problems with a 200 answer for a segment.
    static func segment(_ response: RawHTTPResponse) -> [String] {
        var problems: [String] = []
        if response["Content-Type"] != "video/mp2t" {
            problems.append("Content-Type \(response["Content-Type"] ?? "none"), expected video/mp2t")
        }
        let cacheControl = response["Cache-Control"] ?? ""
        if !cacheControl.contains("immutable") || (response.maxAge ?? 0) < 86400 {
            problems.append("Cache-Control '\(cacheControl)', expected immutable with a max-age of a day or more")
        }
        problems += cors(response)
        if response["Content-Length"].flatMap(Int.init) != response.body.count {
            problems.append("Content-Length \(response["Content-Length"] ?? "none") but \(response.body.count) bytes")
        }
        return problems
    }

    /// Problems with a 200 answer for a playlist.
    static func playlist(_ response: RawHTTPResponse, maxAgeAtMost: Int) -> [String] {
        var problems: [String] = []
        if response["Content-Type"] != "application/vnd.apple.mpegurl" {
            problems.append(
                "Content-Type \(response["Content-Type"] ?? "none"), expected application/vnd.apple.mpegurl")
        }
        if let maxAge = response.maxAge {
            if maxAge > maxAgeAtMost { problems.append("max-age \(maxAge) over \(maxAgeAtMost)") }
        } else {
            problems.append("no Cache-Control max-age (\(response["Cache-Control"] ?? "none"))")
        }
        if response["ETag"] == nil { problems.append("no ETag") }
        problems += cors(response)
        return problems
    }

    /// Problems with CORS.
    static func cors(_ response: RawHTTPResponse) -> [String] {
        response["Access-Control-Allow-Origin"] == "*"
            ? [] : ["Access-Control-Allow-Origin '\(response["Access-Control-Allow-Origin"] ?? "none")', expected *"]
    }
}
