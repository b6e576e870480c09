package import GapFiller
public import MediaProbe
public import SharedBytes

/// Whether a rendition's feed is delivering.
public enum FeedState: Sendable, Hashable {
    /// No segment has arrived yet.
    case waiting
    /// Segments arrive; since this time (ms since the epoch).
    case live(sinceMilliseconds: Int64)
    /// The ingest loop wrote GAP entries; the feed has not delivered since this time.
    case dropped(sinceMilliseconds: Int64)
}

/// Counters of one rendition, exported in channel status and metrics.
public struct RenditionStatistics: Sendable, Hashable {
    /// Segments accepted into the window.
    public var segmentsAccepted: Int = 0
    /// Pushes refused (not media, too long, ahead of real time, ...).
    public var segmentsRejected: Int = 0
    /// EXT-X-GAP entries written.
    public var gapsWritten: Int = 0
    /// EXT-X-DISCONTINUITY tags written.
    public var discontinuities: Int = 0
    /// Highest segment bit rate seen (bits per second): the variant's BANDWIDTH.
    public var peakBitrate: Int = 0
    /// Bytes of all accepted segments.
    public var totalBytes: Int64 = 0
    /// Media milliseconds of all accepted segments.
    public var totalMilliseconds: Int64 = 0
    /// Arrival time minus the end of the segment on the PDT timeline, for the newest segment, in ms:
    /// how far the encoder's timeline trails (positive) or leads (negative) the shared clock.
    public var driftMilliseconds: Int64 = 0
    /// The last reason a push was refused.
    public var lastRejection: String?
    /// Segments refused because they did not continue the rendition's timeline and ran ahead of the clock (a
    /// second encoder pushing to the same rendition); also counted in `segmentsRejected`.
    public var timelineConflicts: Int = 0
    /// Playlist hints (`.m3u8` pushes) read.
    public var hintsRead: Int = 0
    /// Playlist hints refused (not a playlist, or larger than `Origin.maxHintBytes`); not counted in
    /// `segmentsRejected`, but named in `lastRejection`.
    public var hintsRefused: Int = 0
    /// Subtitle renditions: empty cue segments written for slots media delivered while the rendition sent none.
    public var emptyCueSegments: Int = 0
    /// Subtitle renditions: late cue files (their slot had closed, so they were held for the next one) dropped
    /// unlisted because the cue file paired with that next slot arrived.
    public var lateCuesSuperseded: Int = 0

    /// Highest bit rate of an I-frame entry seen (its byte range over its EXTINF, bits per second): the
    /// EXT-X-I-FRAME-STREAM-INF BANDWIDTH.
    public var iFramePeakBitrate: Int = 0
    /// Bytes of the I-frame ranges of all accepted segments that start with a keyframe.
    public var iFrameTotalBytes: Int64 = 0
    /// Media milliseconds of those segments (the EXTINFs of the I-frame entries that are not EXT-X-GAP).
    public var iFrameTotalMilliseconds: Int64 = 0

    /// Average bit rate of everything accepted (AVERAGE-BANDWIDTH).
    public var averageBitrate: Int {
        totalMilliseconds > 0 ? Int(totalBytes * 8 * 1000 / totalMilliseconds) : 0
    }

    /// Average bit rate of the I-frame entries (the I-frame stream's AVERAGE-BANDWIDTH).
    public var iFrameAverageBitrate: Int {
        iFrameTotalMilliseconds > 0 ? Int(iFrameTotalBytes * 8 * 1000 / iFrameTotalMilliseconds) : 0
    }

    /// Counts the I-frame entry of an accepted segment: `rangeEnd` bytes over `milliseconds` (nothing when the
    /// segment has no leading keyframe: its I-frame entry is a GAP).
    mutating func countIFrame(rangeEnd: Int?, milliseconds: Int64) {
        guard let rangeEnd, milliseconds > 0 else { return }
        iFrameTotalBytes += Int64(rangeEnd)
        iFrameTotalMilliseconds += milliseconds
        iFramePeakBitrate = max(iFramePeakBitrate, Int(Int64(rangeEnd) * 8 * 1000 / milliseconds))
    }
}

/// What a rendition carries, fixed when it is created: media fills slots; subtitles follow them.
public enum RenditionRole: Sendable, Hashable {
    /// Audio and/or video: every started media rendition must fill a slot (or get a GAP) before it closes.
    case media
    /// Subtitles (WebVTT or IMSC1): never holds a slot open longer than the follower wait; `parent` is the media
    /// rendition whose timeline its cues follow.
    case subtitles(parent: String?)
}

/// An fMP4 initialization section as served at `init-{version}.mp4`.
public struct InitSection: Sendable {
    public let version: Int
    public let bytes: SharedBytes
    public let info: InitSectionInfo
}

