import HLSCrypto
import LiveTimeline
public import Logging
import MicroHTTPD
import OriginCore
import Synchronization

/// A bearer token of the configuration (`tokens:`): its name is what logs, metrics and answers show, its secret
/// never leaves the process.
public struct NamedToken: Sendable, Hashable {
    /// The name the audit log gives whoever presents it.
    public var name: String
    /// The secret (from `secret`, `secretFile` or `secretEnv`).
    public var secret: String

    public init(name: String, secret: String) {
        self.name = name
        self.secret = secret
    }
}

/// Which named tokens grant what (docs/security.md). Each list grants its scope: `admin` the admin API and the
/// status page, `ingest` pushes into every channel, `channels[c]` pushes into every rendition of channel `c`,
/// `renditions[c][r]` pushes into rendition `r` of `c` only. A scope no token grants answers loopback clients
/// only; a scope some token grants answers only requests that present one of its tokens, from loopback too.
public struct AccessConfiguration: Sendable, Hashable {
    /// Every named token.
    public var tokens: [NamedToken] = []
    /// Names of the tokens that open the admin API (`admin.tokens`).
    public var admin: [String] = []
    /// Names of the tokens that may push into every channel (`ingest.tokens`).
    public var ingest: [String] = []
    /// Names of the tokens that may push into a channel, by channel (a channel's `ingest.tokens`).
    public var channels: [String: [String]] = [:]
    /// Names of the tokens that may push into one rendition, by channel then rendition (a channel's
    /// `ingest.renditions`).
    public var renditions: [String: [String: [String]]] = [:]

    public init() {}

    /// The name `admin.token` (and `HLSORIGIN_ADMIN_TOKEN`) goes by.
    public static let legacyAdminName = "admin"
    /// The name `ingest.token` (and `HLSORIGIN_INGEST_TOKEN`) goes by.
    public static let legacyIngestName = "ingest"
}

/// Why a request was refused before it reached the core, or which limit the core refused a push for: the label of
/// `hlsorigin_refusals_total` and the audit log's outcome.
enum RefusalReason: String, Sendable, CaseIterable {
    /// No token, or one that is not configured, where a token is required (401).
    case unauthorized
    /// A remote client where no token is configured (only loopback clients are served) (403).
    case forbiddenRemote = "forbidden_remote"
    /// A configured token that does not grant this channel, rendition or the admin API (403).
    case wrongToken = "wrong_token"
    case channelLimit = "channel_limit"
    case renditionLimit = "rendition_limit"
    case memoryLimit = "memory_limit"
    case diskLimit = "disk_limit"
    case creationRate = "creation_rate"

    /// The reason of a refused push the core decided, if it is a limit.
    init?(_ reason: IngestError.Reason) {
        switch reason {
        case .channelLimit: self = .channelLimit
        case .renditionLimit: self = .renditionLimit
        case .memoryLimit: self = .memoryLimit
        case .diskLimit: self = .diskLimit
        case .creationRate: self = .creationRate
        default: return nil
        }
    }
}

/// The tokens in force and what each grants, compiled for per-request checks: secrets only as digests.
struct AccessPolicy: Sendable {
    private let names: [String]
    private let secrets: [BearerSecret]
    private let admin: Set<String>
    private let ingest: Set<String>
    private let channels: [String: Set<String>]
    private let renditions: [String: [String: Set<String>]]

    /// The policy of a server configuration: its named tokens, plus `adminToken` and `ingestToken` (named
    /// `admin` and `ingest`) granting the admin API and every channel.
    init(_ configuration: ServerConfiguration) {
        let access = configuration.accessWithLegacyTokens
        names = access.tokens.map(\.name)
        secrets = access.tokens.map { BearerSecret($0.secret.utf8) }
        admin = Set(access.admin)
        ingest = Set(access.ingest)
        channels = access.channels.mapValues(Set.init)
        renditions = access.renditions.mapValues { $0.mapValues(Set.init) }
    }

    /// The names of the configured tokens the request presents (`Authorization: Bearer ...`; several names when
    /// tokens share a secret), compared in constant time over all tokens; empty without one.
    func presentedTokens(_ request: HTTPRequestHead) -> [String] {
        guard let header = request.headers["Authorization"], header.hasPrefix("Bearer ") else { return [] }
        let matches = BearerSecret.matches(header.utf8.dropFirst("Bearer ".utf8.count), among: secrets)
        return zip(names, matches).compactMap { $1 ? $0 : nil }
    }

    /// How many tokens are configured.
    var tokenCount: Int { names.count }

    /// True if no token grants any push: the origin takes pushes from loopback clients only.
    var ingestIsLoopbackOnly: Bool { ingest.isEmpty && channels.isEmpty && renditions.isEmpty }

    /// True if no token opens the admin API: it answers loopback clients only.
    var adminIsLoopbackOnly: Bool { admin.isEmpty }

    /// The names of the tokens that open the admin API.
    var adminGrants: Set<String> { admin }

