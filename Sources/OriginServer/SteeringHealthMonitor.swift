import Foundation
public import GroupDatabase
public import HLSPackaging
public import LiveTimeline
public import Logging
public import OriginCore
public import PeerRepair
public import ServiceLifecycle
import SharedBytes
import Synchronization

/// Gathers the redundancy group's health for Content Steering in the background (docs/content-steering.md,
/// "Health"), so that the steering manifest route only reads a snapshot and never waits on a peer or the database:
/// every second it reads each peer's `GET /peer/health` (the peer's own judgement of its channels) and, with a group
/// database, in a loop of its own, writes this origin's heartbeat row and reads every origin's.
public final class SteeringHealthMonitor: Service, Sendable {
    private let origin: Origin
    private let steering: ContentSteeringConfiguration
    /// The peers observed, by base URL, in the order the pathways name them.
    let peers: [String]
    private let fetcher: any PeerFetching
    private let database: (any HeartbeatStore)?
    private let logger: Logger
    private let clock: any OriginClock
    /// Milliseconds on a monotonic clock, for every age this origin measures itself (`monotonicMilliseconds` unless
    /// a test gives a manual one): a step of the wall clock never ages or rejuvenates a report.
    private let monotonic: @Sendable () -> Int64
    /// The pause between two rounds (`interval` unless a test says otherwise).
    private let pause: Duration
    /// The longest a peer's connect, and then its answer, is waited for (`requestTimeout` unless a test says
    /// otherwise). The monitor gives up on a read at twice this plus `deadlineMargin` even if the fetch has not
    /// ended, so a round never outlasts it.
    let readTimeout: Duration
    /// The longest one heartbeat (write and read) is waited for before it counts as failed (`timeout`). A running
    /// query does not end when cancelled: while that call runs, each beat skipped counts as a `timeout` too, and a
    /// second call (on another pooled connection) starts once the first has run `freshCallAfterTimeouts` times this.
    let heartbeatTimeout: Duration

    /// What was last read from each peer, by base URL: the report and when (`monotonic` ms).
    private struct Known: Sendable {
        var http: (report: OriginHealthReport, atMilliseconds: Int64)?
        /// The heartbeat row's report, its age by the database's clock, and when it was read (ms).
        var database: (report: OriginHealthReport, ageMilliseconds: Int64, atMilliseconds: Int64)?
        /// The health last logged for the peer, to log changes only.
        var reachable: Bool?
        /// A read of the peer is running (one that outlived its deadline included): no second one is started.
        var reading = false
        /// Failed reads by reason (`connect`, `timeout`, `closed`, `status`, `invalid_report`, `error`).
        var failures: [String: Int] = [:]
        /// Why the last read failed, if the last read failed.
        var lastFailure: String?
    }
    private let known: Mutex<[String: Known]>
    /// When `run` began watching the peers (`monotonic` ms); nil before.
    private let watchingSince = Mutex<Int64?>(nil)

    /// The heartbeat loop's state, for logs and metrics.
    private struct Heartbeats: Sendable {
        /// Whether the last heartbeat was written, to log changes only (nil before the first).
        var written: Bool?
        /// When the last one was written (`monotonic` ms).
        var writtenAt: Int64?
        /// When the newest running call started (`monotonic` ms).
        var startedAt: Int64 = 0
        /// Heartbeat calls made, to prune about hourly; a call's number is the count when it started.
        var count = 0
        /// Failed heartbeats by reason (`error`, `timeout`).
        var failures: [String: Int] = [:]
        /// The last failure's text and when it happened (`monotonic` ms), for the admin status.
        var lastError: (text: String, atMilliseconds: Int64)?
        /// The calls running by number (ones that outlived `heartbeatTimeout` included), at most
        /// `heartbeatCallsAtOnce`.
        var live: Set<Int> = []
        /// The running calls that outlived `heartbeatTimeout` (hung), by number, with when each started (ms).
        var overdue: [Int: Int64] = [:]
    }
    private let heartbeats = Mutex(Heartbeats())

