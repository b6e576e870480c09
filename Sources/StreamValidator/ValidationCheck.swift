/// One line of a validation report: a check of one or more numbered rules of `../shared/HLS-RULES.md`.
///
/// The cases are in report order. Each says which rules it checks (``rules``) and, in a few words, what
/// (``title``); docs/validate.md describes each one.
public enum ValidationCheck: String, CaseIterable, Sendable, Codable {
    /// Rules 1, 3, 6, 9: every playlist loads (status 200) and parses (`#EXTM3U` first, UTF-8, attribute lists,
    /// no tag twice, EXTINF before every URI).
    case syntax
    /// Rules 4, 5: EXT-X-VERSION present when a feature above version 1 is used, and at least what the features need.
    case version
    /// Rules 2, 45: playlists `application/vnd.apple.mpegurl` (or `audio/mpegurl`), segments the type of their
    /// container.
    case contentTypes = "content-types"
    /// Rule 47: media playlists cached no longer than one target duration; segments not forbidden to cache.
    case cacheHeaders = "cache-headers"
    /// Rule 48: `Access-Control-Allow-Origin` on playlists and segments (browser players need it).
    case cors
    /// Rule 7: EXT-X-TARGETDURATION at least 1 and round(EXTINF) <= TD for every segment.
    case targetDuration = "target-duration"
    /// Rules 8, 20: TD never changes between reloads and is the same in every rendition.
    case targetDurationConstant = "target-duration-constant"
    /// Rule 10: EXT-X-MEDIA-SEQUENCE and the newest MSN never go back, and the URI at each MSN is the same in every
    /// reload.
    case mediaSequence = "media-sequence"
    /// Rule 11: a listed segment keeps its EXTINF, DISCONTINUITY, GAP, BYTERANGE and MAP across reloads; the
    /// playlist changes only by appending and removing from the head.
    case segmentsImmutable = "segments-immutable"
    /// Rule 12: the discontinuity sequence number of each MSN (EXT-X-DISCONTINUITY-SEQUENCE plus the
    /// DISCONTINUITY tags up to it) is the same in every reload; the tag stays once present.
    case discontinuitySequence = "discontinuity-sequence"
    /// Rules 13, 29: a media timestamp jump between consecutive segments (GAP entries counted at their EXTINF)
    /// carries EXT-X-DISCONTINUITY.
    case discontinuities
    /// Rule 14: a reload that removed head segments still lists at least 3 target durations.
    case window
    /// Rule 15: a new segment no later than 1.5 target durations after the previous one was added.
    case freshness
    /// Rules 16, 31, 32: every listed non-GAP segment downloads (200, no redirect, whole body) and is media:
    /// MPEG-TS or fMP4 (with EXT-X-MAP), ADTS or WebVTT; video segments start with a keyframe (A7.4).
    case segmentsDownloadable = "segments-downloadable"
    /// Rule 17: a segment removed from the playlist still downloads within its duration plus the playlist's
    /// duration after the removal.
    case removedSegments = "removed-segments"
    /// Rules 18, 11: the stream stays live while watched: no EXT-X-ENDLIST, and nothing changes after one.
    case live
    /// Rule 19: no EXT-X-PLAYLIST-TYPE in a sliding playlist (VOD never changes, EVENT only appends).
    case playlistType = "playlist-type"
    /// Rule 21: EXT-X-PROGRAM-DATE-TIME written as ISO 8601 with a time zone and milliseconds.
    case programDateTimeFormat = "pdt-format"
    /// Rules 22, 23, 24: PDT on every segment once any has one (on every DISCONTINUITY segment in particular),
    /// the PDT of an MSN never changes, PDT ranges never overlap, PDT present when DATERANGE is.
    case programDateTime = "pdt"
    /// Rule 20: the same MSN has the same PDT in every rendition.
    case renditionProgramDateTime = "renditions-pdt"
    /// Rules 13, 20: the same MSN has the same discontinuity sequence number in every rendition.
    case renditionDiscontinuities = "renditions-dsn"
    /// Rules 25, 26: every EXT-X-DATERANGE is well formed (ID, START-DATE, END-DATE >= START-DATE, DURATION >= 0,
    /// CUE, END-ON-NEXT, X- attributes).
    case dateRangeSyntax = "daterange-syntax"
    /// Rules 26, 27: tags with the same ID never change or drop an attribute, in one playlist or across reloads;
    /// a date range is not removed while its START-DATE maps to a listed segment.
    case dateRangeImmutable = "daterange-immutable"
    /// Rules 30, 33: EXT-X-DEFINE and EXT-X-KEY well formed; a KEY is never removed while a segment it applies to
    /// is listed.
    case keysAndDefines = "keys-defines"
    /// Rules 35, 30: the multivariant playlist's EXT-X-MEDIA groups (names, DEFAULT, group references) and
    /// definitions.
    case multivariant
    /// Rule 34: each variant's BANDWIDTH is at least the measured peak segment bit rate (its media playlist plus
    /// its audio group), within Apple's live tolerance of 125 % (A1.28).
    case bandwidth
    /// Rule 34: each variant's CODECS lists every codec found in its media's bytes (and nothing else);
    /// RESOLUTION matches the video.
    case codecs
    /// Rule 38: every listed part lasts at most PART-TARGET, and at least 85 % of it unless it is INDEPENDENT, a
    /// GAP or the last part of its segment.
    case partDurations = "part-durations"
    /// Rules 39-44: the rest of Low-Latency HLS (preload hints, blocking reloads, delta updates, rendition reports)
    /// is not checked; reported when used.
    case lowLatency = "low-latency"

    /// The rule numbers of `../shared/HLS-RULES.md` this check covers.
    public var rules: [Int] {
        switch self {
        case .syntax: [1, 3, 6, 9]
        case .version: [4, 5]
        case .contentTypes: [2, 45]
        case .cacheHeaders: [47]
        case .cors: [48]
        case .targetDuration: [7]
        case .targetDurationConstant: [8, 20]
        case .mediaSequence: [10]
        case .segmentsImmutable: [11]
        case .discontinuitySequence: [12]
        case .discontinuities: [13, 29]
        case .window: [14]
        case .freshness: [15]
        case .segmentsDownloadable: [16, 31, 32]
        case .removedSegments: [17]
        case .live: [18, 11]
        case .playlistType: [19]
        case .programDateTimeFormat: [21]
        case .programDateTime: [22, 23, 24]
        case .renditionProgramDateTime: [20]
        case .renditionDiscontinuities: [13, 20]
        case .dateRangeSyntax: [25, 26]
        case .dateRangeImmutable: [26, 27]
        case .keysAndDefines: [30, 33]
        case .multivariant: [35, 30]
        case .bandwidth: [34]
        case .codecs: [34]
        case .partDurations: [38]
        case .lowLatency: [39, 40, 41, 42, 43, 44]
        }
    }

    /// The rule numbers as the report prints them: `13,20`, or `38-44` for a run.
    public var ruleLabel: String {
        let rules = rules
        if rules.count > 2, rules.last! - rules.first! == rules.count - 1 { return "\(rules.first!)-\(rules.last!)" }
        return rules.map(String.init).joined(separator: ",")
    }
}
