extension MediaPlaylist {
    /// The lowest EXT-X-VERSION the playlist's features allow (RFC 8216 section 7, 8216bis section 8).
    ///
    /// - 3: always, since EXTINF durations are rendered as decimals (an EXT-X-KEY with IV needs 2, so adds nothing);
    /// - 4: any EXT-X-BYTERANGE (segment byte ranges, or a BYTERANGE on EXT-X-MAP), or EXT-X-I-FRAMES-ONLY;
    /// - 5: any EXT-X-MAP in an I-frame-only playlist; 6: in any other;
    /// - 8: any EXT-X-DEFINE (variable substitution); 11 when one uses QUERYPARAM.
    /// - 9: EXT-X-SKIP (a playlist delta update); 10: an EXT-X-SKIP that also replaces EXT-X-DATERANGE tags
    ///   (`_HLS_skip=v2`, marked by RECENTLY-REMOVED-DATERANGES) (8216bis section 8).
    /// DATERANGE, GAP, PROGRAM-DATE-TIME, DISCONTINUITY, PLAYLIST-TYPE, AES-128 without IV and the other Low-Latency
    /// tags (SERVER-CONTROL, PART-INF, PART, PRELOAD-HINT, RENDITION-REPORT) carry no version rule.
    public var minimumVersion: Int {
        var version = iFramesOnly ? 4 : 3
        if let skip {
            version = max(version, skip.recentlyRemovedDateRanges == nil ? 9 : 10)
        }
        let iFramesOnly = iFramesOnly
        func include(_ segment: MediaSegment) {
            if segment.byteRange != nil { version = max(version, 4) }
            if let map = segment.map {
                version = max(version, iFramesOnly ? 5 : 6)
                if map.byteRange != nil { version = max(version, 4) }
            }
            if let key = segment.key { version = max(version, key.minimumVersion) }
        }
        for segment in segments { include(segment) }
        if let segmentInProgress { include(segmentInProgress) }
        for definition in definitions {
            version = max(version, definition.minimumVersion)
        }
        return version
    }

    /// The playlist text, byte for byte as documented in docs/hls-playlist.md; every line ends with `\n`.
    ///
    /// Header: EXTM3U, VERSION (``minimumVersion``), TARGETDURATION, MEDIA-SEQUENCE, DISCONTINUITY-SEQUENCE,
    /// PLAYLIST-TYPE, INDEPENDENT-SEGMENTS, I-FRAMES-ONLY, START, SERVER-CONTROL, PART-INF, DEFINEs, then SKIP (a
    /// delta update). Per segment: DATERANGEs, DISCONTINUITY, MAP (on the first segment with a map and whenever it
    /// differs from the previous segment's), KEY (where set), PROGRAM-DATE-TIME, extra tags, BYTERANGE, GAP, PARTs,
    /// EXTINF (three decimals), URI. Then the segment in progress (its tags up to the extra tags, and its PARTs),
    /// ENDLIST, PRELOAD-HINTs and RENDITION-REPORTs. A MAP that changes
    /// while an AES-128 key is in force is written between `#EXT-X-KEY:METHOD=NONE` and that key stated again, so no
    /// initialization section is ever encrypted. Values are not checked here.
    public func render() -> String {
        var text = ""
        text.reserveCapacity(160 + segments.count * 96)
        renderHeader(into: &text, version: minimumVersion)
        if let skip {
            text += "#EXT-X-SKIP:SKIPPED-SEGMENTS=\(skip.skippedSegments)"
            if let removed = skip.recentlyRemovedDateRanges {
                text += ",RECENTLY-REMOVED-DATERANGES=" + AttributeList.quoted(removed.joined(separator: "\t"))
            }
            text += "\n"
        }
        var previousMap: MediaInitializationSection?
        var keyInForce: EncryptionKey?
        for segment in segments {
            segment.render(into: &text, previousMap: &previousMap, keyInForce: &keyInForce)
        }
        if let segmentInProgress {
            segmentInProgress.renderTags(into: &text, previousMap: &previousMap, keyInForce: &keyInForce)
            segmentInProgress.renderParts(into: &text)
        }
        if endList {
            text += "#EXT-X-ENDLIST\n"
        }
        for hint in preloadHints {
            text += "#EXT-X-PRELOAD-HINT:TYPE=" + hint.type.rawValue + ",URI=" + AttributeList.quoted(hint.uri)
            if let start = hint.byteRangeStart { text += ",BYTERANGE-START=\(start)" }
            if let length = hint.byteRangeLength { text += ",BYTERANGE-LENGTH=\(length)" }
            text += "\n"
        }
        for report in renditionReports {
            text += "#EXT-X-RENDITION-REPORT:URI=" + AttributeList.quoted(report.uri) + ",LAST-MSN=\(report.lastMSN)"
            if let lastPart = report.lastPart { text += ",LAST-PART=\(lastPart)" }
            text += "\n"
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
        if let serverControl {
            var attributes: [String] = []
            if serverControl.canBlockReload { attributes.append("CAN-BLOCK-RELOAD=YES") }
            if let until = serverControl.canSkipUntil {
                attributes.append("CAN-SKIP-UNTIL=" + NumberFormatting.fixed3(until))
            }
            if serverControl.canSkipDateRanges { attributes.append("CAN-SKIP-DATERANGES=YES") }
            if let holdBack = serverControl.holdBack {
                attributes.append("HOLD-BACK=" + NumberFormatting.fixed3(holdBack))
            }
            if let partHoldBack = serverControl.partHoldBack {
                attributes.append("PART-HOLD-BACK=" + NumberFormatting.fixed3(partHoldBack))
            }
            text += "#EXT-X-SERVER-CONTROL:" + attributes.joined(separator: ",") + "\n"
        }
        if let partTarget {
            text += "#EXT-X-PART-INF:PART-TARGET=" + NumberFormatting.fixed3(partTarget) + "\n"
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
        renderTags(into: &text, previousMap: &previousMap, keyInForce: &keyInForce)
        if let byteRange {
            text += "#EXT-X-BYTERANGE:" + byteRange.rendered + "\n"
        }
        if gap {
            text += "#EXT-X-GAP\n"
        }
        renderParts(into: &text)
        text += "#EXTINF:" + NumberFormatting.fixed3(duration) + "," + title + "\n"
        text += uri + "\n"
    }

    /// Appends the EXT-X-PART lines of ``parts``.
    func renderParts(into text: inout String) {
        for part in parts {
            text += "#EXT-X-PART:DURATION=" + NumberFormatting.fixed3(part.duration) + ",URI="
            text += AttributeList.quoted(part.uri)
            if part.independent { text += ",INDEPENDENT=YES" }
            if part.gap { text += ",GAP=YES" }
            if let byteRange = part.byteRange { text += ",BYTERANGE=" + AttributeList.quoted(byteRange.rendered) }
            text += "\n"
        }
    }

    /// Appends the lines that precede the segment's BYTERANGE: DATERANGEs, DISCONTINUITY, MAP, KEY, PDT, extra tags.
    func renderTags(
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
    }
}

extension ByteRange {
    /// `length[@offset]`.
    var rendered: String {
        if let offset { return "\(length)@\(offset)" }
        return "\(length)"
    }
}
