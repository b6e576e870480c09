public import HLSPackaging
public import LiveTimeline
public import SharedBytes
import Synchronization

/// What a preload-hinted part request hears while the part is being cut (`Channel.watchPart`).
public enum PartProgress: Sendable {
    /// The next settled bytes of the part.
    case bytes(SharedBytes)
    /// The part is complete: every byte was delivered.
    case complete
    /// The part will not come (its push failed, it became a GAP part, the wait timed out, the server stops).
    case failed
}

/// The Low-Latency requests of one channel waiting for a part: blocking playlist reloads (released by the
/// publish that lists their part) and preload-hinted part requests (fed as the part's bytes arrive). Holds no
/// HTTP objects: each waiter is a closure.
///
/// Per rendition, blocking reloads are kept in buckets by the position they wait for (clients mostly wait for the
/// same next part, so there are few buckets however many waiters), in arrival order, which is also deadline order.
/// A publish looks at nothing when nobody waits (one atomic load), else only at the renditions that have waiters
/// and whose snapshot changed. Reload closures are called outside this lock; part observers are called under it,
/// so each observer hears its part's bytes in order and exactly once.
final class LowLatencyWaiters: Sendable {
    private let state = Mutex(State())
    /// Blocking reloads and part watchers registered (read without the lock by `published` and `expire`).
    private let registered = Atomic<Int>(0)
    /// The earliest deadline of any waiter (`Int64.max` when none), so `expire` costs one load until one is due.
    private let earliestDeadline = Atomic<Int64>(.max)
    /// Counters for `/metrics`.
    let statistics = Statistics()

    init() {}

    /// A snapshot was published (under `Channel.state`): release what it satisfies.
    func published(_ snapshot: ChannelSnapshot, previous: ChannelSnapshot) {
        statistics.countParts(snapshot, previous: previous)
        guard registered.load(ordering: .acquiring) > 0 else { return }
        let start = ContinuousClock.now
        var releases: [(RenditionSnapshot, [Reload])] = []
        state.withLock { state in
            for name in Array(state.renditions.keys) {
                guard let rendition = snapshot.renditions[name], rendition !== previous.renditions[name] else {
                    continue
                }
                let released = state.renditions[name]!.settle(rendition)
                if !released.isEmpty { releases.append((rendition, released)) }
                if state.renditions[name]!.isEmpty { state.renditions[name] = nil }
            }
            noteRegistered(state)
        }
        guard !releases.isEmpty else { return }
        var count = 0
        for (rendition, reloads) in releases {
            for reload in reloads { reload.release(rendition) }
            count += reloads.count
        }
        statistics.recordRelease(count: count, seconds: Self.seconds(ContinuousClock.now - start))
    }

    /// The shared clock reached `now`: waits past their deadline end (blocking reloads: nil, parts: `.failed`).
    func expire(nowMilliseconds now: Int64) {
        guard registered.load(ordering: .acquiring) > 0, now >= earliestDeadline.load(ordering: .acquiring) else {
            return
        }
        let expired = state.withLock { state -> [Reload] in
            var expired: [Reload] = []
            for name in Array(state.renditions.keys) {
                expired += state.renditions[name]!.expire(nowMilliseconds: now, statistics: statistics)
                if state.renditions[name]!.isEmpty { state.renditions[name] = nil }
            }
            noteRegistered(state)
            return expired
        }
        statistics.timeouts.add(expired.count, ordering: .relaxed)
        for reload in expired { reload.release(nil) }
    }

