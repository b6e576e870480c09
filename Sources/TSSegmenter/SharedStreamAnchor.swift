import Synchronization

/// The anchor (wall time of PTS 0) the segmenters cutting renditions from one stream share: the first to anchor
/// (a video keyframe, an audio frame) decides it for all, so every rendition cut from the stream is on the same slot
/// grid (each rounding its own arrival could fall either side of a grid line and cut a tolerance step apart).
public final class SharedStreamAnchor: Sendable {
    private let state = Mutex<(generation: Int, milliseconds: Int64)?>(nil)

    public init() {}

    /// The anchor of a segmenter's `generation`-th anchoring (1 the first, one more after each timestamp jump): the
    /// one stored for it (or for a later one) by another segmenter, else `computed`, stored.
    func adopt(generation: Int, computed: Int64) -> Int64 {
        state.withLock { stored in
            if let stored, stored.generation >= generation { return stored.milliseconds }
            stored = (generation, computed)
            return computed
        }
    }
}
