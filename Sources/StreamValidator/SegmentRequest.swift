/// A download the checker asks the watcher for, returned by ``StreamChecker/observeMediaPlaylist(_:_:)``: the watcher
/// GETs ``url`` no earlier than ``notBefore`` and hands the fetch to ``StreamChecker/observeSegment(_:_:)``.
public struct SegmentRequest: Sendable, Hashable {
    /// Why the checker wants the bytes.
    public enum Purpose: String, Sendable, Hashable {
        /// A newly listed segment: downloadable, media, its bytes measured and probed (rules 16, 13, 34).
        case segment
        /// An EXT-X-MAP initialization section, needed to probe fMP4 segments.
        case initSection
        /// A segment the playlist no longer lists: must still download (rule 17).
        case removed
    }

    public var purpose: Purpose
    /// The absolute URL.
    public var url: String
    /// The media playlist's URL.
    public var playlist: String
    /// The segment's MSN (0 for an init section).
    public var msn: UInt64
    /// Milliseconds on the watch's clock before which the fetch must not go out (a removed segment is fetched some
    /// time after its removal).
    public var notBefore: Int64
    /// For a removed segment: the time (ms) until which it must stay downloadable.
    public var mustStayUntil: Int64?
    /// For a removed segment: when its removal was seen (ms).
    public var removalSeen: Int64?

    public init(
        purpose: Purpose, url: String, playlist: String, msn: UInt64, notBefore: Int64 = 0, mustStayUntil: Int64? = nil,
        removalSeen: Int64? = nil
    ) {
        self.purpose = purpose
        self.url = url
        self.playlist = playlist
        self.msn = msn
        self.notBefore = notBefore
        self.mustStayUntil = mustStayUntil
        self.removalSeen = removalSeen
    }
}
