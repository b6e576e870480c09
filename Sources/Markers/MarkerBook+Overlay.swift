public import HLSPlaylist

/// A playlist entry as the overlay sees it: where it sits on the PDT timeline.
public protocol MarkerOverlayEntry {
    /// Media sequence number.
    var msn: UInt64 { get }
    /// EXT-X-PROGRAM-DATE-TIME of the entry, ms since the epoch.
    var programDateTimeMilliseconds: Int64 { get }
    /// End of the entry on the PDT timeline, ms since the epoch.
    var endMilliseconds: Int64 { get }
}

/// The tags a marker book adds to one rendition's playlist, by media sequence number.
public struct MarkerOverlay: Sendable, Hashable {
    /// EXT-X-DATERANGE tags rendered before the segment with that MSN.
    public var dateRanges: [UInt64: [DateRange]] = [:]
    /// Legacy EXT-X-CUE-OUT / EXT-X-CUE-OUT-CONT / EXT-X-CUE-IN lines rendered before that segment's EXTINF.
    public var extraTags: [UInt64: [String]] = [:]

    /// An empty overlay.
    public init() {}
}

extension MarkerBook {
    /// Places the markers on a rendition's listed entries.
    ///
    /// A marker is listed while its range (START-DATE to its end, see ``endsMilliseconds()``; from START-DATE on while
    /// the end is unknown) overlaps the window (first PDT to the end of the last entry), before the first entry that
    /// ends after START-DATE, or before the first entry if it started before the window. Markers starting at or
    /// after the window's end (scheduled ahead) are not listed yet.
    ///
    /// With `cueTags` in `cue` or `both` mode (and with `oatcls`), the breaks also get the segment-boundary tags of
    /// ``cueTags(entries:options:ends:)`` in `extraTags`; in `cue` mode the DATERANGE of a marker that opens or closes
    /// a break is left out (HLS Interstitials keep theirs).
    /// - Parameters:
    ///   - entries: the rendition's listed entries, oldest first.
    ///   - cueTags: the channel's cue tag settings; `.daterange` (default): DATERANGE only.
    ///   - interstitials: also list each break's interstitial (in every cue tag mode) and bound the interstitials
    ///     listed (``InterstitialListing/dateRanges(for:keepsOwn:)``); nil: none added.
    public func overlay(
        entries: [some MarkerOverlayEntry], cueTags: CueTagOptions = .daterange,
        interstitials: InterstitialListing? = nil
    ) -> MarkerOverlay {
        var overlay = MarkerOverlay()
        guard let first = entries.first, let last = entries.last, !markers.isEmpty else { return overlay }
        let windowStart = first.programDateTimeMilliseconds
        let windowEnd = last.endMilliseconds
        let ends = endsMilliseconds()
        for marker in sortedMarkers {
            // Only markers in the window are rendered (interstitials build their attributes on every publish).
            let start = marker.startDate.millisecondsSince1970
            guard start < windowEnd, (ends[marker.id] ?? .max) >= windowStart else { continue }
            let keepsOwn = marker.keepsDateRange(in: cueTags.mode)
            let listed =
                interstitials?.dateRanges(for: marker, keepsOwn: keepsOwn) ?? (keepsOwn ? [marker.dateRange] : [])
            guard !listed.isEmpty else { continue }
            let placed = start < windowStart ? first : entries.first { $0.endMilliseconds > start } ?? first
            overlay.dateRanges[placed.msn, default: []].append(contentsOf: listed)
        }
        overlay.extraTags = self.cueTags(entries: entries, options: cueTags, ends: ends)
        return overlay
    }

    /// Milliseconds as seconds with three decimals, e.g. `4.000`.
    static func seconds(_ milliseconds: Int64) -> String {
        let magnitude = milliseconds.magnitude
        let fraction = String(magnitude % 1000)
        return (milliseconds < 0 ? "-" : "") + String(magnitude / 1000) + "."
            + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}
