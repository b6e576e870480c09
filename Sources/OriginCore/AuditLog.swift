public import Logging
import Synchronization

/// The audit trail (logger label `hlsorigin.audit`): every admin action, every channel or rendition created, every
/// request refused for its credential or a limit, each with who (`audit.credential`), from where (`audit.remote`),
/// what (`audit.action`) and how it ended (`audit.outcome`). Never a secret, and never a segment push that was taken.
///
/// Refusals are written at most `refusalBurst` at once and `refusalsPerSecond` after that per client address, so a
/// client sending refused requests in a loop cannot fill the disk or drown the log: the next refusal written for
/// that address carries `audit.suppressed`, how many were left out since the last one (`hlsorigin_refusals_total`
/// counts every refusal). Admin actions and creations are always written: credentials and limits bound them.
public final class AuditLog: Sendable {
    /// The logger the entries go to.
    public let logger: Logger
    /// Refusals written at once for one client address before the rate applies.
    public static let refusalBurst = 20
    /// Refusals written per second for one client address after the burst.
    public static let refusalsPerSecond = 10
    /// Client addresses whose refusals are counted separately; past it, new addresses share one budget.
    static let trackedAddresses = 1024

    private let budgets = Mutex(RefusalBudgets())
    private let clock: any OriginClock

    /// - Parameters:
    ///   - logger: where the entries go.
    ///   - clock: the origin's clock, which the refusal rate is counted on.
    public init(logger: Logger, clock: any OriginClock) {
        self.logger = logger
        self.clock = clock
    }

    /// Writes one entry at `notice` (refusals at `warning`, within their rate).
    /// - Parameters:
    ///   - action: what was asked, e.g. `POST /admin/reload`, `channel created`, `push refused`.
    ///   - outcome: how it ended: a status, `created`, a refusal reason.
    public func record(
        _ action: String, by requester: Requester, outcome: String, refused: Bool = false,
        details: Logger.Metadata = [:]
    ) {
        var metadata = details
        if refused {
            let now = clock.nowMilliseconds()
            guard let suppressed = budgets.withLock({ $0.take(address: requester.address, nowMilliseconds: now) })
            else { return }
            if suppressed > 0 { metadata["audit.suppressed"] = "\(suppressed)" }
        }
        metadata["audit.action"] = "\(action)"
        metadata["audit.credential"] = "\(requester.credential)"
        metadata["audit.remote"] = "\(requester.address)"
        metadata["audit.outcome"] = "\(outcome)"
        logger.log(level: refused ? .warning : .notice, "\(action)", metadata: metadata)
    }
}

/// Token buckets of refusal entries per client address.
struct RefusalBudgets {
    private struct Budget {
        var bucket = TokenBucket()
        /// Refusals left out since the last one written.
        var suppressed = 0
    }

    private var budgets: [String: Budget] = [:]
    /// The budget addresses share once `AuditLog.trackedAddresses` are tracked.
    static let otherAddresses = "*"
    private static let perMinute = AuditLog.refusalsPerSecond * 60

    /// Takes one entry for `address`: nil when it is to be left out, else how many were left out before it.
    mutating func take(address: String, nowMilliseconds now: Int64) -> Int? {
        var key = address
        if budgets[key] == nil && budgets.count >= AuditLog.trackedAddresses {
            // Forget the addresses whose bucket is full again and that left nothing out: they would start the same.
            budgets = budgets.filter { _, budget in
                budget.suppressed > 0
                    || !budget.bucket.isFull(
                        capacity: AuditLog.refusalBurst, perMinute: Self.perMinute, nowMilliseconds: now)
            }
            if budgets.count >= AuditLog.trackedAddresses { key = Self.otherAddresses }
        }
        var budget = budgets[key] ?? Budget()
        defer { budgets[key] = budget }
        let wait = budget.bucket.take(capacity: AuditLog.refusalBurst, perMinute: Self.perMinute, nowMilliseconds: now)
        guard wait == nil else {
            budget.suppressed += 1
            return nil
        }
        defer { budget.suppressed = 0 }
        return budget.suppressed
    }
}