    /// Milliseconds on the monotonic clock (`ContinuousClock`), for the ages this origin measures itself.
    static func monotonicMilliseconds() -> Int64 {
        let elapsed = ContinuousClock.now - monotonicOrigin
        return elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
    }
    private static let monotonicOrigin = ContinuousClock.now

    /// How often the group is read.
    public static let interval: Duration = .seconds(1)
    /// The longest a peer's connect, and then its answer, is waited for in one round.
    static let requestTimeout: Duration = .milliseconds(800)
    /// Added to a read's two timeouts before the monitor stops waiting for a fetch that has not ended on its own.
    static let deadlineMargin: Duration = .milliseconds(100)

    /// - Parameters:
    ///   - steering: the group's pathways; the peers observed are the origins they name, this one (`selfURL`) apart.
    ///   - database: the group database, for heartbeats; nil: peers are judged over HTTP alone.
    public convenience init(
        origin: Origin, steering: ContentSteeringConfiguration, database: (any HeartbeatStore)?,
        fetcher: any PeerFetching = PeerClient(), logger: Logger
    ) {
        self.init(
            origin: origin, steering: steering, database: database, fetcher: fetcher, logger: logger,
            monotonic: { Self.monotonicMilliseconds() })
    }

    /// As above, with the monotonic clock and the timings a test chooses.
    init(
        origin: Origin, steering: ContentSteeringConfiguration, database: (any HeartbeatStore)?,
        fetcher: any PeerFetching, logger: Logger, monotonic: @escaping @Sendable () -> Int64,
        pause: Duration = SteeringHealthMonitor.interval, readTimeout: Duration = SteeringHealthMonitor.requestTimeout,
        heartbeatTimeout: Duration = .seconds(3)
    ) {
        self.origin = origin
        self.clock = origin.clock
        self.steering = steering
        var peers: [String] = []
        for pathway in steering.pathways {
            for url in pathway.origins where url != steering.selfURL && !peers.contains(url) { peers.append(url) }
        }
        self.peers = peers
        self.fetcher = fetcher
        self.database = database
        self.logger = logger
        self.known = Mutex([:])
        self.monotonic = monotonic
        self.pause = pause
        self.readTimeout = readTimeout
        self.heartbeatTimeout = heartbeatTimeout
    }

    /// This origin's report of every steered channel it has (the heartbeat row; `GET /peer/health` answers it
    /// without the reasons).
    public static func ownReport(origin: Origin, selfURL: String?) -> OriginHealthReport {
        let now = origin.clock.nowMilliseconds()
        var channels: [String: ChannelHealthReport] = [:]
        for channel in origin.allChannels where channel.configuration.steering != nil {
            channels[channel.name] = channel.steeringHealth(nowMilliseconds: now)
        }
        return OriginHealthReport(origin: selfURL ?? "", channels: channels)
    }

    /// What this origin knows of each peer now (ages counted to now).
    public func observations() -> [String: OriginObservation] {
        let now = monotonic()
        let watched = now - (watchingSince.withLock { $0 } ?? now)
        return known.withLock { known in
            var observations: [String: OriginObservation] = [:]
            for peer in peers {
                let entry = known[peer]
                observations[peer] = OriginObservation(
                    http: entry?.http.map { ($0.report, now - $0.atMilliseconds) },
                    database: entry?.database.map { ($0.report, $0.ageMilliseconds + now - $0.atMilliseconds) },
                    databaseConfigured: database != nil, watchedMilliseconds: watched)
            }
            return observations
        }
    }

    /// Each pathway's health for `channel` now, from this origin's own judgement and what it last read of the peers.
    public func pathwayHealth(
        _ steering: ContentSteeringConfiguration, channel: Channel?, name: String
    ) -> [String: PathwayHealth] {
        let own = channel?.steeringHealth(nowMilliseconds: clock.nowMilliseconds())
        return steering.pathwayHealth(channel: name, own: own, peers: observations())
    }

    /// The pathways of `steering` whose every origin is a peer whose last read failed (their last reports may still
    /// count them healthy): `SteeringManifest.answer` sends no RELOAD-URI there.
    public func unconfirmedPathways(_ steering: ContentSteeringConfiguration) -> Set<String> {
        known.withLock { known in
            var unconfirmed = Set<String>()
            for pathway in steering.pathways where !pathway.origins.isEmpty {
                let failed = pathway.origins.allSatisfy { $0 != steering.selfURL && known[$0]?.reachable == false }
                if failed { unconfirmed.insert(pathway.id) }
            }
            return unconfirmed
        }
    }