    /// Registers a blocking reload; `rendition` is the published one right after, to check it against (no lost
    /// wake-up: a publish either sees the waiter or happened before `current` was read).
    func insert(
        rendition name: String, until position: PartPosition, wholeSegment: Bool, deadlineMilliseconds: Int64,
        release: @escaping @Sendable (RenditionSnapshot?) -> Void
    ) -> UInt64 {
        state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            let key = ReloadKey(position: position, wholeSegment: wholeSegment)
            state.renditions[name, default: RenditionWaiters()].add(
                Reload(id: id, deadline: deadlineMilliseconds, release: release), key: key)
            noteRegistered(state)
            return id
        }
    }

    /// Takes back a blocking reload not yet released; nil if it was (by a publish or its deadline).
    func remove(rendition name: String, id: UInt64, until position: PartPosition, wholeSegment: Bool) -> Reload? {
        state.withLock { state in
            let key = ReloadKey(position: position, wholeSegment: wholeSegment)
            let removed = state.renditions[name]?.remove(id: id, key: key)
            if state.renditions[name]?.isEmpty == true { state.renditions[name] = nil }
            noteRegistered(state)
            return removed
        }
    }

    /// Registers a part watcher: it hears at once the bytes of the part already received, then the rest; then
    /// settles it against `current` (the part may have been listed meanwhile).
    func watch(
        rendition name: String, position: PartPosition, deadlineMilliseconds: Int64,
        observer: @escaping @Sendable (PartProgress) -> Void, current: () -> RenditionSnapshot?
    ) {
        state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.renditions[name, default: RenditionWaiters()].watch(
                PartWatcher(id: id, deadline: deadlineMilliseconds, observer: observer), at: position)
            noteRegistered(state)
        }
        guard let rendition = current() else { return }
        state.withLock { state in
            _ = state.renditions[name]?.settleWatchers(rendition)
            if state.renditions[name]?.isEmpty == true { state.renditions[name] = nil }
            noteRegistered(state)
        }
    }

    /// A streamed push's progress on the part at `position`; `current` reads the published rendition (for
    /// `.complete`: the part's bytes as listed end its watchers).
    func progress(
        rendition name: String, position: PartPosition, _ progress: PartProgress,
        current: () -> RenditionSnapshot?
    ) {
        switch progress {
        case .bytes(let bytes):
            state.withLock { state in
                state.renditions[name, default: RenditionWaiters()].received(bytes, at: position)
            }
        case .complete:
            guard let rendition = current() else { return }
            state.withLock { state in
                _ = state.renditions[name]?.settleWatchers(rendition)
                if state.renditions[name]?.isEmpty == true { state.renditions[name] = nil }
                noteRegistered(state)
            }
        case .failed:
            state.withLock { state in
                state.renditions[name]?.fail(at: position)
                if state.renditions[name]?.isEmpty == true { state.renditions[name] = nil }
                noteRegistered(state)
            }
        }
    }

    /// Publishes the number of waiters and the earliest deadline for the lock-free checks (under the lock).
    private func noteRegistered(_ state: State) {
        var reloads = 0
        var watchers = 0
        var earliest = Int64.max
        for rendition in state.renditions.values {
            reloads += rendition.reloadCount
            watchers += rendition.watcherCount
            earliest = min(earliest, rendition.earliestDeadline)
        }
        registered.store(reloads + watchers, ordering: .releasing)
        earliestDeadline.store(earliest, ordering: .releasing)
        statistics.waitingReloads.store(reloads, ordering: .relaxed)
        statistics.waitingParts.store(watchers, ordering: .relaxed)
    }

    static func seconds(_ duration: Duration) -> Double { duration.inSeconds }

    // MARK: - State

    /// A blocking playlist reload.
    struct Reload: Sendable {
        let id: UInt64
        let deadline: Int64
        let release: @Sendable (RenditionSnapshot?) -> Void
    }

    /// What a blocking reload waits for.
    struct ReloadKey: Hashable, Comparable {
        let position: PartPosition
        /// Until segment `position.msn` is complete (`_HLS_msn` without `_HLS_part`).
        let wholeSegment: Bool

        /// In the order a rendition satisfies them: a whole segment after its parts.
        static func < (lhs: ReloadKey, rhs: ReloadKey) -> Bool {
            (lhs.position.msn, lhs.wholeSegment ? Int.max : lhs.position.part, lhs.wholeSegment ? 1 : 0)
                < (rhs.position.msn, rhs.wholeSegment ? Int.max : rhs.position.part, rhs.wholeSegment ? 1 : 0)
        }

        /// Whether `rendition` satisfies the wait: its last part reaches the position (or a later segment is
        /// complete), or, for a whole segment, that segment (or a later one) is complete.
        func isSatisfied(by rendition: RenditionSnapshot) -> Bool {
            let complete = rendition.entries.last?.msn
            if wholeSegment { return complete.map { $0 >= position.msn } ?? false }
            if let last = rendition.lowLatency?.lastPart, last >= position { return true }
            return complete.map { $0 > position.msn } ?? false
        }
    }

    /// A preload-hinted part request.
    struct PartWatcher {
        let id: UInt64
        let deadline: Int64
        let observer: @Sendable (PartProgress) -> Void
        /// Bytes of the part it has heard.
        var delivered = 0
    }

    /// Waiters of one channel, by rendition.
    struct State {
        var renditions: [String: RenditionWaiters] = [:]
        var nextID: UInt64 = 0
    }

    /// Waiters of one rendition.
    struct RenditionWaiters {
        /// Blocking reloads by what they wait for, each in arrival order; `keys` ascending.
        var reloads: [ReloadKey: [Reload]] = [:]
        var keys: [ReloadKey] = []
        /// Part watchers by the part they watch.
        var watchers: [PartPosition: [PartWatcher]] = [:]
        /// The part a streamed push is cutting and its settled bytes so far (for watchers that come late).
        var inProgress: (position: PartPosition, chunks: [SharedBytes])?
        private(set) var reloadCount = 0
        private(set) var watcherCount = 0
        private(set) var earliestDeadline = Int64.max

        var isEmpty: Bool { reloadCount == 0 && watcherCount == 0 && inProgress == nil }

        mutating func add(_ reload: Reload, key: ReloadKey) {
            if reloads[key] == nil {
                let index = keys.firstIndex { key < $0 } ?? keys.endIndex
                keys.insert(key, at: index)
            }
            reloads[key, default: []].append(reload)
            reloadCount += 1
            earliestDeadline = min(earliestDeadline, reload.deadline)
        }

        mutating func remove(id: UInt64, key: ReloadKey) -> Reload? {
            guard let index = reloads[key]?.firstIndex(where: { $0.id == id }) else { return nil }
            let reload = reloads[key]!.remove(at: index)
            if reloads[key]!.isEmpty {
                reloads[key] = nil
                keys.removeAll { $0 == key }
            }
            reloadCount -= 1
            return reload
        }

        mutating func watch(_ watcher: PartWatcher, at position: PartPosition) {
            var watcher = watcher
            if let inProgress, inProgress.position == position {
                for chunk in inProgress.chunks {
                    watcher.observer(.bytes(chunk))
                    watcher.delivered += chunk.count
                }
            }
            watchers[position, default: []].append(watcher)
            watcherCount += 1
            earliestDeadline = min(earliestDeadline, watcher.deadline)
        }

        /// Settled bytes of the part at `position`: kept for late watchers, heard by the present ones.
        mutating func received(_ bytes: SharedBytes, at position: PartPosition) {
            if inProgress?.position != position { inProgress = (position, []) }
            inProgress!.chunks.append(bytes)
            guard watchers[position] != nil else { return }
            for index in watchers[position]!.indices {
                watchers[position]![index].observer(.bytes(bytes))
                watchers[position]![index].delivered += bytes.count
            }
        }

        /// The part at `position` will not come: its watchers fail.
        mutating func fail(at position: PartPosition) {
            if inProgress?.position == position { inProgress = nil }
            guard let failed = watchers.removeValue(forKey: position) else { return }
            for watcher in failed { watcher.observer(.failed) }
            watcherCount -= failed.count
        }

        /// Releases the reloads `rendition` satisfies (returned, to be called outside the lock) and ends the part
        /// watchers it decides.
        mutating func settle(_ rendition: RenditionSnapshot) -> [Reload] {
            var released: [Reload] = []
            // Few keys (clients wait for the next parts): look at each, not only at the first.
            for key in keys where key.isSatisfied(by: rendition) {
                released += reloads.removeValue(forKey: key) ?? []
            }
            if !released.isEmpty { keys.removeAll { reloads[$0] == nil } }
            reloadCount -= released.count
            settleWatchers(rendition)
            recomputeEarliest()
            return released
        }

        /// Ends the watchers of parts `rendition` lists (the rest of their bytes, then `.complete`; a GAP part:
        /// `.failed`) or can no longer list (a later part or a complete segment exists without it: `.failed`).
        mutating func settleWatchers(_ rendition: RenditionSnapshot) {
            guard !watchers.isEmpty else {
                if let inProgress, let last = rendition.lowLatency?.lastPart, last >= inProgress.position {
                    self.inProgress = nil
                }
                return
            }
            let lastPart = rendition.lowLatency?.lastPart
            let complete = rendition.entries.last?.msn
            for position in Array(watchers.keys) {
                if let part = rendition.lowLatency?.part(position) {
                    let ended = watchers.removeValue(forKey: position)!
                    watcherCount -= ended.count
                    guard let bytes = part.bytes else {
                        for watcher in ended { watcher.observer(.failed) }
                        continue
                    }
                    for watcher in ended {
                        if watcher.delivered < bytes.count {
                            let rest = bytes.withUnsafeBytes {
                                SharedBytes(copying: UnsafeRawBufferPointer(rebasing: $0[watcher.delivered...]))
                            }
                            watcher.observer(.bytes(rest))
                        }
                        watcher.observer(.complete)
                    }
                } else if lastPart.map({ $0 > position }) ?? false || complete.map({ $0 >= position.msn }) ?? false {
                    let ended = watchers.removeValue(forKey: position)!
                    watcherCount -= ended.count
                    for watcher in ended { watcher.observer(.failed) }
                }
            }
            if let inProgress, let lastPart, lastPart >= inProgress.position { self.inProgress = nil }
            recomputeEarliest()
        }

        /// Ends the waits whose deadline passed: part watchers fail here, reloads are returned.
        mutating func expire(nowMilliseconds now: Int64, statistics: Statistics) -> [Reload] {
            guard earliestDeadline <= now else { return [] }
            var expired: [Reload] = []
            for key in keys {
                // Each bucket is in arrival order, which is deadline order (every wait lasts 3 target durations).
                let bucket = reloads[key]!
                let due = bucket.prefix { $0.deadline <= now }
                guard !due.isEmpty else { continue }
                expired += due
                reloads[key] = due.count == bucket.count ? nil : Array(bucket.dropFirst(due.count))
            }
            keys.removeAll { reloads[$0] == nil }
            reloadCount -= expired.count
            var partTimeouts = 0
            for position in Array(watchers.keys) {
                let bucket = watchers[position]!
                let due = bucket.prefix { $0.deadline <= now }
                guard !due.isEmpty else { continue }
                for watcher in due { watcher.observer(.failed) }
                partTimeouts += due.count
                watchers[position] = due.count == bucket.count ? nil : Array(bucket.dropFirst(due.count))
            }
            watcherCount -= partTimeouts
            statistics.timeouts.add(partTimeouts, ordering: .relaxed)
            recomputeEarliest()
            return expired
        }

        /// The earliest deadline: the first of each bucket (buckets are in deadline order).
        private mutating func recomputeEarliest() {
            var earliest = Int64.max
            for bucket in reloads.values { earliest = min(earliest, bucket.first?.deadline ?? .max) }
            for bucket in watchers.values { earliest = min(earliest, bucket.first?.deadline ?? .max) }
            earliestDeadline = earliest
        }
    }

    // MARK: - Statistics

    /// What `/metrics` shows of a channel's Low-Latency serving.
    final class Statistics: Sendable {
        /// Parts listed (GAP parts included), counted at each publish.
        let partsListed = Atomic<Int>(0)
        /// Blocking reloads waiting now.
        let waitingReloads = Atomic<Int>(0)
        /// Preload-hinted part requests waiting now.
        let waitingParts = Atomic<Int>(0)
        /// Waits that reached their deadline (answered 503 or, for parts, ended).
        let timeouts = Atomic<Int>(0)
        /// Upper bounds (seconds) of the release-time histogram's buckets.
        static let releaseBuckets: [Double] = [
            0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1,
        ]
        private let release = Mutex(ReleaseHistogram())

        struct ReleaseHistogram {
            var counts = [Int](repeating: 0, count: Statistics.releaseBuckets.count)
            var total = 0
            var sum = 0.0
        }

        /// A publish released `count` reloads in `seconds` (from the publish to the last release call).
        func recordRelease(count: Int, seconds: Double) {
            release.withLock { histogram in
                for (index, bound) in Self.releaseBuckets.enumerated() where seconds <= bound {
                    histogram.counts[index] += 1
                }
                histogram.total += 1
                histogram.sum += seconds
            }
        }

        /// The release histogram: cumulative counts per bucket, count, sum.
        var releaseHistogram: (cumulative: [(upperBound: Double, count: Int)], count: Int, sum: Double) {
            let histogram = release.withLock { $0 }
            let cumulative: [(upperBound: Double, count: Int)] = zip(Self.releaseBuckets, histogram.counts).map {
                (upperBound: $0.0, count: $0.1)
            }
            return (cumulative, histogram.total, histogram.sum)
        }

        /// Counts the parts `snapshot` lists beyond what `previous` did (renditions whose snapshot changed).
        func countParts(_ snapshot: ChannelSnapshot, previous: ChannelSnapshot) {
            var added = 0
            for (name, rendition) in snapshot.renditions {
                let before = previous.renditions[name]
                guard rendition !== before, let low = rendition.lowLatency, let last = low.lastPart else { continue }
                guard let old = before?.lowLatency?.lastPart else {
                    added += last.part + 1
                    continue
                }
                guard last > old else { continue }
                if last.msn == old.msn {
                    added += last.part - old.part
                } else if last.msn - old.msn <= 8 {
                    added += max(0, (low.parts[old.msn]?.count ?? old.part + 1) - old.part - 1)
                    var msn = old.msn + 1
                    while msn < last.msn {
                        added += low.parts[msn]?.count ?? 0
                        msn += 1
                    }
                    added += last.part + 1
                } else {
                    added += last.part + 1
                }
            }
            if added > 0 { partsListed.add(added, ordering: .relaxed) }
        }
    }
}

