/// EXT-X-SERVER-CONTROL (RFC 8216bis section 4.4.3.8): what the server supports for delivery directives.
public struct ServerControl: Sendable, Hashable {
    /// CAN-BLOCK-RELOAD=YES: the server answers `_HLS_msn` / `_HLS_part` blocking playlist requests.
    public var canBlockReload: Bool
    /// CAN-SKIP-UNTIL in seconds: the server produces delta updates (`_HLS_skip`) skipping segments older than this
    /// from the end of the playlist; nil: no delta updates.
    public var canSkipUntil: Double?
    /// CAN-SKIP-DATERANGES=YES: `_HLS_skip=v2` also skips old EXT-X-DATERANGE tags (needs `canSkipUntil`).
    public var canSkipDateRanges: Bool
    /// HOLD-BACK in seconds (at least 3 target durations); nil: not rendered.
    public var holdBack: Double?
    /// PART-HOLD-BACK in seconds (at least 2, recommended 3, part targets); required with EXT-X-PART-INF.
    public var partHoldBack: Double?

    public init(
        canBlockReload: Bool = false, canSkipUntil: Double? = nil, canSkipDateRanges: Bool = false,
        holdBack: Double? = nil, partHoldBack: Double? = nil
    ) {
        self.canBlockReload = canBlockReload
        self.canSkipUntil = canSkipUntil
        self.canSkipDateRanges = canSkipDateRanges
        self.holdBack = holdBack
        self.partHoldBack = partHoldBack
    }
}

/// An EXT-X-PART tag (RFC 8216bis section 4.4.4.9): one partial segment of a media segment.
public struct PartialSegment: Sendable, Hashable {
    /// DURATION in seconds (rendered with three decimals).
    public var duration: Double
    /// URI of the part.
    public var uri: String
    /// INDEPENDENT=YES: the part starts with an independent frame.
    public var independent: Bool
    /// GAP=YES: the part is not available.
    public var gap: Bool
    /// BYTERANGE (a range of `uri`); nil: the whole resource.
    public var byteRange: ByteRange?

    public init(
        duration: Double, uri: String, independent: Bool = false, gap: Bool = false, byteRange: ByteRange? = nil
    ) {
        self.duration = duration
        self.uri = uri
        self.independent = independent
        self.gap = gap
        self.byteRange = byteRange
    }
}

/// An EXT-X-PRELOAD-HINT tag (RFC 8216bis section 4.4.5.3): a resource the client may request before it is listed.
public struct PreloadHint: Sendable, Hashable {
    /// TYPE: PART or MAP.
    public enum HintType: String, Sendable, Hashable {
        case part = "PART"
        case map = "MAP"
    }
    public var type: HintType
    public var uri: String
    /// BYTERANGE-START; nil: 0.
    public var byteRangeStart: Int?
    /// BYTERANGE-LENGTH; nil: to the end of the resource.
    public var byteRangeLength: Int?

    public init(type: HintType, uri: String, byteRangeStart: Int? = nil, byteRangeLength: Int? = nil) {
        self.type = type
        self.uri = uri
        self.byteRangeStart = byteRangeStart
        self.byteRangeLength = byteRangeLength
    }
}

/// An EXT-X-RENDITION-REPORT tag (RFC 8216bis section 4.4.5.4): where another rendition of the presentation is.
public struct RenditionReport: Sendable, Hashable {
    /// URI of the other rendition's media playlist, relative to this playlist.
    public var uri: String
    /// LAST-MSN: the other rendition's last media sequence number (of its last segment or part).
    public var lastMSN: UInt64
    /// LAST-PART: the index of its last part of `lastMSN`; nil for a rendition without parts.
    public var lastPart: Int?

    public init(uri: String, lastMSN: UInt64, lastPart: Int? = nil) {
        self.uri = uri
        self.lastMSN = lastMSN
        self.lastPart = lastPart
    }
}

/// EXT-X-SKIP (RFC 8216bis section 4.4.5.2): the segments a playlist delta update leaves out.
public struct Skip: Sendable, Hashable {
    /// SKIPPED-SEGMENTS.
    public var skippedSegments: Int
    /// RECENTLY-REMOVED-DATERANGES (the `_HLS_skip=v2` form): IDs of date ranges removed from the playlist
    /// recently; nil: the attribute is not rendered (`_HLS_skip=YES`, or none removed).
    public var recentlyRemovedDateRanges: [String]?

