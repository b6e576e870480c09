import Glibc
import Synchronization

/// The one clock every channel reads: PDT anchors, slot deadlines, marker times, retention.
///
/// Nothing in the core reads the time any other way, so tests drive minutes of stream time in milliseconds with a
/// `ManualClock`.
public protocol OriginClock: Sendable {
    /// Wall-clock time in microseconds since 1970-01-01T00:00:00Z.
    func nowMicroseconds() -> Int64
}

extension OriginClock {
    /// Wall-clock time in milliseconds since the Unix epoch.
    public func nowMilliseconds() -> Int64 { nowMicroseconds() / 1000 }
}

/// The system wall clock (`CLOCK_REALTIME`), optionally shifted by a fixed offset.
public struct SystemClock: OriginClock {
    /// Added to the system time, in microseconds (configuration `clock.offsetMilliseconds`).
    public let offsetMicroseconds: Int64

    public init(offsetMicroseconds: Int64 = 0) {
        self.offsetMicroseconds = offsetMicroseconds
    }

    public func nowMicroseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1_000_000 + Int64(spec.tv_nsec) / 1000 + offsetMicroseconds
    }
}

/// A clock that only moves when told to; for tests.
public final class ManualClock: OriginClock {
    private let now: Mutex<Int64>

    /// Starts at `microseconds` since the epoch (default 2026-01-01T00:00:00Z).
    public init(microseconds: Int64 = 1_767_225_600_000_000) {
        now = Mutex(microseconds)
    }

    public func nowMicroseconds() -> Int64 { now.withLock { $0 } }

    /// Moves the clock forward.
    public func advance(microseconds: Int64) {
        now.withLock { $0 += microseconds }
    }

    /// Moves the clock forward by `seconds`.
    public func advance(seconds: Double) {
        advance(microseconds: Int64((seconds * 1_000_000).rounded()))
    }
}
