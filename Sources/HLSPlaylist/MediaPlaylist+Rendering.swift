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
    /// PLAYLIST-TYPE, INDEPENDENT-SEGMENTS, DEFINEs. Per segment: DATERANGEs, DISCONTINUITY, MAP (on the first
    /// segment with a map and whenever it differs from the previous segment's), PROGRAM-DATE-TIME, extra tags,
    /// BYTERANGE, GAP, EXTINF (three decimals), URI. ENDLIST last. Values are not checked here.
    public func render() -> String {
        var text = ""
        text.reserveCapacity(160 + segments.count * 96)
        text += "#EXTM3U\n"
        text += "#EXT-X-VERSION:\(minimumVersion)\n"
        text += "#EXT-X-TARGETDURATION:\(targetDuration)\n"
        text += "#EXT-X-MEDIA-SEQUENCE:\(mediaSequence)\n"
        text += "#EXT-X-DISCONTINUITY-SEQUENCE:\(discontinuitySequence)\n"
        if let playlistType {
            text += "#EXT-X-PLAYLIST-TYPE:\(playlistType.rawValue)\n"
        }
        if independentSegments {
            text += "#EXT-X-INDEPENDENT-SEGMENTS\n"
        }
        for definition in definitions {
            text += definition.renderedTag + "\n"
        }
        var previousMap: MediaInitializationSection?
        for segment in segments {
            for dateRange in segment.dateRanges {
                text += dateRange.renderedTag + "\n"
            }
            if segment.discontinuity {
                text += "#EXT-X-DISCONTINUITY\n"
            }
            if let map = segment.map, map != previousMap {
                text += "#EXT-X-MAP:URI=" + AttributeList.quoted(map.uri)
                if let byteRange = map.byteRange {
                    text += ",BYTERANGE=" + AttributeList.quoted(byteRange.rendered)
                }
                text += "\n"
                previousMap = map
            }
            if let programDateTime = segment.programDateTime {
                text += "#EXT-X-PROGRAM-DATE-TIME:" + programDateTime.formatted + "\n"
            }
            for tag in segment.extraTags {
                text += tag + "\n"
            }
            if let byteRange = segment.byteRange {
                text += "#EXT-X-BYTERANGE:" + byteRange.rendered + "\n"
            }
            if segment.gap {
                text += "#EXT-X-GAP\n"
            }
            text += "#EXTINF:" + NumberFormatting.fixed3(segment.duration) + "," + segment.title + "\n"
            text += segment.uri + "\n"
        }
        if endList {
            text += "#EXT-X-ENDLIST\n"
        }
        return text
    }
}

extension ByteRange {
    /// `length[@offset]`.
    var rendered: String {
        if let offset { return "\(length)@\(offset)" }
        return "\(length)"
    }
}
