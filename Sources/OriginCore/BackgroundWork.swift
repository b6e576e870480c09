import Dispatch
import SharedBytes
import Synchronization

/// The origin's one place for work that blocks and must not run where it was asked for: database round trips
/// (a shared marker book read again after a notification, a recordings reconciliation, a prune of shared markers,
/// an admin call waiting for the database), the retries of those reads, and stopping the HTTP listeners (which
/// waits for libmicrohttpd's threads). Neither libmicrohttpd's threads (they serve players) nor the Swift
/// concurrency pool (two threads on two cores; a blocked one stalls every task) may wait for those, so they run on
/// this one concurrent queue of threads, labelled `hlsorigin.background-work` in a debugger or `top -H`.
/// Loops that only wait for time or events are tasks of `OriginService`'s service group instead.
public enum BackgroundWork {
    private static let queue = DispatchQueue(
        label: "hlsorigin.background-work", qos: .utility, attributes: .concurrent)

    /// Runs `work` on a background-work thread, now.
    public static func run(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }

    /// Runs `work` on a background-work thread after `delay` (a retry's back-off).
    public static func run(after delay: Duration, _ work: @escaping @Sendable () -> Void) {
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: max(delay.wholeNanoseconds, 0))), execute: work)
    }

    /// Runs `work` on a background-work thread and returns its result to the awaiting task, which is suspended
    /// meanwhile (its thread serves other tasks).
    public static func perform<Value: Sendable>(_ work: @escaping @Sendable () -> Value) async -> Value {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: work()) }
        }
    }
}

/// Work that must run in order on background-work threads, one item at a time: a channel's changes to a shared
/// marker book made from the pushed stream (each a database round trip that no push may wait for, and an out-point
/// must be stored before its cue-in). At most `limit` items wait; more are refused (a database that stays away must
/// not grow memory without bound).
public final class BackgroundLane: Sendable {
    private let limit: Int
    private let state = Mutex<(waiting: [@Sendable () -> Void], draining: Bool)>(([], false))

    public init(limit: Int) {
        self.limit = limit
    }

    /// Queues `work` behind the lane's earlier work; a background-work thread runs it.
    /// - Returns: false when `limit` items already wait (`work` is dropped).
    @discardableResult
    public func run(_ work: @escaping @Sendable () -> Void) -> Bool {
        let (queued, start) = state.withLock { state -> (Bool, Bool) in
            guard state.waiting.count < limit else { return (false, false) }
            state.waiting.append(work)
            guard !state.draining else { return (true, false) }
            state.draining = true
            return (true, true)
        }
        if start { BackgroundWork.run { self.drain() } }
        return queued
    }

    private func drain() {
        while let next = state.withLock({ state -> (@Sendable () -> Void)? in
            guard !state.waiting.isEmpty else {
                state.draining = false
                return nil
            }
            return state.waiting.removeFirst()
        }) {
            next()
        }
    }
}
