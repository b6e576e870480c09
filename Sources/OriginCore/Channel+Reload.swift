import Foundation
import LiveTimeline
import SharedBytes
import Synchronization

/// The one door every operation that changes a channel (a push, a part, a marker, a peer's repair, a tick, a hint, a
/// waiting request) goes through: open, it lets operations run side by side; `close()` (retirement) shuts it and
/// waits until the operations already inside have finished. So a retired channel changes no more, and its successor
/// (built after `close()` returned, reading the journals) sees everything the old object acknowledged. An operation
/// that finds the door shut is forwarded to the successor, or refused as retryable.
final class ChannelGate: @unchecked Sendable {
    private let condition = NSCondition()
    private var closed = false
    private var inside = 0

    /// Runs `operation` unless the gate is closed; returns nil when it is.
    func enter<Value, Failure: Error>(_ operation: () throws(Failure) -> Value) throws(Failure) -> Value? {
        condition.lock()
        if closed {
            condition.unlock()
            return nil
        }
        inside += 1
        condition.unlock()
        defer {
            condition.lock()
            inside -= 1
            if inside == 0 { condition.broadcast() }
            condition.unlock()
        }
        return try operation()
    }

    /// Shuts the gate and waits for the operations inside.
    func close() {
        condition.lock()
        closed = true
        while inside > 0 { condition.wait() }
        condition.unlock()
    }

    /// Opens it again (a reload that could not build the successor).
    func reopen() {
        condition.lock()
        closed = false
        condition.unlock()
    }
}

/// A channel object's retirement, one owned part of `Channel`: the gate every change passes, whether a reload
/// retired the object, and the object that replaced it. Each field is a leaf (held to read or set one value).
final class ChannelRetirement: Sendable {
    /// Every changing operation passes it; retirement closes it.
    let gate = ChannelGate()
    /// Set by `retire()` (under the state lock): the channel accepts and ticks no more.
    private let retired = Atomic<Bool>(false)
    /// The channel object that replaced this one after a reload.
    private let successorLink = Mutex<Channel?>(nil)

    var isRetired: Bool { retired.load(ordering: .acquiring) }

    func setRetired(_ value: Bool) { retired.store(value, ordering: .releasing) }

    /// The channel object that replaced this one, once named (`forward(to:)`).
    var successor: Channel? {
        get { successorLink.withLock { $0 } }
        set { successorLink.withLock { $0 = newValue } }
    }
}

/// A reload (`Origin.reload`) replaces the channel object of a channel whose settings changed: the old one retires,
/// the new one continues from the journal and store the old one left, as after a restart of that channel alone.
extension Channel {
    /// True once `retire()` ran: a reload replaced (or removed) this channel object, and answers derived from its
    /// snapshots no longer hold.
    public var isRetired: Bool { retirement.isRetired }

    /// What a push to a retired channel gets: the origin looks the channel up again and retries.
    var reloadingError: IngestError {
        IngestError(.reloading, "channel '\(name)' is being reloaded with new settings: retry")
    }

    /// Ends this object's part: from now on it accepts nothing (pushes get `.reloading`), ticks no more and writes its
    /// state to the journal for its successor to continue from; its waiting blocking reloads are answered now (they
    /// ask again, and reach the successor). Its published snapshot keeps being served until the successor replaces
    /// it in the origin's directory.
    func retire() {
        gate.close()
        let now = clock.nowMilliseconds()
        state.withLock { state in
            retirement.setRetired(true)
            writeJournalNow(&state, nowMilliseconds: now)
        }
        for versions in renditionVersions.withLock({ Array($0.values) }) { versions.setRetired(true) }
        waiters.expire(nowMilliseconds: .max)
    }

    /// The feeds' continuity, for a successor to take (`continueFeeds(of:)`).
    var feedContinuity: [String: FeedContinuity] { state.withLock { $0.feedContinuity } }

    /// Continues the feeds of the retired channel object `predecessor` replaces: its renditions' next segments
    /// continue their timelines (a restart would start a discontinuity at each).
    func continueFeeds(of predecessor: Channel) {
        let continuity = predecessor.feedContinuity
        state.withLock { $0.continueFeeds(continuity) }
    }

    /// Undoes `retire()` when no successor could be built: the channel carries on as it was.
    func resume() {
        state.withLock { _ in retirement.setRetired(false) }
        gate.reopen()
        for versions in renditionVersions.withLock({ Array($0.values) }) { versions.setRetired(false) }
    }

    /// Names the channel object that replaced this retired one: operations that reach this one from now on are
    /// carried out by it.
    func forward(to successor: Channel) {
        retirement.successor = successor
    }

    /// Runs a changing operation through the gate (`ChannelGate`): on this channel while it is live; on its
    /// successor (`forward`) once retired; else (retired, no successor yet) throws `refusal`, which callers answer
    /// as retryable (503 with Retry-After, or the push retried).
    func through<Value, Failure: Error>(
        refusal: @autoclosure () -> Failure, forward: (Channel) throws(Failure) -> Value,
        _ operation: () throws(Failure) -> Value
    ) throws(Failure) -> Value {
        if let value = try gate.enter(operation) { return value }
        if let successor = retirement.successor { return try forward(successor) }
        throw refusal()
    }

    /// `through` for an operation that cannot fail: `otherwise` when retired with no successor yet.
    func through<Value>(
        otherwise: @autoclosure () -> Value, forward: (Channel) -> Value, _ operation: () -> Value
    ) -> Value {
        if let value = gate.enter(operation) { return value }
        if let successor = retirement.successor { return forward(successor) }
        return otherwise()
    }
}
