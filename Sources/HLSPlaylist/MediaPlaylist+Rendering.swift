extension MediaPlaylist {
    /// The lowest EXT-X-VERSION the playlist's features allow (RFC 8216 section 7, 8216bis section 8).
    ///
    /// - 3: always, since EXTINF durations are rendered as decimals;
    /// - 4: any EXT-X-BYTERANGE (segment byte ranges, or a BYTERANGE on EXT-X-MAP);
    /// - 6: any EXT-X-MAP (in a media playlist that is not I-frame-only);
    /// - 8: any EXT-X-DEFINE (variable substitution); 11 when one uses QUERYPARAM.
    /// DATERANGE, GAP, PROGRAM-DATE-TIME, DISCONTINUITY and PLAYLIST-TYPE carry no version rule.
    public var minimumVersion: Int {
        var version = 3
        for segment in segments {
            if segment.byteRange != nil { version = max(version, 4) }
            if let map = segment.map {
                version = max(version, 6)
                if map.byteRange != nil { version = max(version, 4) }
            }
        }
        for definition in definitions {
            version = max(version, definition.minimumVersion)
        }
        return version
    }

    /// The playlist text, byte for byte as documented in docs/hls-playlist.md; every line ends with `\n`.
    ///
    /// Header: EXTM3U, VERSION (``minimumVersion``), TARGETDURATION, MEDIA-SEQUENCE, DISCONTINUITY-SEQUENCE,
    /// PLAYLIST-TYPE, INDEPENDENT-SEGMENTS, START, DEFINEs. Per segment: DATERANGEs, DISCONTINUITY, MAP (on the first
    /// segment with a map and whenever it differs from the previous segment's), PROGRAM-DATE-TIME, extra tags,
    /// BYTERANGE, GAP, EXTINF (three decimals), URI. ENDLIST last. Values are not checked here.
    public func render() -> String {
        var text = ""
        text.reserveCapacity(160 + segments.count * 96)
        renderHeader(into: &text, version: minimumVersion)
        var previousMap: MediaInitializationSection?
        for segment in segments {
            segment.render(into: &text, previousMap: &previousMap)
        }
        if endList {
            text += "#EXT-X-ENDLIST\n"
        }
        return text
    }

    /// Appends the header lines of ``render()`` (EXTM3U to the DEFINEs), for a renderer that assembles the segment
    /// lines itself (the DVR playlists, from cached blocks).
    /// - Parameters:
    ///   - text: where the lines go.
    ///   - version: EXT-X-VERSION; ``render()`` passes ``minimumVersion``.
    public func renderHeader(into text: inout String, version: Int) {
        text += "#EXTM3U\n"
        text += "#EXT-X-VERSION:\(version)\n"
        text += "#EXT-X-TARGETDURATION:\(targetDuration)\n"
        text += "#EXT-X-MEDIA-SEQUENCE:\(mediaSequence)\n"
        text += "#EXT-X-DISCONTINUITY-SEQUENCE:\(discontinuitySequence)\n"
        if let playlistType {
            text += "#EXT-X-PLAYLIST-TYPE:\(playlistType.rawValue)\n"
        }
        if independentSegments {
            text += "#EXT-X-INDEPENDENT-SEGMENTS\n"
        }
        if let start {
            text += "#EXT-X-START:TIME-OFFSET=" + NumberFormatting.fixed3(start.timeOffset)
            text += start.precise ? ",PRECISE=YES\n" : ",PRECISE=NO\n"
        }
        for definition in definitions {
            text += definition.renderedTag + "\n"
        }
    }
}

extension MediaSegment {
    /// Appends the segment's lines as ``MediaPlaylist/render()`` writes them.
    /// - Parameters:
    ///   - text: where the lines go.
    ///   - previousMap: the EXT-X-MAP in force before this segment (nil before the first); EXT-X-MAP is written when
    ///     the segment's differs, and `previousMap` is updated.
    public func render(into text: inout String, previousMap: inout MediaInitializationSection?) {
        for dateRange in dateRanges {
            text += dateRange.renderedTag + "\n"
        }
        if discontinuity {
            text += "#EXT-X-DISCONTINUITY\n"
        }
        if let map, map != previousMap {
            text += "#EXT-X-MAP:URI=" + AttributeList.quoted(map.uri)
            if let byteRange = map.byteRange {
                text += ",BYTERANGE=" + AttributeList.quoted(byteRange.rendered)
            }
            text += "\n"
            previousMap = map
        }
        if let programDateTime {
            text += "#EXT-X-PROGRAM-DATE-TIME:" + programDateTime.formatted + "\n"
        }
        for tag in extraTags {
            text += tag + "\n"
        }
        if let byteRange {
            text += "#EXT-X-BYTERANGE:" + byteRange.rendered + "\n"
        }
        if gap {
            text += "#EXT-X-GAP\n"
        }
        text += "#EXTINF:" + NumberFormatting.fixed3(duration) + "," + title + "\n"
        text += uri + "\n"
    }
}

extension ByteRange {
    /// `length[@offset]`.
    var rendered: String {
        if let offset { return "\(length)@\(offset)" }
        return "\(length)"
    }
}
