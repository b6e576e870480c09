import LiveTimeline
import Logging
import Synchronization

/// Bounds on what pushes can make the origin hold (`limits:` in the configuration, docs/security.md). A push past a
/// bound is refused with the reason and changes nothing already served; a reload changes them live.
public struct OriginLimits: Sendable, Hashable {
    /// Most channels, configured ones included: a push that would create another is refused (403). Default: 100.
    public var channels: Int
    /// Most renditions of a channel (subtitle renditions included): a push that would add another is refused (403).
    /// Default: 32.
    public var renditionsPerChannel: Int
    /// Most bytes a channel holds in memory (its renditions' listed, retained and held segments and init sections):
    /// a push to a channel at the bound is refused (429) until its window slides. Default: 1 GiB.
    public var channelMemoryBytes: Int64
    /// Most bytes a channel's durable store holds on disk: a push that would cross it first evicts the channel's
    /// oldest time-shift (never a listed or retained segment, nor one a recording pins), and is refused (429) only
    /// if that is not enough. Default: 100 GiB.
    public var channelDiskBytes: Int64
    /// Most channels pushes create in a minute (a token bucket: this many at once, then one every 60/n seconds);
    /// past it a push that would create one is refused (429, `Retry-After`). Default: 10.
    public var autoCreationsPerMinute: Int

    public init(
        channels: Int = 100, renditionsPerChannel: Int = 32, channelMemoryBytes: Int64 = 1 << 30,
        channelDiskBytes: Int64 = 100 << 30, autoCreationsPerMinute: Int = 10
    ) {
        self.channels = channels
        self.renditionsPerChannel = renditionsPerChannel
        self.channelMemoryBytes = channelMemoryBytes
        self.channelDiskBytes = channelDiskBytes
        self.autoCreationsPerMinute = autoCreationsPerMinute
    }
}

/// Who a push or an admin request comes from, as the audit log names it: the name of the credential (a token's
/// configured name, `loopback` for a loopback client without one, `none`), never a secret, and the client's address.
public struct Requester: Sendable, Hashable {
    /// The credential's name.
    public var credential: String
    /// The client's IP address as text; `unknown` if the server did not say.
    public var address: String

    public init(credential: String, address: String?) {
        self.credential = credential
        self.address = address ?? "unknown"
    }

    /// A push from inside the process (the test source, a peer's repair, tests).
    public static let process = Requester(credential: "process", address: "local")
}

/// A token bucket counted in thousandths of a token, so it refills smoothly: `capacity` tokens at once, then
/// `perMinute` a minute. Full until first used; a clock that goes back refills nothing.
struct TokenBucket {
    private var available: Int64 = -1
    private var updatedMilliseconds: Int64 = 0

    /// Takes one token; nil if taken, else the milliseconds until one is available.
    mutating func take(capacity: Int, perMinute: Int, nowMilliseconds now: Int64) -> Int64? {
        let full = Int64(capacity) * 1000
        if available < 0 {
            available = full
        } else if now > updatedMilliseconds {
            // perMinute tokens per 60,000 ms: perMinute * 1000 thousandths per 60,000 ms.
            available = min(full, available + (now - updatedMilliseconds) * Int64(perMinute) / 60)
        }
        updatedMilliseconds = max(updatedMilliseconds, now)
        available = min(available, full)
        if available >= 1000 {
            available -= 1000
            return nil
        }
        return ((1000 - available) * 60 + Int64(perMinute) - 1) / Int64(perMinute)
    }

    /// Whether the bucket is full at `now` (so forgetting it changes nothing).
    func isFull(capacity: Int, perMinute: Int, nowMilliseconds now: Int64) -> Bool {
        available < 0 || available + max(0, now - updatedMilliseconds) * Int64(perMinute) / 60 >= Int64(capacity) * 1000
    }
}

/// The channel creations pushes may still make: a token bucket of `autoCreationsPerMinute`, on the shared clock.
struct CreationBudget {
    private var bucket = TokenBucket()

    /// Takes one creation; nil if taken, else the seconds until one is available.
    mutating func take(perMinute: Int, nowMilliseconds now: Int64) -> Int? {
        guard perMinute > 0 else { return 60 }
        return bucket.take(capacity: perMinute, perMinute: perMinute, nowMilliseconds: now).map {
            Int(($0 + 999) / 1000)
        }
    }
}

extension IngestError {
    static func channelLimit(_ name: String, limit: Int) -> IngestError {
        IngestError(
            .channelLimit,
            "channel '\(name)' not created: the origin has \(limit) channels, its limit (limits.channels)")
    }
    static func renditionLimit(_ channel: String, _ rendition: String, limit: Int) -> IngestError {
        IngestError(
            .renditionLimit,
            "rendition '\(rendition)' not created: channel '\(channel)' has \(limit) renditions, its limit "
                + "(limits.renditionsPerChannel)")
    }
    static func creationRate(_ name: String, perMinute: Int, retryAfter: Int) -> IngestError {
        IngestError(
            .creationRate,
            "channel '\(name)' not created: pushes created \(perMinute) channels in the last minute, the limit "
                + "(limits.autoCreationsPerMinute); retry in \(retryAfter) s",
            retryAfterSeconds: retryAfter)
    }
    static func memoryLimit(
        _ channel: String, holding: Int64, adding: Int, limit: Int64, retryAfter: Int
    )
        -> IngestError
    {
        IngestError(
            .memoryLimit,
            "channel '\(channel)' holds \(holding) bytes in memory; \(adding) more would pass its limit of \(limit) "
                + "(limits.channelMemoryBytes): nothing was accepted",
            retryAfterSeconds: retryAfter)
    }
    static func diskLimit(
        _ channel: String, holding: Int64, adding: Int, limit: Int64, retryAfter: Int
    )
        -> IngestError
    {
        IngestError(
            .diskLimit,
            "channel '\(channel)' holds \(holding) bytes on disk with no time-shift left to evict; \(adding) more "
                + "would pass its limit of \(limit) (limits.channelDiskBytes): nothing was accepted",
            retryAfterSeconds: retryAfter)
    }
}