/// A channel's Low-Latency serving counters (`/metrics`).
public struct LowLatencyServingStatus: Sendable {
    /// Parts listed since the start (GAP parts included).
    public let partsListed: Int
    /// Blocking playlist reloads waiting now.
    public let waitingReloads: Int
    /// Preload-hinted part requests waiting now.
    public let waitingParts: Int
    /// Waits that reached their deadline since the start.
    public let timeouts: Int
    /// Publishes that released blocking reloads: cumulative count per upper bound (seconds from the publish to the
    /// last release), their number and the sum of their seconds.
    public let releaseBuckets: [(upperBound: Double, count: Int)]
    public let releaseCount: Int
    public let releaseSeconds: Double
}

extension Channel {
    /// Calls `release` once: with the rendition's first published snapshot whose last part reaches `position`
    /// (`wholeSegment`: whose segment `position.msn` is complete), at once if the current one does; with nil at
    /// `deadlineMilliseconds` (shared clock) or when the channel stops.
    public func waitForPart(
        rendition: String, until position: PartPosition, wholeSegment: Bool, deadlineMilliseconds: Int64,
        release: @escaping @Sendable (RenditionSnapshot?) -> Void
    ) {
        // Registered inside the gate: retirement (which answers every waiter) waits for it; after it, the successor
        // takes the wait, or, with none yet, it is answered at once.
        through(
            otherwise: release(nil),
            forward: {
                $0.waitForPart(
                    rendition: rendition, until: position, wholeSegment: wholeSegment,
                    deadlineMilliseconds: deadlineMilliseconds, release: release)
            }
        ) {
            waitForPartHere(
                rendition: rendition, until: position, wholeSegment: wholeSegment,
                deadlineMilliseconds: deadlineMilliseconds, release: release)
        }
    }

