import HLSPlaylist
import LiveTimeline
public import Markers
import SharedBytes
import Synchronization

/// What a marker operation did.
public struct MarkerResult: Sendable, Hashable {
    /// The stored marker after the operation.
    public let marker: Marker
    /// True if this call created or changed it (false: an idempotent repeat).
    public let changed: Bool
}

/// Date ranges (ad markers) of a channel: the admin API's entry points.
///
/// Every change is journaled (fsync) before it is published and before the caller gets its result, so a marker
/// acknowledged to a client survives any crash.
extension Channel {
    /// Adds a marker (POST). The same request again returns the stored marker with `changed` false.
    /// - Throws: ``MarkerError`` (`invalid`, `conflict`, `tooManyMarkers`, `notPersisted`).
    public func addMarker(_ request: MarkerRequest) throws(MarkerError) -> MarkerResult {
        try through(refusal: reloadingMarkerError, forward: { channel throws(MarkerError) in
            try channel.addMarker(request)
        }) { () throws(MarkerError) in try addMarkerHere(request) }
    }

    /// What a marker request to a retired channel with no successor yet gets (503, Retry-After).
    private var reloadingMarkerError: MarkerError {
        MarkerError(.unavailable, field: nil, "channel '\(name)' is being reloaded with new settings: retry")
    }

    private func addMarkerHere(_ request: MarkerRequest) throws(MarkerError) -> MarkerResult {
        let now = clock.nowMilliseconds()
        let (marker, changed) = try markers.change { book throws(MarkerError) in
            let (marker, created) = try book.add(request, nowMilliseconds: now)
            return (marker, changed: created)
        }
        if changed { markersDidChange() }
        return MarkerResult(marker: marker, changed: changed)
    }

    /// Closes an open marker (PATCH, the cue-in).
    /// - Throws: ``MarkerError`` (`unknownMarker`, `invalid`, `conflict`, `notPersisted`).
    public func closeMarker(id: String, _ patch: MarkerPatch) throws(MarkerError) -> MarkerResult {
        try through(refusal: reloadingMarkerError, forward: { channel throws(MarkerError) in
            try channel.closeMarker(id: id, patch)
        }) { () throws(MarkerError) in try closeMarkerHere(id: id, patch) }
    }

    private func closeMarkerHere(id: String, _ patch: MarkerPatch) throws(MarkerError) -> MarkerResult {
        let now = clock.nowMilliseconds()
        let (marker, changed) = try markers.change { book throws(MarkerError) in
            let (marker, changed) = try book.close(id: id, patch: patch, nowMilliseconds: now)
            return (marker, changed: changed)
        }
        if changed { markersDidChange() }
        return MarkerResult(marker: marker, changed: changed)
    }

    /// The marker with this ID.
    public func marker(id: String) -> Marker? { markers.book.markers[id] }

    /// All markers, by START-DATE then ID.
    public var allMarkers: [Marker] { markers.book.sortedMarkers }

    /// Removes markers that ended before the window (with a grace of two target durations, so legacy cue tags
    /// placed by a marker's end leave with their segment). Called by `tick()`.
    func pruneMarkers() {
        let (liveStart, target) = state.withLock { ($0.markerWindowStartMilliseconds, $0.targetDuration ?? 1) }
        guard let liveStart else { return }
        let windowStart = recordingMarkerFloor(dvrMarkerFloor(windowStartMilliseconds: liveStart))
        let book = markers.book
        // Cheap check first: most ticks prune nothing and must not take the writer lock.
        let grace = Int64(target) * 2000
        let now = clock.nowMilliseconds()
        let due = book.endsMilliseconds().contains { $0.value + grace < windowStart }
        let expired = book.retiredIds.contains { now - $0.value > MarkerBook.retiredIdLifetimeMilliseconds }
        guard due || expired else { return }
        let prune: @Sendable () -> Void = { [self] in
            let pruned = try? markers.change { book throws(MarkerError) in
                let removed = book.prune(
                    windowStartMilliseconds: windowStart, graceMilliseconds: grace, nowMilliseconds: now)
                return (removed, changed: !removed.isEmpty || expired)
            }
            if let removed = pruned?.0, !removed.isEmpty { markersDidChange() }
        }
        guard markers.shared != nil else { return prune() }
        // Shared books are a database round trip away: never on the tick's thread, one prune at a time.
        guard !sharedPruneRunning.exchange(true, ordering: .acquiringAndReleasing) else { return }
        BackgroundWork.run { [self] in
            prune()
            sharedPruneRunning.store(false, ordering: .releasing)
        }
    }

    /// Reads the shared marker book again (another origin of the group changed it, or the database came back) and
    /// republishes the playlists if the markers changed. Makes a database round trip: not for the tick's thread.
    public func refreshSharedMarkers() {
        if markers.refresh(laterChange: { [weak self] in self?.markersDidChange() }) { markersDidChange() }
    }

    func markersDidChange() {
        let now = clock.nowMilliseconds()
        state.withLock { state in
            state.markersChanged()
            publish(&state, nowMilliseconds: now)
        }
    }
}
