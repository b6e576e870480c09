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

/// What a `BackgroundLane` step asks for when it returns: the lane moves on, or runs the same step again after a wait.
public enum LaneStep: Sendable, Equatable {
    /// The step is finished; the lane runs the next one.
    case done
    /// Run this step again after `after` (a retry's back-off); the steps behind it wait, and no thread waits meanwhile
    /// (the lane is resumed by `BackgroundWork.run(after:)`).
    case again(after: Duration)
}

/// Work that must run in order on background-work threads, one item at a time: a channel's changes to a shared
/// marker book made from the pushed stream (each a database round trip that no push may wait for, and an out-point
/// must be stored before its cue-in). At most `limit` items wait; more are refused (a database that stays away must
/// not grow memory without bound). A step that must be tried again later returns `.again(after:)`: it keeps its
/// place at the head of the lane and no background-work thread sleeps through the wait.
public final class BackgroundLane: Sendable {
    private struct State {
        /// Each step with the number of times it ran already.
        var waiting: [(step: @Sendable (_ attempt: Int) -> LaneStep, attempt: Int)] = []
        /// A drain is under way or scheduled (a step waits for its retry): new work only queues.
        var draining = false
        /// A step runs on a background-work thread right now.
        var running = false
    }

    private let limit: Int
    private let state = Mutex(State())
    /// Where a drain runs, now (`.zero`) or after a retry's wait.
    private let schedule: @Sendable (_ after: Duration, _ work: @escaping @Sendable () -> Void) -> Void

    public convenience init(limit: Int) {
        self.init(limit: limit) { delay, work in
            if delay <= .zero { BackgroundWork.run(work) } else { BackgroundWork.run(after: delay, work) }
        }
    }

    /// A lane whose drains run where `schedule` puts them (a test's own queue, away from the process's backlog of
    /// background work).
    init(limit: Int, schedule: @escaping @Sendable (_ after: Duration, _ work: @escaping @Sendable () -> Void) -> Void) {
        self.limit = limit
        self.schedule = schedule
    }

    /// Queues `work` behind the lane's earlier work; a background-work thread runs it.
    /// - Returns: false when `limit` items already wait (`work` is dropped).
    @discardableResult
    public func run(_ work: @escaping @Sendable () -> Void) -> Bool {
        runStep { _ in
            work()
            return .done
        }
    }

    /// Queues `step` behind the lane's earlier work; a background-work thread runs it (`attempt` 0), again after
    /// the wait it returns with `.again(after:)` (`attempt` 1, 2, ...) until it returns `.done`.
    /// - Returns: false when `limit` items already wait (`step` is dropped).
    @discardableResult
    public func runStep(_ step: @escaping @Sendable (_ attempt: Int) -> LaneStep) -> Bool {
        let (queued, start) = state.withLock { state -> (Bool, Bool) in
            guard state.waiting.count < limit else { return (false, false) }
            state.waiting.append((step, 0))
            guard !state.draining else { return (true, false) }
            state.draining = true
            return (true, true)
        }
        if start { schedule(.zero) { self.drain() } }
        return queued
    }

    /// Whether a step runs on a background-work thread at this instant (false while a step waits for its retry).
    var isRunning: Bool { state.withLock { $0.running } }

    private func drain() {
        while let next = state.withLock({ state -> (step: @Sendable (_ attempt: Int) -> LaneStep, attempt: Int)? in
            guard !state.waiting.isEmpty else {
                state.draining = false
                return nil
            }
            state.running = true
            return state.waiting.removeFirst()
        }) {
            let outcome = next.step(next.attempt)
            state.withLock { state in
                state.running = false
                // Back at the head, over the limit if need be: it was accepted already.
                if case .again = outcome { state.waiting.insert((next.step, next.attempt + 1), at: 0) }
            }
            if case .again(let delay) = outcome {
                schedule(delay) { self.drain() }
                return
            }
        }
    }
}
