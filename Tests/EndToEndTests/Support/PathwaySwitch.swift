import Foundation
import TestSupport

/// What hls.js did around the kill of the origin behind the pathway it played from (the content steering suites),
/// read from its run with `requests: true`: when it last fetched media from the dead pathway and first from the
/// surviving one, its steering manifest loads, when playback moved again, how much it played after the kill, its
/// errors and the discontinuity counters (`cc`) of what it parsed. Times are wall clock, seconds since 1970.
struct PathwaySwitch {
    typealias Request = BrowserPlayer.Played.Network.Request

    let killedAt: Double
    /// Every response the page received.
    let requests: [Request]
    /// The responses to steering manifest loads (any status).
    let steeringLoads: [Request]
    /// Steering manifest loads refused or failed.
    let failedReloads: [BrowserPlayer.Played.Network.Failure]
    /// The last media request (a 200 under `media`) answered by the dead pathway.
    let lastOnDead: Double?
    /// The first media request answered by the surviving pathway after the kill.
    let switchedAt: Double?
    /// The first sample after `switchedAt` whose currentTime moved on.
    let resumedAt: Double?
    /// Seconds of media played after the kill (steps no longer than the wall time between samples, plus 0.5 s).
    let playedAfterKill: Double
    /// hls.js's error events (`hls-error`), fatal or not.
    let errors: [String]
    /// The `cc` of every fragment hls.js parsed.
    let discontinuities: Set<Int>

    /// Reads `played`: the dead pathway serves under `dead` (a base URL with its trailing `/`), the surviving one
    /// under `survivor`; a media request is a 200 whose URL contains `media` (e.g. `/lo/`).
    init(_ played: BrowserPlayer.Played, killedAt: Double, dead: String, survivor: String, media: String) {
        self.killedAt = killedAt
        requests = played.network?.requests ?? []
        steeringLoads = requests.filter { $0.url.contains("/steering.json") }
        failedReloads = (played.network?.failed ?? []).filter { $0.url.contains("/steering.json") }
        func isMedia(_ request: Request) -> Bool { request.url.contains(media) && request.status == 200 }
        lastOnDead = requests.last { $0.url.hasPrefix(dead) && isMedia($0) }?.wall
        let switchedAt = requests.first { $0.url.hasPrefix(survivor) && isMedia($0) && $0.wall > killedAt }?.wall
        self.switchedAt = switchedAt
        // The page's clock against the wall clock, from the last response.
        let offset = requests.last.map { $0.wall - $0.t } ?? 0
        let samples = played.samples ?? []
        var resumedAt: Double?
        if let switchedAt {
            let after = samples.filter { $0.t + offset >= switchedAt }
            for (before, next) in zip(after, after.dropFirst())
            where (next.currentTime ?? 0) > (before.currentTime ?? 0) {
                resumedAt = next.t + offset
                break
            }
        }
        self.resumedAt = resumedAt
        playedAfterKill = zip(samples, samples.dropFirst()).reduce(0.0) { sum, pair in
            guard pair.0.t + offset >= killedAt, let from = pair.0.currentTime, let to = pair.1.currentTime,
                to > from, to - from <= pair.1.t - pair.0.t + 0.5
            else { return sum }
            return sum + (to - from)
        }
        errors = (played.state?.events ?? []).filter { $0.kind == "hls-error" }.map { $0.detail ?? "" }
        discontinuities = Set((played.state?.initPTS ?? []).map(\.cc))
    }

    /// hls.js's fatal errors.
    var fatal: [String] { errors.filter { $0.hasPrefix("FATAL") } }

    /// The steering manifest loads answered after the kill.
    var reloadsAfterKill: [Request] { steeringLoads.filter { $0.wall > killedAt } }

    /// `time` from the kill, e.g. "+1.25 s"; "never" for nil.
    func at(_ time: Double?) -> String { time.map { String(format: "%+.2f s", $0 - killedAt) } ?? "never" }

    /// The one-line timeline the steering suites print: `dead` and `survivor` name the pathways, `startedAt` is when
    /// the page was opened, `demotedAt` when the survivor's manifest first listed the dead pathway last.
    func timeline(dead: String, survivor: String, startedAt: Double, demotedAt: Double?) -> String {
        "pathway switch timeline (0 = kill -9 of the origin of \(dead), page opened "
            + String(format: "%.2f s", startedAt - killedAt) + "): last media request on \(dead) " + at(lastOnDead)
            + "; survivor steers \(dead) last " + at(demotedAt) + "; steering reloads "
            + steeringLoads.filter { $0.wall > killedAt - 4 }.map { at($0.wall) + " \($0.status)" }
            .joined(separator: ", ")
            + " (\(failedReloads.count) failed); first media request on \(survivor) " + at(switchedAt)
            + "; playback moving again " + at(resumedAt) + "; played "
            + String(format: "%.1f s", playedAfterKill) + " after the kill"
    }