    public init(skippedSegments: Int, recentlyRemovedDateRanges: [String]? = nil) {
        self.skippedSegments = skippedSegments
        self.recentlyRemovedDateRanges = recentlyRemovedDateRanges
    }
}

/// The delta update a client asks for with `_HLS_skip` (RFC 8216bis section 6.2.5.1).
public enum SkipRequest: String, Sendable, Hashable {
    /// `_HLS_skip=YES`: skip old segments.
    case segments = "YES"
    /// `_HLS_skip=v2`: also skip old date ranges, and report recently removed ones.
    case segmentsAndDateRanges = "v2"
}

extension MediaPlaylist {
    /// The playlist delta update of this full playlist (RFC 8216bis section 4.4.5.2, 6.2.5.1): the leading segments
    /// that end more than `serverControl.canSkipUntil` seconds before the end of the playlist (the end of the last
    /// part of ``segmentInProgress`` if any, else of the last segment) are replaced by EXT-X-SKIP; at least one
    /// segment is kept. With `.segmentsAndDateRanges` the date ranges attached to skipped segments are left out too
    /// (with `.segments` they stay, moved onto the first kept segment) and RECENTLY-REMOVED-DATERANGES carries
    /// `recentlyRemovedDateRanges` (rendered even when empty: the spec requires the attribute in an update that skips
    /// date ranges, and it is what marks one, for the version rule and for parsing). The first kept segment carries what the
    /// skipped lines stated for it: the EXT-X-KEY in force and, when it has none, a PROGRAM-DATE-TIME derived from
    /// the last skipped one (EXT-X-MAP is rendered on the first segment anyway; DISCONTINUITY-SEQUENCE and
    /// MEDIA-SEQUENCE stay). nil when the playlist offers no delta updates (no CAN-SKIP-UNTIL, or
    /// CAN-SKIP-DATERANGES missing for v2), is one already, or nothing would be skipped.
    public func deltaUpdate(_ request: SkipRequest, recentlyRemovedDateRanges: [String] = []) -> MediaPlaylist? {
        guard skip == nil, let control = serverControl, let skipUntil = control.canSkipUntil, segments.count > 1
        else { return nil }
        if request == .segmentsAndDateRanges, !control.canSkipDateRanges { return nil }
        func milliseconds(_ seconds: Double) -> Int64 { NumberFormatting.milliseconds(seconds) }
        var ends: [Int64] = []
        ends.reserveCapacity(segments.count)
        var end: Int64 = 0
        for segment in segments {
            end += milliseconds(segment.duration)
            ends.append(end)
        }
        for part in segmentInProgress?.parts ?? [] {
            end += milliseconds(part.duration)
        }
        let boundary = end - milliseconds(skipUntil)
        var skipped = 0
        while skipped < segments.count - 1, ends[skipped] < boundary { skipped += 1 }
        guard skipped > 0 else { return nil }

        var keyInForce: EncryptionKey?
        var lastDate: (date: ProgramDateTime, startMilliseconds: Int64)?
        for index in 0..<skipped {
            if let key = segments[index].key { keyInForce = key }
            if let date = segments[index].programDateTime {
                lastDate = (date, index == 0 ? 0 : ends[index - 1])
            }
        }
        var delta = self
        delta.segments.removeFirst(skipped)
        if delta.segments[0].key == nil { delta.segments[0].key = keyInForce }
        if delta.segments[0].programDateTime == nil, let lastDate {
            delta.segments[0].programDateTime = lastDate.date.adding(
                milliseconds: ends[skipped - 1] - lastDate.startMilliseconds)
        }
        switch request {
        case .segments:
            // `_HLS_skip=YES` skips segments only: their date ranges stay, ahead of the first kept segment's.
            let skippedDateRanges = segments[0..<skipped].flatMap(\.dateRanges)
            delta.segments[0].dateRanges = skippedDateRanges + delta.segments[0].dateRanges
            delta.skip = Skip(skippedSegments: skipped)
        case .segmentsAndDateRanges:
            delta.skip = Skip(skippedSegments: skipped, recentlyRemovedDateRanges: recentlyRemovedDateRanges)
        }
        return delta
    }
}
