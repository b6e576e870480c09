import Synchronization

/// How a channel's durable store fares, as its writes report it: the newest failure and when failures started,
/// until a write succeeds again, and the failed writes since the start (the channel status and metrics). One owned
/// part of `Channel`: it holds its lock (a leaf, held only to copy or swap) and the state it guards.
final class StorageHealth: Sendable {
    private let current: Mutex<(message: String, sinceMilliseconds: Int64)?>
    private let writeFailures = Atomic<Int>(0)
    private let space = Mutex<String?>(nil)

    /// Healthy, or failing since `now` with `message` (a store unreadable at start).
    init(failure message: String?, nowMilliseconds now: Int64) {
        current = Mutex(message.map { ($0, now) })
    }

    /// The newest failure and when failures started; nil while healthy.
    var failure: (message: String, sinceMilliseconds: Int64)? { current.withLock { $0 } }

    /// Why the store's file system is nearly full while its writes still succeed (under `storage.minFreeBytes`
    /// with no time-shift left to evict: `Origin`'s free-space check sets it every second); nil otherwise.
    var lowSpace: String? {
        get { space.withLock { $0 } }
        set { space.withLock { $0 = newValue } }
    }

    /// Failed store writes since the start.
    var failedWrites: Int { writeFailures.load(ordering: .relaxed) }

    /// Records a failed write. Returns true when it starts a failing period (the caller logs it as an error).
    func fail(_ message: String, nowMilliseconds now: Int64) -> Bool {
        writeFailures.add(1, ordering: .relaxed)
        return current.withLock { failure -> Bool in
            defer { failure = (message, failure?.sinceMilliseconds ?? now) }
            return failure == nil
        }
    }

    /// A write succeeded: the failure is cleared (with `only`, just a failure whose message starts with it).
    /// Returns the cleared message, nil when nothing was cleared. Healthy, it reads the lock once.
    func recover(only prefix: String? = nil) -> String? {
        guard current.withLock({ $0 != nil }) else { return nil }
        return current.withLock { failure -> String? in
            guard let message = failure?.message, prefix.map({ message.hasPrefix($0) }) ?? true else { return nil }
            failure = nil
            return message
        }
    }
}