    /// The timeline, then each steering reload from 4 s before the kill with its URL, and hls.js's errors.
    func printed(dead: String, survivor: String, startedAt: Double, demotedAt: Double?) -> String {
        var lines = [timeline(dead: dead, survivor: survivor, startedAt: startedAt, demotedAt: demotedAt)]
        for load in steeringLoads where load.wall > killedAt - 4 {
            lines.append("  steering reload " + at(load.wall) + " \(load.status) \(load.url)")
        }
        lines.append("  hls.js errors: \(errors)")
        return lines.joined(separator: "\n")
    }
}

extension PathwaySwitch {
    /// The moments of `killAfterFirstMedia` (wall clock, seconds since 1970).
    struct Kill: Sendable {
        /// When the probe first saw the pathway serve hls.js a media segment.
        let firstMediaAt: Double
        /// When the origin was sent SIGKILL.
        let killedAt: Double
        /// When the survivor's steering answer first listed the dead pathway last, and that answer.
        let demotedAt: Double
        let answer: String
    }

    /// Where to ask for the survivor's steering answer, and what it says once the dead pathway is last.
    struct Demotion: Sendable {
        /// What is waited for, as a failure names it (e.g. "the survivor to move origin-a last").
        let what: String
        /// The port the manifest is asked on (the survivor's, or the edge in front of it) and the request.
        let port: Int
        let query: String
        /// The PATHWAY-PRIORITY with the dead pathway last, e.g. `["origin-b","origin-a"]`.
        let priority: String
    }

    /// The content steering suites' kill: waits (`timeout` at most, every 100 ms) until `probe` says the pathway
    /// hls.js plays from served it a media segment (`firstMedia` names that in a failure), lets it play `playing`
    /// seconds, kills `origin` with SIGKILL (waiting up to 5 s for it to exit), then waits (10 s at most, every
    /// 100 ms) until the answer `demoted` names lists the dead pathway last. The kill comes only once hls.js plays:
    /// Chromium's start and the first loads take seconds (more on a loaded machine), and a kill before them would fail
    /// the multivariant playlist's load instead. If the probe never says so, `browser` (the page playing) is waited
    /// for before the failure is thrown.
    static func killAfterFirstMedia(
        _ origin: OriginProcess, playing: Double, browser: Task<BrowserPlayer.Report, any Error>,
        firstMedia: String, timeout: Duration, demoted: Demotion, probe: () async -> Bool
    ) async throws -> Kill {
        do {
            try await waitUntil(firstMedia, timeout: timeout, interval: .milliseconds(100)) { await probe() }
        } catch {
            _ = try? await browser.value
            throw error
        }
        let firstMediaAt = Date().timeIntervalSince1970
        try await Task.sleep(for: .seconds(playing))
        origin.kill()
        let killedAt = Date().timeIntervalSince1970
        _ = await origin.child.wait(timeout: .seconds(5))
        let survivor = HTTPClient(port: demoted.port)
        var answer = ""
        try await waitUntil(demoted.what, timeout: .seconds(10), interval: .milliseconds(100)) {
            answer = (try? await survivor.get(demoted.query).text) ?? ""
            return answer.contains(demoted.priority)
        }
        return Kill(
            firstMediaAt: firstMediaAt, killedAt: killedAt, demotedAt: Date().timeIntervalSince1970, answer: answer)
    }

    /// Waits (up to 10 s, every 200 ms) until every one of `ports` answers `query` (a steering manifest path) with the
    /// same bytes and `priority` (e.g. `["origin-a","origin-b"]`) in them: each origin has read the others. Returns the
    /// answer.
    static func waitUntilSteeringAlike(ports: [Int], query: String, priority: String, what: String) async throws
        -> String
    {
        var answers: [String] = []
        try await waitUntil(what, timeout: .seconds(10), interval: .milliseconds(200)) {
            answers = []
            for port in ports { answers.append((try? await HTTPClient(port: port).get(query).text) ?? "") }
            return Set(answers).count == 1 && answers[0].contains(priority)
        }
        return answers[0]
    }
}