    /// Marks the start of the watch (a peer not read yet counts as healthy for a report's lifetime after it).
    func startWatching() {
        let now = monotonic()
        watchingSince.withLock { $0 = $0 ?? now }
    }

    /// Reads the group every `interval` until cancelled or a graceful shutdown: the peers over HTTP in one loop and,
    /// with a database, the heartbeat in its own, so that a slow or hung database (a running query does not end
    /// when its task is cancelled) never holds up the peers' reads.
    public func run() async {
        startWatching()
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    while !Task.isCancelled {
                        await self.round()
                        try? await Task.sleep(for: self.pause)
                    }
                }
                if self.database != nil {
                    group.addTask {
                        while !Task.isCancelled {
                            await self.beat()
                            try? await Task.sleep(for: self.pause)
                        }
                    }
                }
            }
        }
    }

    /// A heartbeat call hung this many times `heartbeatTimeout` (a query on a half-dead connection, as after a
    /// PostgreSQL failover, can wait for minutes of TCP retransmissions) no longer holds up the next: one more call
    /// starts, which the pool serves on another connection.
    static let freshCallAfterTimeouts: Int64 = 3
    /// The most heartbeat calls running at once (the hung ones included): a database where every call hangs gets no
    /// pile of them.
    static let heartbeatCallsAtOnce = 2

    /// Heartbeats between two deletions of rows older than a day (origins gone for good): about an hour.
    static let beatsBetweenPrunes = 3600

    /// One round of HTTP reads: every peer's report, concurrently, each given up after twice `readTimeout` (plus a
    /// margin) even when the fetch does not end on its own.
    func round() async {
        await withTaskGroup(of: Void.self) { group in
            for peer in peers {
                group.addTask { await self.readPeer(peer) }
            }
        }
    }

    /// Why a fetch failed, as a metric's `reason`: the `PeerFetchError`'s kind (`invalid` counts as
    /// `invalid_report`), `error` for any other error.
    static func failureReason(_ error: any Error) -> String {
        guard let error = error as? PeerFetchError else { return "error" }
        switch error.kind {
        case .connect: return "connect"
        case .timeout: return "timeout"
        case .closed: return "closed"
        case .status: return "status"
        case .invalid: return "invalid_report"
        }
    }

    private func readPeer(_ peer: String) async {
        guard let url = PeerURL(peer)?.with(path: "/peer/health") else { return }
        let started = known.withLock { known -> Bool in
            if known[peer]?.reading == true { return false }
            known[peer, default: Known()].reading = true
            return true
        }
        var report: OriginHealthReport?
        var failure: (reason: String, text: String) = ("", "")
        if !started {
            failure = ("timeout", "its previous read, past its deadline, has not ended")
        } else {
            let fetcher = self.fetcher
            let timeout = readTimeout
            let outcome = await Self.within(readTimeout * 2 + Self.deadlineMargin) {
                defer { self.known.withLock { $0[peer]?.reading = false } }
                return try await fetcher.get(url, timeout: timeout, limit: 1 << 20)
            }
            switch outcome {
            case nil:
                failure = ("timeout", "no answer within \(readTimeout * 2 + Self.deadlineMargin)")
            case .failure(let error):
                failure = (Self.failureReason(error), "\(error)")
            case .success(let response) where response.status != 200:
                failure = ("status", "status \(response.status)")
            case .success(let response):
                report = try? JSONDecoder().decode(OriginHealthReport.self, from: Data(response.body))
                if report == nil { failure = ("invalid_report", "its health report is not JSON") }
            }
        }
        let now = monotonic()
        let changed = known.withLock { known -> Bool? in
            var entry = known[peer] ?? Known()
            if let report {
                entry.http = (report, now)
                entry.lastFailure = nil
            } else {
                entry.failures[failure.reason, default: 0] += 1
                entry.lastFailure = failure.text
            }
            let reachable = report != nil
            defer {
                entry.reachable = reachable
                known[peer] = entry
            }
            return entry.reachable == reachable ? nil : reachable
        }
        if let changed {
            if changed {
                logger.info("steering: peer's health read", metadata: ["peer": "\(peer)"])
            } else {
                logger.warning(
                    "steering: cannot read the peer's health", metadata: ["peer": "\(peer)", "error": "\(failure.text)"])
            }
        }
    }

    /// One heartbeat: writes this origin's report (not without `steering.self`: there is no name to write it under)
    /// and reads every origin's row, pruning rows a day old every `beatsBetweenPrunes`-th time (the first included);
    /// a failure, or no answer within `heartbeatTimeout`, is counted and logged as a warning when the heartbeat stops,
    /// and again when it resumes. While a call that outlived its deadline still runs, a beat is skipped and counted
    /// as a `timeout`, until that call has run `freshCallAfterTimeouts` times `heartbeatTimeout`: then one more call
    /// starts (`heartbeatCallsAtOnce` at most).
    func beat() async {
        guard let database else { return }
        let startedAt = monotonic()
        let fresh = heartbeatTimeout.wholeMilliseconds * Self.freshCallAfterTimeouts
        let started = heartbeats.withLock { state -> (Bool, Int)? in
            if !state.live.isEmpty
                && (state.live.count >= Self.heartbeatCallsAtOnce || startedAt - state.startedAt < fresh)
            {
                state.failures["timeout", default: 0] += 1
                state.written = false
                return nil
            }
            state.startedAt = startedAt
            state.live.insert(state.count)
            defer { state.count &+= 1 }
            return (state.count % Self.beatsBetweenPrunes == 0, state.count)
        }
        guard let started else { return }
        let (prune, call) = started
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let own = steering.selfURL.map { _ in Self.ownReport(origin: origin, selfURL: steering.selfURL) }
        let text = own.map { (try? encoder.encode($0)).map { String(decoding: $0, as: UTF8.self) } ?? "{}" }
        let selfURL = steering.selfURL
        let outcome = await Self.within(heartbeatTimeout) {
            defer {
                self.heartbeats.withLock { state in
                    state.live.remove(call)
                    state.overdue[call] = nil
                }
            }
            return try await database.beat(origin: selfURL, report: text, prune: prune)
        }
        let rows: [GroupDatabase.Heartbeat]
        let reason: String
        let error: String
        switch outcome {
        case .success(let read):
            rows = read
            reason = ""
            error = ""
        case .failure(let failure):
            rows = []
            (reason, error) = ("error", "\(failure)")
        case nil:
            rows = []
            (reason, error) = ("timeout", "no answer within \(heartbeatTimeout)")
        }
        if !reason.isEmpty {
            let failedAt = monotonic()
            let stopped = heartbeats.withLock { state -> Bool in
                state.failures[reason, default: 0] += 1
                state.lastError = (error, failedAt)
                if reason == "timeout", state.live.contains(call) { state.overdue[call] = startedAt }
                defer { state.written = false }
                return state.written != false
            }
            if stopped {
                logger.warning(
                    "steering: heartbeat not written to the group database", metadata: ["error": "\(error)"])
            }
            return
        }
        let now = monotonic()
        // Without `steering.self` nothing was written: the rows were read, the heartbeat's age and log stay as they are.
        let resumed = selfURL != nil && heartbeats.withLock { state -> Bool in
            defer {
                state.written = true
                state.writtenAt = now
            }
            return state.written == false
        }
        if resumed {
            logger.info("steering: heartbeat written to the group database again")
        }
        let decoder = JSONDecoder()
        known.withLock { known in
            for row in rows where peers.contains(row.origin) {
                guard let report = try? decoder.decode(OriginHealthReport.self, from: Data(row.report.utf8)) else {
                    continue
                }
                known[row.origin, default: Known()].database = (report, row.ageMilliseconds, now)
            }
        }
    }

    /// What `/metrics` shows of the monitor (docs/metrics.md, "Content steering").
    struct Statistics: Sendable {
        /// Failed reads of a peer's `/peer/health`, by peer and reason.
        var readFailures: [(peer: String, reason: String, count: Int)]
        /// The age of the newest report read from a peer, by peer and source (`http`, `database`), in ms.
        var reportAges: [(peer: String, source: String, milliseconds: Int64)]
        /// With a database: the time since the last heartbeat written (since the watch began before the first), ms.
        var heartbeatAgeMilliseconds: Int64?
        /// With a database: failed heartbeats by reason (`error`, `timeout`).
        var heartbeatFailures: [String: Int]
    }

    /// The `steering` part of a steered channel's admin status (docs/content-steering.md, "In the status"): each
    /// pathway as the steering manifest ranks it now and why, each of its origins with the ages of the reports it is
    /// judged by, and with a group database this origin's own heartbeat.
    public func status(_ steering: ContentSteeringConfiguration, channel: Channel?, name: String) -> SteeringStatus {
        let own = channel?.steeringHealth(nowMilliseconds: clock.nowMilliseconds())
        let observations = observations()
        let reads = known.withLock { known in
            known.mapValues { (failures: $0.failures, lastFailure: $0.lastFailure) }
        }
        let pathways = steering.originHealth(channel: name, own: own, peers: observations).map {
            pathway, origins -> SteeringStatus.Pathway in
            let best = PathwayHealth.best(of: origins.map(\.health)) ?? .healthy
            return SteeringStatus.Pathway(
                id: pathway, state: best.name, reason: best.reason,
                origins: origins.map { origin, health in
                    let observation = origin == steering.selfURL ? nil : observations[origin]
                    let read = origin == steering.selfURL ? nil : reads[origin]
                    return SteeringStatus.Origin(
                        origin: origin, isSelf: origin == steering.selfURL, state: health.name, reason: health.reason,
                        httpReportAgeMilliseconds: observation?.http?.ageMilliseconds,
                        heartbeatAgeMilliseconds: observation?.database.map { max(0, $0.ageMilliseconds) },
                        lastReadError: read?.lastFailure,
                        readFailures: read.flatMap { $0.failures.isEmpty ? nil : $0.failures })
                })
        }
        return SteeringStatus(pathways: pathways, heartbeat: heartbeatStatus())
    }

    /// This origin's heartbeat as the admin status shows it; nil without a group database.
    func heartbeatStatus() -> SteeringStatus.Heartbeat? {
        guard database != nil else { return nil }
        let now = monotonic()
        let since = watchingSince.withLock { $0 } ?? now
        let state = heartbeats.withLock { $0 }
        let age = max(0, now - (state.writtenAt ?? since))
        let lifetime = ChannelHealthReport.lifetimeMilliseconds
        let judged: (state: String, reason: String?)
        if let hungSince = state.overdue.values.min() {
            judged = (
                "hung",
                "a heartbeat call has been running for \(now - hungSince) ms, past its \(heartbeatTimeout) deadline"
            )
        } else if state.written == false {
            judged = ("failing", state.lastError?.text ?? "the last heartbeat failed")
        } else if steering.selfURL == nil {
            judged = ("unwritten", "no steering.self to write this origin's row under (the rows are read)")
        } else if age > lifetime {
            judged = (
                "stale",
                "no heartbeat written for \(age) ms (peers count a row for \(lifetime) ms): its loop has not run"
            )
        } else if state.written == nil {
            judged = ("starting", "no heartbeat written yet")
        } else {
            judged = ("written", nil)
        }
        return SteeringStatus.Heartbeat(
            state: judged.state, reason: judged.reason, ageMilliseconds: age, lastError: state.lastError?.text,
            lastErrorAgeMilliseconds: state.lastError.map { max(0, now - $0.atMilliseconds) },
            failures: ["error": state.failures["error"] ?? 0, "timeout": state.failures["timeout"] ?? 0])
    }

    /// The monitor's figures now (ages on the monotonic clock).
    func statistics() -> Statistics {
        let now = monotonic()
        var failures: [(peer: String, reason: String, count: Int)] = []
        var ages: [(peer: String, source: String, milliseconds: Int64)] = []
        known.withLock { known in
            for peer in peers {
                guard let entry = known[peer] else { continue }
                for (reason, count) in entry.failures.sorted(by: { $0.key < $1.key }) {
                    failures.append((peer, reason, count))
                }
                if let http = entry.http { ages.append((peer, "http", now - http.atMilliseconds)) }
                if let row = entry.database {
                    ages.append((peer, "database", row.ageMilliseconds + now - row.atMilliseconds))
                }
            }
        }
        let since = watchingSince.withLock { $0 } ?? now
        let state = heartbeats.withLock { $0 }
        return Statistics(
            readFailures: failures, reportAges: ages,
            heartbeatAgeMilliseconds: database == nil ? nil : now - (state.writtenAt ?? since),
            heartbeatFailures: database == nil ? [:] : state.failures)
    }

    /// Runs `operation` in a task of its own and waits for it at most `deadline`: its result, or nil when the
    /// deadline passed first (the task is then cancelled and left to end on its own; nothing waits for it).
    static func within<T: Sendable>(
        _ deadline: Duration, _ operation: @escaping @Sendable () async throws -> T
    ) async -> Result<T, any Error>? {
        let race = Race<Result<T, any Error>>()
        return await withCheckedContinuation { continuation in
            race.begin(continuation)
            let work = Task {
                do { race.finish(.success(try await operation())) } catch { race.finish(.failure(error)) }
            }
            race.cancelOnFinish(
                Task {
                    try? await Task.sleep(for: deadline)
                    guard !Task.isCancelled else { return }
                    race.finish(nil)
                    work.cancel()
                })
        }
    }
}

