public import LiveTimeline

/// How one origin of a redundancy group stands for one channel, as the group shares it (docs/content-steering.md,
/// "Health"). Ordered by severity: a pathway whose origins are all worse than healthy moves after the healthy ones.
public enum PathwayHealth: Sendable, Hashable {
    /// Publishing slots on time.
    case healthy
    /// No new slot for more than 1.5 target durations.
    case stale(String)
    /// Answering, but failing its own checks: catching up after a restart, its store refusing writes or nearly
    /// full, no media or no such channel.
    case failing(String)
    /// No report from it for `ChannelHealthReport.lifetimeMilliseconds`: over HTTP and, with a group database, in
    /// its heartbeat row either.
    case down(String)

    /// 0 healthy, 1 stale, 2 failing, 3 down.
    public var severity: Int {
        switch self {
        case .healthy: 0
        case .stale: 1
        case .failing: 2
        case .down: 3
        }
    }

    /// "healthy", "stale", "failing" or "down".
    public var name: String {
        switch self {
        case .healthy: "healthy"
        case .stale: "stale"
        case .failing: "failing"
        case .down: "down"
        }
    }

    /// Why it is not healthy; nil when it is.
    public var reason: String? {
        switch self {
        case .healthy: nil
        case .stale(let reason), .failing(let reason), .down(let reason): reason
        }
    }

    /// A pathway's health from its origins': the least severe (a CDN in front of two origins serves while one of them
    /// does; the first of equals); nil for no origins.
    public static func best(of origins: [PathwayHealth]) -> PathwayHealth? {
        origins.min { $0.severity < $1.severity }
    }
}

/// One channel as its own origin judges it: what `GET /peer/health` reports and the heartbeat row carries.
public struct ChannelHealthReport: Sendable, Hashable, Codable {
    /// "healthy", "stale" or "failing" (an origin never reports itself down).
    public var state: String
    /// Why, when not healthy.
    public var reason: String?

    public init(state: String, reason: String? = nil) {
        self.state = state
        self.reason = reason
    }

    /// How long a report counts after it was read (ms). Two reads of a peer that stopped answering in between start
    /// at most 2.7 s apart: the monitor's 1 s pause, then a round it stops waiting for after 1.7 s (twice the 0.8 s
    /// read timeout plus a 0.1 s margin, `SteeringHealthMonitor.readTimeout`); the
    /// lifetime is over twice that, so one missed read never makes a peer down, two in a row do.
    public static let lifetimeMilliseconds: Int64 = 6000

    /// The origin's own judgement of a channel.
    /// - Parameters:
    ///   - sinceNewestSlotMilliseconds: time since the channel last published a new slot (its newest rendition
    ///     render); nil before any media.
    ///   - targetDurationMilliseconds: the channel's target duration.
    ///   - catchingUp: it is catching up with its peers after a restart (its playlists answer 503).
    ///   - storageFailure: why its store refuses writes, if it does.
    ///   - lowSpace: why its store is nearly full, if it is (its writes still succeed: judged failing before they
    ///     fail, so players are steered away while its playlists still list every segment).
    public static func judge(
        sinceNewestSlotMilliseconds: Int64?, targetDurationMilliseconds: Int64, catchingUp: Bool,
        storageFailure: String?, lowSpace: String? = nil
    ) -> ChannelHealthReport {
        guard let since = sinceNewestSlotMilliseconds else { return .init(state: "failing", reason: "no media yet") }
        if catchingUp { return .init(state: "failing", reason: "catching up with its peers") }
        if let storageFailure { return .init(state: "failing", reason: "store refuses writes: \(storageFailure)") }
        if let lowSpace { return .init(state: "failing", reason: "store nearly full: \(lowSpace)") }
        let limit = targetDurationMilliseconds.multipliedReportingOverflow(by: 3).partialValue / 2
        if since > limit {
            return .init(state: "stale", reason: "no new slot for \(since) ms (1.5 target durations: \(limit) ms)")
        }
        return .init(state: "healthy")
    }

    /// As a pathway health; an unknown state counts as failing.
    public var health: PathwayHealth {
        switch state {
        case "healthy": .healthy
        case "stale": .stale(reason ?? "stale")
        default: .failing(reason ?? state)
        }
    }
}

/// An origin's reports of all its channels, as `GET /peer/health` answers and its heartbeat row holds them.
public struct OriginHealthReport: Sendable, Hashable, Codable {
    /// The origin's base URL as its peers name it (`steering.self`).
    public var origin: String
    /// Channel name to its report.
    public var channels: [String: ChannelHealthReport]

    public init(origin: String, channels: [String: ChannelHealthReport]) {
        self.origin = origin
        self.channels = channels
    }
}

