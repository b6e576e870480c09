import Foundation
import HLSPlaylist

/// The rules of `../shared/HLS-RULES.md` checked from outside, as a pure state machine: fed what the watcher saw
/// (playlist answers, segment answers, each with the time it was sent and received, in milliseconds on the watch's
/// clock) and asked at the end for a ``ValidationReport``. No I/O and no clock: tests feed made-up answers on a
/// manual clock; ``StreamWatcher`` feeds real ones.
///
/// Order of calls: ``observeMultivariant(_:)`` once when the URL is a multivariant playlist (it returns the media
/// playlists to follow), then ``observeMediaPlaylist(_:_:)`` for every reload of each, which returns the segments to
/// download, each handed back with ``observeSegment(_:_:)``; ``finish(at:)`` last.
public struct StreamChecker: Sendable {
    /// The most failures a check keeps as evidence (the count goes on).
    public static let evidenceLimit = 20
    /// BANDWIDTH may be exceeded by the measured peak up to this factor (Apple, HLS Authoring Specification 1.28:
    /// live measured peak < 125 % of BANDWIDTH).
    public static let bandwidthTolerance = 1.25
    /// A media timestamp step between consecutive segments that differs from their EXTINF sum by more than this
    /// (ms) is a jump that needs EXT-X-DISCONTINUITY.
    public static let timestampJumpTolerance: Int64 = 500
    /// PDT ranges of consecutive segments may overlap by this much (ms, rounding of written PDTs).
    public static let programDateTimeOverlapTolerance: Int64 = 10

    /// The URL given to the validator.
    public let url: String

    struct Finding: Sendable {
        var checked = 0
        var failures: [String] = []
        var failureCount = 0
        var seen: Set<String> = []
        var notes: [String] = []
    }

    var findings: [ValidationCheck: Finding] = [:]
    var multivariant: MultivariantPlaylist?
    var multivariantURL: String?
    /// The media playlists followed, by URL, and their order.
    var renditions: [String: RenditionHistory] = [:]
    var renditionOrder: [String] = []
    var reloads = 0
    var segmentsDownloaded = 0
    var removedSegmentsFetched = 0
    var lowLatencySeen = false
    var programDateTimeSeen = false
    var dateRangeSeen = false
    /// Every DATERANGE ID with the attributes seen for it so far (name -> value as rendered), across playlists.
    var dateRanges: [String: [String: String]] = [:]

    /// Creates a checker for the stream at `url`.
    public init(url: String) {
        self.url = url
    }

    /// Whether a playlist text is a multivariant playlist (it has EXT-X-STREAM-INF, EXT-X-MEDIA or
    /// EXT-X-I-FRAME-STREAM-INF and no EXTINF).
    public static func isMultivariant(_ text: String) -> Bool {
        var multivariantTag = false
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            if line.hasPrefix("#EXTINF") || line.hasPrefix("#EXT-X-TARGETDURATION") { return false }
            if line.hasPrefix("#EXT-X-STREAM-INF") || line.hasPrefix("#EXT-X-MEDIA:")
                || line.hasPrefix("#EXT-X-I-FRAME-STREAM-INF")
            {
                multivariantTag = true
            }
        }
        return multivariantTag
    }

    /// Resolves a URI of a playlist against the playlist's URL (RFC 3986).
    public static func resolve(_ uri: String, against base: String) -> String {
        guard let baseURL = URL(string: base), let resolved = URL(string: uri, relativeTo: baseURL) else { return uri }
        return resolved.absoluteURL.absoluteString
    }

    // MARK: - Findings

    mutating func fail(_ check: ValidationCheck, _ message: String) {
        var finding = findings[check] ?? Finding()
        guard finding.seen.insert(message).inserted else { return }
        finding.failureCount += 1
        if finding.failures.count < Self.evidenceLimit { finding.failures.append(message) }
        findings[check] = finding
    }

    mutating func checked(_ check: ValidationCheck, _ count: Int = 1) {
        findings[check, default: Finding()].checked += count
    }

    mutating func note(_ check: ValidationCheck, _ text: String) {
        findings[check, default: Finding()].notes.append(text)
    }

    /// `12.3 s`: a time on the watch's clock.
    static func time(_ milliseconds: Int64) -> String {
        String(format: "%.1f s", Double(milliseconds) / 1000)
    }

    /// `2.5 s`: a duration in ms.
    static func seconds(_ milliseconds: Int64) -> String {
        String(format: "%.3g s", Double(milliseconds) / 1000)
    }

    // MARK: - The report

    /// Ends the watch at `now` (ms) and reports every check: FAIL with its first failure, PASS with what was checked,
    /// SKIP with why nothing could be.
    public mutating func finish(at now: Int64) -> ValidationReport {
        finishRenditions()
        finishVariants()
        let results = ValidationCheck.allCases.map { check -> CheckResult in
            let finding = findings[check] ?? Finding()
            if finding.failureCount > 0 {
                return CheckResult(
                    check: check, verdict: .fail, summary: finding.failures[0], evidence: finding.failures,
                    failures: finding.failureCount)
            }
            if finding.checked > 0 {
                let notes = finding.notes.isEmpty ? "" : "; " + finding.notes.joined(separator: "; ")
                return CheckResult(check: check, verdict: .pass, summary: "\(finding.checked) checked\(notes)")
            }
            return CheckResult(check: check, verdict: .skip, summary: skipReason(check))
        }
        return ValidationReport(
            url: url, seconds: Double(now) / 1000, mediaPlaylists: renditionOrder.map { renditions[$0]!.name },
            reloads: reloads, segmentsDownloaded: segmentsDownloaded, removedSegmentsFetched: removedSegmentsFetched,
            results: results)
    }

    /// Why a check that never ran was skipped.
    func skipReason(_ check: ValidationCheck) -> String {
        let oneRendition = "only one media playlist: nothing to compare across renditions"
        switch check {
        case .bandwidth, .codecs, .multivariant:
            return multivariant == nil
                ? "the URL is a media playlist: no multivariant playlist to check"
                : "no segment of a variant was measured"
        case .renditionProgramDateTime:
            return renditions.count < 2
                ? oneRendition : "no MSN with a PDT was listed by two renditions"
        case .renditionDiscontinuities:
            return renditions.count < 2 ? oneRendition : "no MSN was listed by two renditions"
        case .programDateTimeFormat, .programDateTime:
            return "no EXT-X-PROGRAM-DATE-TIME in any playlist"
        case .dateRangeSyntax, .dateRangeImmutable:
            return "no EXT-X-DATERANGE in any playlist"
        case .window:
            return "the window never slid (no head segment was removed while watched)"
        case .removedSegments:
            return "no segment was removed from a playlist while watched"
        case .discontinuities:
            return "no two segments of a rendition were downloaded and probed to compare timestamps"
        case .partDurations:
            return "no Low-Latency HLS (EXT-X-PART-INF) in the playlists"
        case .lowLatency:
            return lowLatencySeen
                ? "EXT-X-PART-INF present: preload hints, blocking reloads, delta updates and rendition reports are "
                    + "not checked"
                : "no Low-Latency HLS (EXT-X-PART-INF) in the playlists"
        case .playlistType, .live, .freshness:
            return "no media playlist loaded"
        default:
            return "nothing to check: no playlist or segment loaded"
        }
    }
}