    private func waitForPartHere(
        rendition: String, until position: PartPosition, wholeSegment: Bool, deadlineMilliseconds: Int64,
        release: @escaping @Sendable (RenditionSnapshot?) -> Void
    ) {
        let key = LowLatencyWaiters.ReloadKey(position: position, wholeSegment: wholeSegment)
        if let current = snapshot.renditions[rendition], key.isSatisfied(by: current) {
            release(current)
            return
        }
        let id = waiters.insert(
            rendition: rendition, until: position, wholeSegment: wholeSegment,
            deadlineMilliseconds: deadlineMilliseconds, release: release)
        // A publish between the check above and the insert did not see this waiter: check again.
        guard let current = snapshot.renditions[rendition], key.isSatisfied(by: current),
            let reload = waiters.remove(rendition: rendition, id: id, until: position, wholeSegment: wholeSegment)
        else { return }
        reload.release(current)
    }

    /// Feeds `observer` the bytes of the part at `position` as they are cut, then `.complete` (or `.failed`);
    /// false when that part is not the rendition's part in progress or the next one (the caller answers 404).
    /// A part already listed (with bytes) is accepted too: its observer hears all of it at once.
    public func watchPart(
        rendition: String, position: PartPosition, deadlineMilliseconds: Int64,
        observer: @escaping @Sendable (PartProgress) -> Void
    ) -> Bool {
        through(
            otherwise: false,
            forward: {
                $0.watchPart(
                    rendition: rendition, position: position, deadlineMilliseconds: deadlineMilliseconds,
                    observer: observer)
            }
        ) {
            watchPartHere(
                rendition: rendition, position: position, deadlineMilliseconds: deadlineMilliseconds,
                observer: observer)
        }
    }

