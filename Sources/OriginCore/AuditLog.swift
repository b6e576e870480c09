import Glibc
import Logging
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
    private let nowMilliseconds: @Sendable () -> Int64

    /// - Parameters:
    ///   - logger: where the entries go.
    ///   - nowMilliseconds: a monotonic clock for the refusal rate (tests pass their own).
    public init(logger: Logger, nowMilliseconds: @escaping @Sendable () -> Int64 = AuditLog.monotonicMilliseconds) {
        self.logger = logger
        self.nowMilliseconds = nowMilliseconds
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
            let now = nowMilliseconds()
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

    /// Milliseconds of `CLOCK_MONOTONIC_COARSE`.
    @Sendable public static func monotonicMilliseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }
}

/// Token buckets of refusal entries per client address.
struct RefusalBudgets {
    private struct Bucket {
        /// Entries that may be written now, in thousandths.
        var available: Int64
        var updatedMilliseconds: Int64
        /// Refusals left out since the last one written.
        var suppressed: Int
    }

    private var buckets: [String: Bucket] = [:]
    /// The budget addresses share once `AuditLog.trackedAddresses` are tracked.
    static let otherAddresses = "*"

    /// Takes one entry for `address`: nil when it is to be left out, else how many were left out before it.
    mutating func take(address: String, nowMilliseconds now: Int64) -> Int? {
        let capacity = Int64(AuditLog.refusalBurst) * 1000
        var key = address
        if buckets[key] == nil && buckets.count >= AuditLog.trackedAddresses {
            forgetRestedBuckets(nowMilliseconds: now, capacity: capacity)
            if buckets.count >= AuditLog.trackedAddresses { key = Self.otherAddresses }
        }
        var bucket = buckets[key] ?? Bucket(available: capacity, updatedMilliseconds: now, suppressed: 0)
        if now > bucket.updatedMilliseconds {
            let refill = (now - bucket.updatedMilliseconds) * Int64(AuditLog.refusalsPerSecond)
            bucket.available = min(capacity, bucket.available + refill)
            bucket.updatedMilliseconds = now
        }
        defer { buckets[key] = bucket }
        guard bucket.available >= 1000 else {
            bucket.suppressed += 1
            return nil
        }
        bucket.available -= 1000
        defer { bucket.suppressed = 0 }
        return bucket.suppressed
    }

    /// Drops the buckets that are full again and left nothing out: they would start the same if asked anew.
    private mutating func forgetRestedBuckets(nowMilliseconds now: Int64, capacity: Int64) {
        let rate = Int64(AuditLog.refusalsPerSecond)
        buckets = buckets.filter { _, bucket in
            let refilled = bucket.available + max(0, now - bucket.updatedMilliseconds) * rate
            return refilled < capacity || bucket.suppressed > 0
        }
    }

    /// Client addresses tracked now (for tests).
    var trackedCount: Int { buckets.count }
}
