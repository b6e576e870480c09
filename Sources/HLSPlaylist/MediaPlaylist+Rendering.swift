extension MediaPlaylist {
    /// The lowest EXT-X-VERSION the playlist's features allow (RFC 8216 section 7, 8216bis section 8).
    ///
    /// - 3: always, since EXTINF durations are rendered as decimals (an EXT-X-KEY with IV needs 2, so adds nothing);
    /// - 4: any EXT-X-BYTERANGE (segment byte ranges, or a BYTERANGE on EXT-X-MAP), or EXT-X-I-FRAMES-ONLY;
    /// - 5: any EXT-X-MAP in an I-frame-only playlist; 6: in any other;
    /// - 8: any EXT-X-DEFINE (variable substitution); 11 when one uses QUERYPARAM.
    /// DATERANGE, GAP, PROGRAM-DATE-TIME, DISCONTINUITY, PLAYLIST-TYPE and AES-128 without IV carry no version rule.
    public var minimumVersion: Int {
        var version = iFramesOnly ? 4 : 3
        for segment in segments {
            if segment.byteRange != nil { version = max(version, 4) }
            if let map = segment.map {
                version = max(version, iFramesOnly ? 5 : 6)
                if map.byteRange != nil { version = max(version, 4) }
            }
            if let key = segment.key { version = max(version, key.minimumVersion) }
        }
        for definition in definitions {
            version = max(version, definition.minimumVersion)
        }
        return version
    }

    /// The playlist text, byte for byte as documented in docs/hls-playlist.md; every line ends with `\n`.
    ///
    /// Header: EXTM3U, VERSION (``minimumVersion``), TARGETDURATION, MEDIA-SEQUENCE, DISCONTINUITY-SEQUENCE,
    /// PLAYLIST-TYPE, INDEPENDENT-SEGMENTS, I-FRAMES-ONLY, START, DEFINEs. Per segment: DATERANGEs, DISCONTINUITY, MAP
    /// (on the first segment with a map and whenever it differs from the previous segment's), KEY (where set),
    /// PROGRAM-DATE-TIME, extra tags, BYTERANGE, GAP, EXTINF (three decimals), URI. ENDLIST last. A MAP that changes
    /// while an AES-128 key is in force is written between `#EXT-X-KEY:METHOD=NONE` and that key stated again, so no
    /// initialization section is ever encrypted. Values are not checked here.
    public func render() -> String {
        var text = ""
        text.reserveCapacity(160 + segments.count * 96)
        renderHeader(into: &text, version: minimumVersion)
        var previousMap: MediaInitializationSection?
        var keyInForce: EncryptionKey?
        for segment in segments {
            segment.render(into: &text, previousMap: &previousMap, keyInForce: &keyInForce)
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
        if iFramesOnly {
            text += "#EXT-X-I-FRAMES-ONLY\n"
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
    /// Appends the segment's lines as ``MediaPlaylist/render()`` writes them, for a playlist without EXT-X-KEY
    /// tracking across calls (the key in force before this segment is taken to be none).
    /// - Parameters:
    ///   - text: where the lines go.
    ///   - previousMap: the EXT-X-MAP in force before this segment (nil before the first); EXT-X-MAP is written when
    ///     the segment's differs, and `previousMap` is updated.
    public func render(into text: inout String, previousMap: inout MediaInitializationSection?) {
        var keyInForce: EncryptionKey?
        render(into: &text, previousMap: &previousMap, keyInForce: &keyInForce)
    }

    /// Appends the segment's lines as ``MediaPlaylist/render()`` writes them.
    /// - Parameters:
    ///   - text: where the lines go.
    ///   - previousMap: the EXT-X-MAP in force before this segment (nil before the first); EXT-X-MAP is written when
    ///     the segment's differs, and `previousMap` is updated.
    ///   - keyInForce: the EXT-X-KEY in force before this segment (nil before the first KEY); updated to this
    ///     segment's ``key`` when it has one. When the MAP changes while an AES-128 key is in force, the MAP is
    ///     written between `#EXT-X-KEY:METHOD=NONE` and the key (this segment's, else the one in force) again.
    public func render(
        into text: inout String, previousMap: inout MediaInitializationSection?, keyInForce: inout EncryptionKey?
    ) {
        for dateRange in dateRanges {
            text += dateRange.renderedTag + "\n"
        }
        if discontinuity {
            text += "#EXT-X-DISCONTINUITY\n"
        }
        var keyToWrite = key
        var clearedForMap = false
        if let map, map != previousMap {
            if let inForce = keyInForce, inForce.encrypts {
                text += EncryptionKey.none.renderedKeyTag + "\n"
                clearedForMap = true
                if keyToWrite == nil { keyToWrite = inForce }
            }
            text += "#EXT-X-MAP:URI=" + AttributeList.quoted(map.uri)
            if let byteRange = map.byteRange {
                text += ",BYTERANGE=" + AttributeList.quoted(byteRange.rendered)
            }
            text += "\n"
            previousMap = map
        }
        if let keyToWrite {
            if !(clearedForMap && keyToWrite == EncryptionKey.none) {
                text += keyToWrite.renderedKeyTag + "\n"
            }
            keyInForce = keyToWrite
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