/// The first of two outcomes resumes a continuation; the second is dropped (`SteeringHealthMonitor.within`).
private final class Race<Value: Sendable>: Sendable {
    private struct State: Sendable {
        var continuation: CheckedContinuation<Value?, Never>?
        var timer: Task<Void, Never>?
        var finished = false
    }
    private let state = Mutex(State())

    func begin(_ continuation: CheckedContinuation<Value?, Never>) {
        state.withLock { $0.continuation = continuation }
    }

    /// The deadline's timer, cancelled when the race is over (at once if it already is).
    func cancelOnFinish(_ timer: Task<Void, Never>) {
        let finished = state.withLock { state -> Bool in
            state.timer = timer
            return state.finished
        }
        if finished { timer.cancel() }
    }

    func finish(_ value: Value?) {
        let (continuation, timer) = state.withLock { state in
            defer {
                state.continuation = nil
                state.finished = true
            }
            return (state.continuation, state.timer)
        }
        continuation?.resume(returning: value)
        timer?.cancel()
    }
}

/// Where the HTTP handler finds the steering monitor: set once by `OriginService` when `steering:` is configured
/// (nil otherwise; the steering manifest then counts every pathway healthy).
public final class SteeringMonitorSlot: Sendable {
    private let slot = Mutex<SteeringHealthMonitor?>(nil)
    /// Steering manifests answered, by channel and the pathway they put first.
    private let answers = Mutex<[SteeringAnswerKey: Int]>([:])
    public init() {}

    struct SteeringAnswerKey: Hashable, Sendable {
        var channel: String
        var pathway: String
    }

    /// Counts a steering manifest answered for `channel` that puts `pathway` first.
    func countAnswer(channel: String, first pathway: String) {
        answers.withLock { $0[SteeringAnswerKey(channel: channel, pathway: pathway), default: 0] += 1 }
    }

    /// The steering manifests answered so far, by channel and first pathway, for the channels in `channels` only:
    /// the counts of any other channel (removed since, an auto-created one included) are dropped.
    func answered(keeping channels: Set<String>) -> [(channel: String, pathway: String, count: Int)] {
        answers.withLock { answers in
            answers = answers.filter { channels.contains($0.key.channel) }
            return answers.map { ($0.key.channel, $0.key.pathway, $0.value) }.sorted {
                ($0.channel, $0.pathway) < ($1.channel, $1.pathway)
            }
        }
    }

    /// The monitor, if one runs.
    public var monitor: SteeringHealthMonitor? {
        get { slot.withLock { $0 } }
        set { slot.withLock { $0 = newValue } }
    }
}
