import IngestLoop

/// A reload (`Origin.reload`) replaces the channel object of a channel whose settings changed: the old one retires,
/// the new one continues from the journal and store the old one left, as after a restart of that channel alone.
extension Channel {
    /// True once `retire()` ran: a reload replaced (or removed) this channel object, and answers derived from its
    /// snapshots no longer hold.
    public var isRetired: Bool { retiredFlag.load(ordering: .acquiring) }

    /// What a push to a retired channel gets: the origin looks the channel up again and retries.
    var reloadingError: IngestError {
        IngestError(.reloading, "channel '\(name)' is being reloaded with new settings: retry")
    }

    /// Ends this object's part: from now on it accepts nothing (pushes get `.reloading`), ticks no more and writes its
    /// state to the journal for its successor to continue from; its waiting blocking reloads are answered now (they
    /// ask again, and reach the successor). Its published snapshot keeps being served until the successor replaces
    /// it in the origin's directory.
    func retire() {
        let now = clock.nowMilliseconds()
        state.withLock { state in
            retiredFlag.store(true, ordering: .releasing)
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
        state.withLock { _ in retiredFlag.store(false, ordering: .releasing) }
        for versions in renditionVersions.withLock({ Array($0.values) }) { versions.setRetired(false) }
    }
}
