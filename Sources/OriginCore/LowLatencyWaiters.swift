import IngestLoop
import SharedBytes

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
final class LowLatencyWaiters: Sendable {
    init() {}

    /// A snapshot was published (under `Channel.state`): release what it satisfies.
    func published(_ snapshot: ChannelSnapshot, previous: ChannelSnapshot) {}

    /// The shared clock reached `now`: waits past their deadline end (blocking reloads: nil, parts: `.failed`).
    func expire(nowMilliseconds now: Int64) {}
}

extension Channel {
    /// Calls `release` once: with the rendition's first published snapshot whose last part reaches `position`
    /// (`wholeSegment`: whose segment `position.msn` is complete), at once if the current one does; with nil at
    /// `deadlineMilliseconds` (shared clock) or when the channel stops.
    public func waitForPart(
        rendition: String, until position: PartPosition, wholeSegment: Bool, deadlineMilliseconds: Int64,
        release: @escaping @Sendable (RenditionSnapshot?) -> Void
    ) {
        fatalError("contract: built by the serving step")
    }

    /// Feeds `observer` the bytes of the part at `position` as they are cut, then `.complete` (or `.failed`);
    /// false when that part is not the rendition's part in progress or the next one (the caller answers 404).
    public func watchPart(
        rendition: String, position: PartPosition, deadlineMilliseconds: Int64,
        observer: @escaping @Sendable (PartProgress) -> Void
    ) -> Bool {
        fatalError("contract: built by the serving step")
    }

    /// A streamed push's progress on the part at `position` (called by `StreamingPush`, outside the state lock).
    func partProgress(rendition: String, position: PartPosition, _ progress: PartProgress) {
        fatalError("contract: built by the serving step")
    }
}
