import HLSPlaylist

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
    /// With `legacyCueTags`, every marker carrying SCTE35-OUT also gets `#EXT-X-CUE-OUT:<seconds>` on the entry where
    /// it is placed, `#EXT-X-CUE-OUT-CONT:ElapsedTime=<s>,Duration=<s>` on the following entries that start before
    /// its end, and `#EXT-X-CUE-IN` on the first entry starting at or after its end. The announced duration is the
    /// one posted (DURATION, END-DATE - START-DATE or PLANNED-DURATION), so tags already shown never change.
    /// - Parameters:
    ///   - entries: the rendition's listed entries, oldest first.
    ///   - legacyCueTags: also produce the legacy cue tags.
    public func overlay(entries: [some MarkerOverlayEntry], legacyCueTags: Bool = false) -> MarkerOverlay {
        var overlay = MarkerOverlay()
        guard let first = entries.first, let last = entries.last, !markers.isEmpty else { return overlay }
        let windowStart = first.programDateTimeMilliseconds
        let windowEnd = last.endMilliseconds
        let ends = endsMilliseconds()
        for marker in sortedMarkers {
            let start = marker.startDate.millisecondsSince1970
            let end = ends[marker.id]
            if start < windowEnd, (end ?? .max) >= windowStart {
                let placed = start < windowStart ? first : entries.first { $0.endMilliseconds > start } ?? first
                overlay.dateRanges[placed.msn, default: []].append(marker.dateRange)
            }
            if legacyCueTags, marker.scte35Out != nil {
                addLegacyCueTags(marker, start: start, end: end, entries: entries, to: &overlay)
            }
        }
        return overlay
    }

    private func addLegacyCueTags(
        _ marker: Marker, start: Int64, end: Int64?, entries: [some MarkerOverlayEntry], to overlay: inout MarkerOverlay
    ) {
        let request = marker.request
        let announced: Int64? =
            request.duration.map(NumberFormatting.milliseconds)
            ?? request.endDate.map { $0.millisecondsSince1970 - start }
            ?? request.plannedDuration.map(NumberFormatting.milliseconds)
        var outPlaced = false
        for entry in entries {
            let entryStart = entry.programDateTimeMilliseconds
            if entry.endMilliseconds > start, entryStart <= start, !outPlaced {
                overlay.extraTags[entry.msn, default: []].append(
                    "#EXT-X-CUE-OUT" + (announced.map { ":" + Self.seconds($0) } ?? ""))
                outPlaced = true
            } else if entryStart > start, end.map({ entryStart < $0 }) ?? true {
                var tag = "#EXT-X-CUE-OUT-CONT:ElapsedTime=" + Self.seconds(entryStart - start)
                if let announced { tag += ",Duration=" + Self.seconds(announced) }
                overlay.extraTags[entry.msn, default: []].append(tag)
            } else if let end, entryStart >= end, entryStart > start {
                overlay.extraTags[entry.msn, default: []].append("#EXT-X-CUE-IN")
                return
            }
        }
    }

    /// Milliseconds as seconds with three decimals, e.g. `4.000`.
    static func seconds(_ milliseconds: Int64) -> String {
        let magnitude = milliseconds.magnitude
        let fraction = String(magnitude % 1000)
        return (milliseconds < 0 ? "-" : "") + String(magnitude / 1000) + "."
            + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}
