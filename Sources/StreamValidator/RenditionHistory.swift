import HLSPlaylist
import MediaProbe

/// What the checker remembers of one media playlist across its reloads: every MSN as first seen, the segments'
/// media facts, and the times that bound its freshness.
struct RenditionHistory: Sendable {
    /// One playlist entry as first seen (in the current numbering epoch).
    struct Entry: Sendable, Hashable {
        var msn: UInt64
        /// Absolute URL.
        var url: String
        /// EXTINF, seconds as written.
        var duration: Double
        var discontinuity: Bool
        var gap: Bool
        /// PDT in ms since 1970: written on the segment, else carried from the previous entry plus its EXTINF.
        var programDateTime: Int64?
        /// Whether the PDT was written on this segment.
        var programDateTimeWritten: Bool
        /// EXT-X-DISCONTINUITY-SEQUENCE plus the DISCONTINUITY tags up to and including this entry.
        var discontinuitySequence: UInt64
        var byteRange: ByteRange?
        /// The absolute URL of the EXT-X-MAP in force.
        var mapURL: String?

        var durationMilliseconds: Int64 { NumberFormatting.milliseconds(duration) }
    }

    /// What a downloaded segment's bytes say.
    struct SegmentMedia: Sendable {
        var byteCount: Int
        var info: SegmentInfo
    }

    /// The media playlist's absolute URL.
    let url: String
    /// The name the report uses: the URI as the multivariant playlist wrote it, or the URL.
    let name: String

    /// The first EXT-X-TARGETDURATION seen.
    var targetDuration: Int?
    /// Every MSN listed since the numbering began (or last restarted), as first seen.
    var entries: [UInt64: Entry] = [:]
    /// The last playlist that parsed, its EXT-X-MEDIA-SEQUENCE and newest MSN.
    var lastPlaylist: MediaPlaylist?
    var lastURLs: [UInt64: String] = [:]
    var newestMSN: UInt64?
    /// The playlist's duration (ms) when each MSN was last listed: how long it must stay after its removal.
    var listedPlaylistDuration: [UInt64: Int64] = [:]
    /// When the newest segment was first seen (the answer that showed it was complete then).
    var lastAdditionSeen: Int64?
    /// A staleness failure was reported for the current newest segment.
    var staleReported = false
    /// The longest time without a new segment, at least (ms): from the answer that showed the last addition to
    /// the request of a later reload that still did not show a new one.
    var longestStaleness: Int64 = 0
    /// When EXT-X-ENDLIST was first seen and the playlist then.
    var endList: (at: Int64, playlist: MediaPlaylist)?
    var discontinuitySequenceTagSeen = false
    /// Downloaded segments' facts by MSN; init sections by URL.
    var media: [UInt64: SegmentMedia] = [:]
    var initSections: [String: InitSectionInfo] = [:]
    /// URLs asked for already (segments, init sections, removed segments).
    var requested: Set<String> = []
    var removalScheduled: Set<UInt64> = []
    var reloads = 0
    /// How many times the numbering restarted: renditions are compared only within the same epoch, so a restart
    /// seen in one rendition a moment before the other is not a mismatch.
    var numberingEpoch = 0
    /// When the last reload that parsed was sent.
    var lastReloadSent: Int64?
    /// A stall in progress longer than 1.5 TD: from the answer that showed the newest segment to the last reload
    /// that still showed no newer one (ms), the newest MSN and the limit.
    var stall: (since: Int64, until: Int64, msn: UInt64, limit: Int64)?
    /// The window slid at least once.
    var slid = false

    init(url: String, name: String) {
        self.url = url
        self.name = name
    }

    /// Forgets the numbering after the MSN went back (an encoder that restarted at 0): later reloads are compared
    /// with the new numbering only.
    mutating func restartNumbering() {
        numberingEpoch += 1
        entries = [:]
        media = [:]
        listedPlaylistDuration = [:]
        removalScheduled = []
        requested = []
        newestMSN = nil
        lastPlaylist = nil
        lastURLs = [:]
        staleReported = false
    }
}
