import Foundation
import LiveTimeline
import SharedBytes

/// The origin's channels by name and in order, behind one lock, with the condition a push waits on when it found
/// them not ready (a channel being built by another push, a channel being reloaded). Every change goes through
/// `change`, which announces it when it returns, so a new kind of change cannot forget to wake the waiters.
/// The lock is held only to look up or insert, never while a channel is built (which reads journal files) or while
/// another lock is taken (`LockRank.originDirectory`).
final class OriginDirectory: Sendable {
    /// The channels by name, and their names in configuration (then creation) order.
    struct Channels {
        var byName: [String: Channel] = [:]
        var order: [String] = []
        /// Channels being built for a push (counted against `limits.channels` until inserted or given up).
        var reserved: Set<String> = []
    }

    private let channels: RankedMutex<Channels>
    private let changes = DirectoryChanges()

    init(_ channels: Channels) {
        self.channels = RankedMutex(channels, rank: .originDirectory)
    }

    /// Reads the directory under its lock (every GET looks its channel up here).
    func read<Value: Sendable>(_ body: (Channels) -> Value) -> Value {
        channels.withLock { body($0) }
    }

    /// Changes the directory under its lock, then wakes the pushes waiting for a change.
    @discardableResult
    func change<Value: Sendable>(_ body: (inout Channels) -> Value) -> Value {
        defer { changes.announce() }
        return channels.withLock { body(&$0) }
    }

    /// Reserves `name` for a channel a push builds, within `channelLimit` (built and reserved channels): nil while
    /// another push builds it (wait for a change); the channel if it exists; `channelLimit` refused. Announces
    /// nothing: waiters wait for a reservation to end (`change`), not to start.
    func reserve(_ name: String, channelLimit: Int) -> Result<Channel?, IngestError>? {
        channels.withLock { directory -> Result<Channel?, IngestError>? in
            if let raced = directory.byName[name] { return .success(raced) }
            // Another push is building it: wait for that one (a ladder's renditions start together).
            guard !directory.reserved.contains(name) else { return nil }
            guard directory.byName.count + directory.reserved.count < channelLimit else {
                return .failure(.channelLimit(name, limit: channelLimit))
            }
            directory.reserved.insert(name)
            return .success(nil)
        }
    }

    /// Wakes the waiting pushes for a change of a listed channel object rather than of the directory: a reload
    /// forwarded a retired channel to its successor, or put a channel it could not replace back in service.
    func channelReplaced() { changes.announce() }

    /// The changes announced so far: read before an attempt, then `wait(after:until:)` if it failed.
    var generation: Int { changes.generation }

    /// Waits until a change after `seen` was announced, or until `end`.
    func wait(after seen: Int, until end: ContinuousClock.Instant) { changes.wait(after: seen, until: end) }
}

/// A generation count with a condition: a thread that found the channel directory not ready (a channel being built
/// by another push, a channel being reloaded) reads `generation`, and after its failed attempt waits for a change
/// after it, instead of sleeping and trying again. Held alone.
private final class DirectoryChanges: @unchecked Sendable {
    private let condition = NSCondition()
    private var count = 0

    /// The changes announced so far.
    var generation: Int {
        condition.lock()
        defer { condition.unlock() }
        return count
    }

    /// A change: wakes every waiter.
    func announce() {
        condition.lock()
        count += 1
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until a change after `seen` was announced, or until `end`.
    func wait(after seen: Int, until end: ContinuousClock.Instant) {
        condition.lock()
        defer { condition.unlock() }
        while count == seen {
            let left = ContinuousClock.now.duration(to: end)
            guard left > .zero else { return }
            _ = condition.wait(until: Date(timeIntervalSinceNow: left.inSeconds))
        }
    }
}