/// Everything the channel keeps about one rendition.
package struct RenditionState: Sendable {
    package let name: String
    /// Media or subtitles; set at creation, never changes.
    package var role: RenditionRole = .media
    /// The role is fixed (by the configuration, the name, or the first push); until then the first push decides.
    var roleDecided = false
    /// Media renditions: the MSNs of the newest pushes' sequence numbers (`index7.ts` -> 7), newest last, at most
    /// `recentSequenceNumberLimit`; a WebVTT segment of the same number pairs with the MSN.
    var recentSequenceNumbers: [(number: Int, msn: UInt64)] = []
    /// WebVTT renditions: the store records of held entries, written when their slot closes (their PDT and EXTINF
    /// are the slot's, known then).
    var heldRecords: [UInt64: SegmentRecord] = [:]
    /// WebVTT renditions: held entries of late cues, moved past their closed slot. The cue paired with the slot
    /// such an entry holds supersedes it (else one late cue would push every later cue one slot late for good).
    var displacedMSNs: Set<UInt64> = []
    package internal(set) var window: LiveWindow
    /// Container of the rendition's segments, fixed by the first one.
    package internal(set) var container: MediaContainer?
    /// Tracks of the newest segment (codecs, resolution, frame rate).
    package internal(set) var tracks: [TrackInfo] = []
    /// Caption channels (CEA-608/708 in SEI) seen in any segment so far.
    package internal(set) var closedCaptions: Set<ClosedCaptionChannel> = []
    /// Initialization sections by version; the newest is current.
    package var initSections: [Int: InitSection] = [:]
    package var currentInitVersion: Int?
    package internal(set) var feed: FeedState = .waiting
    package var statistics = RenditionStatistics()
    /// End of the newest real segment on the encoder's media timeline (unwrapped ticks) and its timescale.
    var lastMediaEnd: (ticks: Int64, timescale: Int64)?
    /// Carry of EXTINF rounding to milliseconds, in units of 1/(1000 x timescale) s, so durations never drift from
    /// the media.
    var roundingCarry: (value: Int64, timescale: Int64) = (0, 1)
    /// The next real segment starts a discontinuity (after GAPs, an origin restart, a codec change).
    var pendingDiscontinuity = false
    /// Entries of slots that are still open, oldest first: published together with the other renditions' entries
    /// when their slot closes, so a discontinuity is applied at the same MSN in every rendition.
    var held: [WindowEntry] = []
    /// Shared-clock time the newest entry was added (ms).
    var lastAppendMilliseconds: Int64 = 0
    /// Every segment so far started with a keyframe (EXT-X-INDEPENDENT-SEGMENTS).
    package internal(set) var allSegmentsIndependent = true
    /// Makes the filler of GAP entries (the test source's slate); nil: the last keyframe of pushed MPEG-TS.
    package var gapFillerSource: (any GapFillerSource)?
    /// The rendition's newest entry is a slate segment (`outage: slate`): the encoder's next segment starts a
    /// discontinuity, and further slate segments do not.
    var inSlate = false
    /// The filler of the current outage; back to `.idle` when a segment arrives.
    var gapFill: GapFill = .idle

    init(name: String, window: LiveWindow) {
        self.name = name
        self.window = window
    }

    /// True once the rendition has delivered (it takes part in slots from then on).
    var hasStarted: Bool { !held.isEmpty || window.lastMSN != nil || !window.retained.isEmpty }

    /// Bytes the rendition holds in memory: its listed, retained and held segments and its init sections.
    var memoryBytes: Int64 {
        window.segmentBytes + held.reduce(0) { $0 + Int64($1.bytes?.count ?? 0) }
            + initSections.values.reduce(0) { $0 + Int64($1.bytes.count) }
    }

    /// MSN of the newest entry, listed or not.
    var lastMSN: UInt64? { held.last?.msn ?? window.lastMSN }

    /// How many pushed file numbers a media rendition remembers for pairing WebVTT segments.
    static let recentSequenceNumberLimit = 16

    /// True for a subtitle rendition (WebVTT or IMSC1): a follower that never holds a slot open for long.
    package var isFollower: Bool {
        if case .subtitles = role { true } else { false }
    }

    /// The media rendition whose timeline a subtitle rendition follows.
    var parent: String? {
        if case .subtitles(let parent) = role { parent } else { nil }
    }

    /// True if the rendition delivered its own entry for `msn`: a late cue held there does not count (the slot
    /// still waits the follower wait for its own cue).
    func fills(msn: UInt64) -> Bool { hasEntry(msn: msn) && !displacedMSNs.contains(msn) }

    /// True if the rendition has an entry (held or listed) for `msn`.
    func hasEntry(msn: UInt64) -> Bool {
        if let last = window.lastMSN, msn <= last { return true }
        return held.contains { $0.msn == msn }
    }

    /// The newest entry, held or listed.
    var lastEntry: WindowEntry? { held.last ?? window.entries.last }

    /// Low-Latency: the segment whose parts are being listed (a streamed push, or GAP parts in an outage).
    var open: OpenSegment?
    /// Low-Latency: the parts of closed segments (held or listed), kept while listed and 3 target durations after.
    package internal(set) var recentParts: [UInt64: ClosedParts] = [:]
    /// Low-Latency: shared-clock time the newest pushed part was listed (ms).
    var lastPartAtMilliseconds: Int64 = 0
}

/// A Low-Latency segment between its first part and its end.
struct OpenSegment: Sendable {
    let msn: UInt64
    /// The slot's PDT, fixed when it opened.
    let programDateTimeMilliseconds: Int64
    /// EXT-X-DISCONTINUITY before it, frozen when it opened.
    let discontinuity: Bool
    /// A streamed push (false: GAP parts the tick writes during an outage).
    let pushed: Bool
    let container: MediaContainer
    /// Start of its first part on the rendition's media timeline (unwrapped ticks) and the timescale.
    let mediaStart: Int64
    let timescale: Int64
    var parts: [PartEntry] = []
    /// Media ticks of the listed parts.
    var ticks: Int64 = 0
    /// EXTINF of the listed parts so far (ms).
    var durationMilliseconds: Int64 { parts.reduce(0) { $0 + $1.durationMilliseconds } }
}

/// The parts of a closed segment, with the segment's end on the PDT timeline (listing and retention count from it).
package struct ClosedParts: Sendable {
    package internal(set) var parts: [PartEntry]
    package internal(set) var endMilliseconds: Int64
}
