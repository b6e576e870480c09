/// The `steering` part of a steered channel's admin status (`GET /admin/channels/{channel}`; docs/content-steering.md,
/// "In the status"): what `/metrics` counts of the group's health, with the reasons, in one place.
public struct SteeringStatus: Sendable, Hashable, Encodable {
    /// Every pathway of the channel's steering, in the configuration's order.
    public var pathways: [Pathway]
    /// This origin's heartbeat in the group database; nil without one.
    public var heartbeat: Heartbeat?

    /// One pathway as this origin's steering manifest ranks it now.
    public struct Pathway: Sendable, Hashable, Encodable {
        public var id: String
        /// `healthy`, `stale`, `failing` or `down`: the best of its origins' (a pathway naming none is healthy).
        public var state: String
        /// Why it is not healthy.
        public var reason: String?
        /// The origins it follows and how each stands.
        public var origins: [Origin]
    }

    /// One origin of a pathway: this one (judged by itself) or a peer (judged by its freshest report).
    public struct Origin: Sendable, Hashable, Encodable {
        /// Its base URL.
        public var origin: String
        /// It is this origin (`steering.self`).
        public var isSelf: Bool
        /// `healthy`, `stale`, `failing` or `down`.
        public var state: String
        public var reason: String?
        /// A peer: the age of its report last read over HTTP (`GET /peer/health`), ms.
        public var httpReportAgeMilliseconds: Int64?
        /// A peer, with a group database: the age of its heartbeat row as last read, ms.
        public var heartbeatAgeMilliseconds: Int64?
        /// A peer whose last read failed: why.
        public var lastReadError: String?
        /// A peer: its failed reads so far, by reason (as `hlsorigin_steering_peer_read_failures_total`).
        public var readFailures: [String: Int]?

        enum CodingKeys: String, CodingKey {
            case origin, isSelf = "self", state, reason, httpReportAgeMilliseconds, heartbeatAgeMilliseconds
            case lastReadError, readFailures
        }
    }

    /// This origin's heartbeat: what its peers read of it in the group database.
    public struct Heartbeat: Sendable, Hashable, Encodable {
        /// `written` (the last one was), `failing` (the last one failed), `hung` (a call outlived its deadline and
        /// still runs), `stale` (none written for longer than peers count a row: the loop is not running),
        /// `starting` (none yet) or `unwritten` (no `steering.self` to write it under).
        public var state: String
        /// Why, when not `written`.
        public var reason: String?
        /// Since the last heartbeat written (since the watch began before the first), ms.
        public var ageMilliseconds: Int64
        /// The last failure (an error, or no answer within the deadline), kept once written again.
        public var lastError: String?
        /// How long ago the last failure was, ms.
        public var lastErrorAgeMilliseconds: Int64?
        /// Failed heartbeats by reason (`error`, `timeout`), as `hlsorigin_steering_heartbeat_failures_total`.
        public var failures: [String: Int]
    }
}