    /// The names of the tokens that grant a push into `channel` (nil: none named) and `rendition`.
    func ingestGrants(channel: String?, rendition: String?) -> Set<String> {
        var granted = ingest
        if let channel {
            granted.formUnion(channels[channel] ?? [])
            if let rendition { granted.formUnion(renditions[channel]?[rendition] ?? []) }
        }
        return granted
    }

    /// What a request to a scope that `granted` tokens open is: who it is, or why it is refused. With no token
    /// granting the scope, loopback clients only (any other configured token is refused, so that a token never
    /// reaches past its scope even from loopback); else one of `granted`, from loopback too.
    func decide(_ request: HTTPRequestHead, granted: Set<String>) -> AccessDecision {
        let presented = presentedTokens(request)
        if let name = presented.first(where: granted.contains) { return .allowed(Requester(name, request)) }
        if let name = presented.first { return .refused(.wrongToken, Requester(name, request)) }
        let anonymous = Requester(request.isLoopback ? "loopback" : "none", request)
        if granted.isEmpty {
            return request.isLoopback ? .allowed(anonymous) : .refused(.forbiddenRemote, anonymous)
        }
        return .refused(.unauthorized, anonymous)
    }
}

/// Whether a request may go on, and who it is for the audit log.
enum AccessDecision {
    case allowed(Requester)
    case refused(RefusalReason, Requester)
}

extension Requester {
    init(_ credential: String, _ request: HTTPRequestHead) {
        self.init(credential: credential, address: request.remoteAddress)
    }
}

/// The access policy in force, replaced by a reload (`ConfigurationReloader`); read once per push or admin
/// request (never by `/live`).
public final class AccessControl: Sendable {
    private let current: Mutex<AccessPolicy>

    /// The policy of `configuration`.
    public init(_ configuration: ServerConfiguration) {
        current = Mutex(AccessPolicy(configuration))
    }

    var policy: AccessPolicy { current.withLock { $0 } }

    /// Logs who may push and administer (at start and after a reload), so a loopback-only default is never a
    /// surprise.
    public func logSummary(_ logger: Logger) {
        let policy = self.policy
        if policy.ingestIsLoopbackOnly {
            let message =
                "no ingest token is configured: pushes are accepted from loopback clients only (configure "
                + "ingest.token, HLSORIGIN_INGEST_TOKEN or tokens: to push from other hosts; docs/security.md)"
            logger.notice("\(message)")
        } else {
            logger.info(
                "ingest needs a token wherever one is granted; channels without one take loopback pushes only",
                metadata: ["tokens": "\(policy.tokenCount)"])
        }
        if policy.adminIsLoopbackOnly {
            logger.notice("no admin token is configured: the admin API answers loopback clients only")
        }
    }

    /// Puts the tokens of `configuration` in force (and tells the inputs that follow them, the SRT listener).
    public func update(_ configuration: ServerConfiguration) {
        let policy = AccessPolicy(configuration)
        current.withLock { $0 = policy }
        for follower in followers.withLock({ $0 }) { follower(configuration) }
    }

    private let followers = Mutex<[@Sendable (ServerConfiguration) -> Void]>([])

    /// Calls `update` with every configuration put in force after this call (inputs with their own access checks).
    func follow(_ update: @escaping @Sendable (ServerConfiguration) -> Void) {
        followers.withLock { $0.append(update) }
    }
}

/// Refused requests by route (`ingest`, `admin`) and reason, for `hlsorigin_refusals_total`.
final class RefusalCounts: Sendable {
    private let counts = Mutex<[String: [RefusalReason: UInt64]]>([:])

    func record(route: String, _ reason: RefusalReason) {
        counts.withLock { $0[route, default: [:]][reason, default: 0] += 1 }
    }

    /// The count of a route and reason.
    func count(route: String, _ reason: RefusalReason) -> UInt64 {
        counts.withLock { $0[route]?[reason] ?? 0 }
    }

    /// Every reason of both routes (0 for those never counted), by route then reason.
    var all: [(route: String, reason: RefusalReason, count: UInt64)] {
        let counts = counts.withLock { $0 }
        return ["admin", "ingest"].flatMap { route in
            RefusalReason.allCases.filter { route == "ingest" || $0.isAccess }.map {
                (route, $0, counts[route]?[$0] ?? 0)
            }
        }
    }
}

extension RefusalReason {
    /// A refusal for the credential (not a limit).
    var isAccess: Bool { self == .unauthorized || self == .forbiddenRemote || self == .wrongToken }
}

extension ServerConfiguration {
    /// `access` with the older single settings folded in: `adminToken` as the token `admin` granting the admin API,
    /// `ingestToken` as the token `ingest` granting every channel. What HTTP requests and SRT callers are judged by.
    var accessWithLegacyTokens: AccessConfiguration {
        var access = self.access
        if let token = adminToken {
            access.tokens.append(NamedToken(name: AccessConfiguration.legacyAdminName, secret: token))
            access.admin.append(AccessConfiguration.legacyAdminName)
        }
        if let token = ingestToken {
            access.tokens.append(NamedToken(name: AccessConfiguration.legacyIngestName, secret: token))
            access.ingest.append(AccessConfiguration.legacyIngestName)
        }
        return access
    }
}
