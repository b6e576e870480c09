import HLSPlaylist

/// The channel status's account of the SCTE-35 cues read from the pushed stream (`inbandCues` in the admin API).
public struct InbandCueStatus: Sendable, Codable, Hashable {
    /// The channel's `inbandCues` setting: `ignore`, `markers` or `interstitials`.
    public var mode: String
    /// splice_info_sections found in pushed segments (every rendition, repeats included).
    public var sectionsRead: Int = 0
    /// Sections that were not valid SCTE-35 (bad CRC, lengths that do not add up, a command cut short).
    public var sectionsRefused: Int = 0
    /// Why the last refused section was refused.
    public var lastRefusal: String?
    /// Markers made from cues, markers closed by a cue-in, markers withdrawn or ended by a cancel.
    public var markersCreated: Int = 0
    public var markersClosed: Int = 0
    public var markersCancelled: Int = 0
    /// Cue changes the marker book could not store (journal or shared book failing): the next rendition's copy of
    /// the cue tries again.
    public var bookFailures: Int = 0
    /// Timed cues that came after their splice time (the splice fell before the end of the segment carrying them), so
    /// they were placed at that segment's end instead (every rendition's copy counted, as `sectionsRead`).
    public var lateCues: Int = 0
    /// Where the listed in-band out-points fall against the segments (CUE-OUT placement): see
    /// ``CuePlacement``; nil while no out-point is listed with the segment it is placed on.
    public var placement: CuePlacement?

    public init(mode: String) {
        self.mode = mode
    }
}

/// The error of placing out-points on segment boundaries: an out-point (START-DATE = the splice time) is placed on
/// the first segment that starts at or after the splice (``MarkerBook/cueEntryIndex(starts:splice:)``, 10 ms PDT
/// rounding allowed), so the break starts late by the segment start minus the splice time (0 when the encoder put a
/// segment boundary at the splice; a few ms below 0 within the rounding allowance).
public struct CuePlacement: Sendable, Codable, Hashable {
    /// Out-points placed on a listed segment.
    public var markers: Int
    /// Segment start minus splice time of the newest out-point, and the largest, ms.
    public var lastErrorMilliseconds: Int64
    public var maxErrorMilliseconds: Int64

    public init(markers: Int, lastErrorMilliseconds: Int64, maxErrorMilliseconds: Int64) {
        self.markers = markers
        self.lastErrorMilliseconds = lastErrorMilliseconds
        self.maxErrorMilliseconds = maxErrorMilliseconds
    }
}

extension MarkerBook {
    /// The placement of the in-band out-points on a rendition's listed segments.
    /// - Parameter segments: the listed segments' PDT and duration (ms), in order.
    /// - Returns: nil when no in-band out-point falls inside the listed segments (or at the start of one).
    public func inbandPlacement(segments: [(start: Int64, duration: Int64)]) -> CuePlacement? {
        var placed: [(splice: Int64, error: Int64)] = []
        let starts = segments.map(\.start)
        for marker in markers.values where marker.source == .inband && marker.scte35Out != nil {
            let splice = marker.startDate.millisecondsSince1970
            // The segment the CUE-OUT is on (the same rule and rounding allowance as the cue tags).
            guard let target = Self.cueEntryIndex(starts: starts, splice: splice) else { continue }
            placed.append((splice, starts[target] - splice))
        }
        guard let newest = placed.max(by: { $0.splice < $1.splice }) else { return nil }
        return CuePlacement(
            markers: placed.count, lastErrorMilliseconds: newest.error,
            maxErrorMilliseconds: placed.map(\.error).max() ?? 0)
    }
}