/// What one origin knows about another at a moment: the peer's report last read over HTTP and the one last read
/// from its heartbeat row in the group database, each with its age.
public struct OriginObservation: Sendable, Hashable {
    /// The report read from the peer's `GET /peer/health`, and how long ago (ms).
    public var http: (report: OriginHealthReport, ageMilliseconds: Int64)?
    /// The report in the peer's heartbeat row, and its age by the database's clock (ms); nil without a database or
    /// a row.
    public var database: (report: OriginHealthReport, ageMilliseconds: Int64)?
    /// A group database is configured (then "down" needs its heartbeat to be stale too).
    public var databaseConfigured: Bool
    /// How long this origin has been watching the peer (ms); nil: long enough. A peer with no report yet that has
    /// been watched for less than `ChannelHealthReport.lifetimeMilliseconds` is not judged yet.
    public var watchedMilliseconds: Int64?

    public init(
        http: (report: OriginHealthReport, ageMilliseconds: Int64)? = nil,
        database: (report: OriginHealthReport, ageMilliseconds: Int64)? = nil, databaseConfigured: Bool = false,
        watchedMilliseconds: Int64? = nil
    ) {
        self.http = http
        self.database = database
        self.databaseConfigured = databaseConfigured
        self.watchedMilliseconds = watchedMilliseconds
    }

    public static func == (left: Self, right: Self) -> Bool {
        left.http?.report == right.http?.report && left.http?.ageMilliseconds == right.http?.ageMilliseconds
            && left.database?.report == right.database?.report
            && left.database?.ageMilliseconds == right.database?.ageMilliseconds
            && left.databaseConfigured == right.databaseConfigured
            && left.watchedMilliseconds == right.watchedMilliseconds
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(http?.report)
        hasher.combine(http?.ageMilliseconds)
        hasher.combine(database?.report)
        hasher.combine(database?.ageMilliseconds)
        hasher.combine(databaseConfigured)
        hasher.combine(watchedMilliseconds)
    }

    /// The channel's health on that origin: the freshest report younger than `ChannelHealthReport.lifetime`,
    /// from either source, says it (a channel it does not report is failing); with none, the origin is down: it
    /// could not be reached for that long and, with a database, its heartbeat there is that old too. So one
    /// origin's failed requests alone never make a peer down while the peer still writes its heartbeat.
    /// A peer not judged yet (no report, watched for less than the lifetime: this origin has just started) counts
    /// as healthy, as the peer's own judgement would most likely say and as the other origins, which have read it,
    /// do say; taking it for down would rank a healthy peer below this origin while it catches up (failing) and
    /// make the two origins' answers differ.
    public func health(channel: String) -> PathwayHealth {
        let lifetime = ChannelHealthReport.lifetimeMilliseconds
        let fresh = [http, database].compactMap { $0 }.filter { $0.ageMilliseconds <= lifetime }
        if let freshest = fresh.min(by: { $0.ageMilliseconds < $1.ageMilliseconds }) {
            return freshest.report.channels[channel]?.health ?? .failing("channel '\(channel)' is not on the origin")
        }
        if http == nil, database == nil, let watched = watchedMilliseconds, watched <= lifetime { return .healthy }
        var reason = "no answer for \(lifetime) ms"
        if databaseConfigured { reason += " and no heartbeat in the group database for \(lifetime) ms" }
        return .down(reason)
    }
}

extension ContentSteeringConfiguration {
    /// Each pathway's health for `channel`: the best of its origins' (a CDN in front of two origins serves while
    /// one of them does); a pathway that names no origin is healthy.
    /// - Parameters:
    ///   - own: this origin's judgement of the channel (`selfURL`'s); nil: the channel is not here.
    ///   - peers: what this origin knows of each peer, by base URL; a peer missing is not judged yet (healthy).
    public func pathwayHealth(
        channel: String, own: ChannelHealthReport?, peers: [String: OriginObservation]
    ) -> [String: PathwayHealth] {
        var health: [String: PathwayHealth] = [:]
        for (pathway, origins) in originHealth(channel: channel, own: own, peers: peers) where !origins.isEmpty {
            health[pathway] = PathwayHealth.best(of: origins.map(\.health))
        }
        return health
    }

    /// Each pathway's origins (in the pathways' order) and how each stands for `channel`: what `pathwayHealth`
    /// takes the best of, for the admin status's "why".
    public func originHealth(
        channel: String, own: ChannelHealthReport?, peers: [String: OriginObservation]
    ) -> [(pathway: String, origins: [(origin: String, health: PathwayHealth)])] {
        pathways.map { pathway in
            let each = pathway.origins.map { origin -> (origin: String, health: PathwayHealth) in
                if origin == selfURL {
                    return (origin, own?.health ?? .failing("channel '\(channel)' is not on the origin"))
                }
                return (origin, (peers[origin] ?? OriginObservation(watchedMilliseconds: 0)).health(channel: channel))
            }
            return (pathway.id, each)
        }
    }
}