    private func watchPartHere(
        rendition: String, position: PartPosition, deadlineMilliseconds: Int64,
        observer: @escaping @Sendable (PartProgress) -> Void
    ) -> Bool {
        guard let current = snapshot.renditions[rendition], let lowLatency = current.lowLatency else { return false }
        if let listed = lowLatency.part(position) {
            guard listed.bytes != nil else { return false }
        } else {
            guard let hint = lowLatency.preloadHint, Self.isHintedOrNext(position, hint: hint) else { return false }
        }
        waiters.watch(
            rendition: rendition, position: position, deadlineMilliseconds: deadlineMilliseconds, observer: observer
        ) { snapshot.renditions[rendition] }
        return true
    }

    /// Whether `position` is the hinted part or the one after it (in the same segment or the next one's first).
    public static func isHintedOrNext(_ position: PartPosition, hint: PartPosition) -> Bool {
        position == hint || position == PartPosition(msn: hint.msn, part: hint.part + 1)
            || position == PartPosition(msn: hint.msn + 1, part: 0)
    }

    /// A streamed push's progress on the part at `position` (called by `StreamingPush`, outside the state lock):
    /// `.bytes` for each settled piece of the part being cut, `.complete` after the part is listed (optional: the
    /// publish that lists it ends its watchers), `.failed` when the push ends without listing it.
    func partProgress(rendition: String, position: PartPosition, _ progress: PartProgress) {
        waiters.progress(rendition: rendition, position: position, progress) { snapshot.renditions[rendition] }
    }

    /// Low-Latency serving counters for `/metrics`.
    public var lowLatencyServing: LowLatencyServingStatus {
        let statistics = waiters.statistics
        let histogram = statistics.releaseHistogram
        return LowLatencyServingStatus(
            partsListed: statistics.partsListed.load(ordering: .relaxed),
            waitingReloads: statistics.waitingReloads.load(ordering: .relaxed),
            waitingParts: statistics.waitingParts.load(ordering: .relaxed),
            timeouts: statistics.timeouts.load(ordering: .relaxed), releaseBuckets: histogram.cumulative,
            releaseCount: histogram.count, releaseSeconds: histogram.sum)
    }
}
