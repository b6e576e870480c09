import Foundation
public import GroupDatabase
public import HLSPackaging
public import LiveTimeline
public import Logging
public import OriginCore
public import PeerRepair
public import ServiceLifecycle
import Synchronization

/// Gathers the redundancy group's health for Content Steering in the background (docs/content-steering.md,
/// "Health"), so that the steering manifest route only reads a snapshot and never waits on a peer or the database:
/// every second it reads each peer's `GET /peer/health` (the peer's own judgement of its channels) and, with a group
/// database, in a loop of its own, writes this origin's heartbeat row and reads every origin's.
public final class SteeringHealthMonitor: Service, Sendable {
    private let origin: Origin
    private let steering: ContentSteeringConfiguration
    private let peers: [String]
    private let fetcher: any PeerFetching
    private let database: GroupDatabase?
    private let logger: Logger
    private let clock: any OriginClock

    /// What was last read from each peer, by base URL: the report and when (`monotonicMilliseconds`, so that a step
    /// of the wall clock never ages or rejuvenates a report).
    private struct Known: Sendable {
        var http: (report: OriginHealthReport, atMilliseconds: Int64)?
        /// The heartbeat row's report, its age by the database's clock, and when it was read (ms).
        var database: (report: OriginHealthReport, ageMilliseconds: Int64, atMilliseconds: Int64)?
        /// The health last logged for the peer, to log changes only.
        var reachable: Bool?
    }
    private let known: Mutex<[String: Known]>
    /// When `run` began watching the peers (`monotonicMilliseconds`); nil before.
    private let watchingSince = Mutex<Int64?>(nil)

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

    /// - Parameters:
    ///   - steering: the group's pathways; the peers observed are the origins they name, this one (`selfURL`) apart.
    ///   - database: the group database, for heartbeats; nil: peers are judged over HTTP alone.
    public init(
        origin: Origin, steering: ContentSteeringConfiguration, database: GroupDatabase?,
        fetcher: any PeerFetching = PeerClient(), logger: Logger
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
        let now = Self.monotonicMilliseconds()
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

    /// Reads the group every `interval` until cancelled or a graceful shutdown: the peers over HTTP in one loop and,
    /// with a database, the heartbeat in its own, so that a slow or hung database (a running query does not end
    /// when its task is cancelled) never holds up the peers' reads.
    public func run() async {
        let now = Self.monotonicMilliseconds()
        watchingSince.withLock { $0 = $0 ?? now }
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    while !Task.isCancelled {
                        await self.round()
                        try? await Task.sleep(for: Self.interval)
                    }
                }
                if let database = self.database {
                    group.addTask {
                        var beats = 0
                        while !Task.isCancelled {
                            await self.beat(database, prune: beats % Self.beatsBetweenPrunes == 0)
                            beats &+= 1
                            try? await Task.sleep(for: Self.interval)
                        }
                    }
                }
            }
        }
    }

    /// Heartbeats between two deletions of rows older than a day (origins gone for good): about an hour.
    static let beatsBetweenPrunes = 3600

    /// One round of HTTP reads: every peer's report, concurrently, each bounded by `requestTimeout`.
    func round() async {
        await withTaskGroup(of: Void.self) { group in
            for peer in peers {
                group.addTask { await self.readPeer(peer) }
            }
        }
    }

    private func readPeer(_ peer: String) async {
        guard let url = PeerURL(peer)?.with(path: "/peer/health") else { return }
        var report: OriginHealthReport?
        var failure = ""
        do {
            let response = try await fetcher.get(url, timeout: Self.requestTimeout, limit: 1 << 20)
            if response.status == 200 {
                report = try? JSONDecoder().decode(OriginHealthReport.self, from: Data(response.body))
                if report == nil { failure = "its health report is not JSON" }
            } else {
                failure = "status \(response.status)"
            }
        } catch {
            failure = "\(error)"
        }
        let now = Self.monotonicMilliseconds()
        let changed = known.withLock { known -> Bool? in
            var entry = known[peer] ?? Known()
            if let report { entry.http = (report, now) }
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
                    "steering: cannot read the peer's health", metadata: ["peer": "\(peer)", "error": "\(failure)"])
            }
        }
    }

    /// Whether the last heartbeat was written, to log changes only (nil before the first).
    private let beating = Mutex<Bool?>(nil)

    /// Writes this origin's heartbeat (not without `steering.self`: there is no name to write it under) and reads
    /// every origin's row; a failure is logged as a warning when the heartbeat stops, and again when it resumes.
    private func beat(_ database: GroupDatabase, prune: Bool) async {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let own = steering.selfURL.map { _ in Self.ownReport(origin: origin, selfURL: steering.selfURL) }
        let text = own.map { (try? encoder.encode($0)).map { String(decoding: $0, as: UTF8.self) } ?? "{}" }
        let rows: [GroupDatabase.Heartbeat]
        do {
            rows = try await database.beat(origin: steering.selfURL, report: text, prune: prune)
        } catch {
            let stopped = beating.withLock { state -> Bool in
                defer { state = false }
                return state != false
            }
            if stopped {
                logger.warning(
                    "steering: heartbeat not written to the group database", metadata: ["error": "\(error)"])
            }
            return
        }
        let resumed = beating.withLock { state -> Bool in
            defer { state = true }
            return state == false
        }
        if resumed {
            logger.info("steering: heartbeat written to the group database again")
        }
        let now = Self.monotonicMilliseconds()
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
}

/// Where the HTTP handler finds the steering monitor: set once by `OriginService` when `steering:` is configured
/// (nil otherwise; the steering manifest then counts every pathway healthy).
public final class SteeringMonitorSlot: Sendable {
    private let slot = Mutex<SteeringHealthMonitor?>(nil)
    public init() {}
    /// The monitor, if one runs.
    public var monitor: SteeringHealthMonitor? {
        get { slot.withLock { $0 } }
        set { slot.withLock { $0 = newValue } }
    }
}
