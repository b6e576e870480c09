extension MediaPlaylist {
    /// Tags that apply to the whole playlist or to features this model does not carry; read and dropped.
    static let ignoredTags: Set<String> = ["EXT-X-ALLOW-CACHE"]
    /// Multivariant playlist tags: a media playlist that contains one is refused (RFC 8216 section 4.3).
    static let multivariantOnlyTags: Set<String> = [
        "EXT-X-STREAM-INF", "EXT-X-MEDIA", "EXT-X-I-FRAME-STREAM-INF", "EXT-X-SESSION-DATA", "EXT-X-SESSION-KEY",
        "EXT-X-CONTENT-STEERING",
    ]

    /// Parses a media playlist.
    ///
    /// Tolerant of what encoders write (ffmpeg's `#EXTINF:2.000000,`, `#EXT-X-ALLOW-CACHE`, CRLF, blank lines,
    /// comments, spaces around a line); strict where RFC 8216 is: `#EXTM3U` first, EXTINF before every URI,
    /// EXT-X-TARGETDURATION present, no playlist tag twice, attribute lists per section 4.2, no multivariant tags,
    /// `{$name}` references defined earlier by EXT-X-DEFINE.
    ///
    /// EXT-X-START is read into ``start`` (TIME-OFFSET required, PRECISE=NO when absent). EXT-X-I-FRAMES-ONLY sets
    /// ``iFramesOnly``. EXT-X-KEY with METHOD NONE or AES-128 (URI required and substituted, IV 0x + 32 hex digits,
    /// KEYFORMAT absent or `identity`) becomes the next segment's ``MediaSegment/key`` (the last one when several
    /// precede it); other methods and key formats (SAMPLE-AES, FairPlay) are kept as written in `extraTags`. An
    /// EXT-X-MAP under an AES-128 key without IV is refused (RFC 8216 section 4.3.2.5 requires the IV there).
    ///
    /// Segment tags (DISCONTINUITY, MAP, PROGRAM-DATE-TIME, BYTERANGE, GAP, DATERANGE) attach to the next URI; MAP
    /// carries over to later segments until the next MAP. Any other unknown `#EXT` tag is kept, as written, in the
    /// next segment's `extraTags` (except the playlist-level tags in `ignoredTags`); tags after the last URI that
    /// belong to no segment (a trailing DATERANGE, say) are dropped. EXT-X-VERSION is checked for form, not value.
    /// A DATERANGE without START-DATE takes it from an earlier DATERANGE with the same ID (8216bis), else fails.
    ///
    /// Low-Latency tags: SERVER-CONTROL, PART-INF and SKIP (once each) fill ``serverControl``, ``partTarget`` and
    /// ``skip``; EXT-X-PART tags attach to the segment whose URI follows them, and parts after the last URI make
    /// ``segmentInProgress`` (with the segment tags read since that URI; empty `uri`, duration 0); PRELOAD-HINT and
    /// RENDITION-REPORT are collected in order. Their attributes are checked like the others (required ones present,
    /// decimals, YES, quoted URIs).
    /// - Parameter text: the playlist text.
    /// - Throws: ``PlaylistParseError`` with the 1-based line number.
    public static func parse(_ text: String) throws(PlaylistParseError) -> MediaPlaylist {
        var parser = MediaPlaylistParser()
        for line in try PlaylistText.lines(text).dropFirst() {
            try parser.read(line)
        }
        return try parser.finish()
    }
}

/// The state of one media playlist parse.
private struct MediaPlaylistParser {
    var playlist = MediaPlaylist(targetDuration: 0)
    var seenPlaylistTags: Set<String> = []
    var variables = VariableTable()
    var dateRangeStarts: [String: ProgramDateTime] = [:]

    // The segment being assembled.
    var pendingDuration: (duration: Double, title: String, line: Int)?
    var pendingDiscontinuity = false
    var pendingGap = false
    var pendingProgramDateTime: ProgramDateTime?
    var pendingByteRange: ByteRange?
    var pendingDateRanges: [DateRange] = []
    var pendingExtraTags: [String] = []
    var pendingKey: EncryptionKey?
    var pendingParts: [PartialSegment] = []
    /// The last EXT-X-KEY read, whatever segment it belongs to: the key that applies to an EXT-X-MAP.
    var keyInForce: EncryptionKey?
    var currentMap: MediaInitializationSection?

    mutating func read(_ line: PlaylistText.Line) throws(PlaylistParseError) {
        if PlaylistText.isComment(line.text) { return }
        guard let tag = PlaylistText.tag(line.text) else {
            try addSegment(uri: line.text, line: line.number)
            return
        }
        try read(tag, line: line)
    }

    mutating func read(_ tag: PlaylistText.Tag, line: PlaylistText.Line) throws(PlaylistParseError) {
        let number = line.number
        switch tag.name {
        case "EXTM3U":
            throw PlaylistParseError(line: number, message: "#EXTM3U appears twice")
        case "EXT-X-VERSION":
            try once(tag.name, line: number)
            guard let value = tag.value, let version = AttributeList.decimalInteger(value), version >= 1 else {
                throw PlaylistParseError(line: number, message: "#EXT-X-VERSION must be a positive integer")
            }
        case "EXT-X-TARGETDURATION":
            try once(tag.name, line: number)
            playlist.targetDuration = Int(try Self.integer(tag, line: number, maximum: UInt64(Int.max)))
        case "EXT-X-MEDIA-SEQUENCE":
            try once(tag.name, line: number)
            playlist.mediaSequence = UInt64(try Self.integer(tag, line: number, maximum: .max))
        case "EXT-X-DISCONTINUITY-SEQUENCE":
            try once(tag.name, line: number)
            playlist.discontinuitySequence = UInt64(try Self.integer(tag, line: number, maximum: .max))
        case "EXT-X-PLAYLIST-TYPE":
            try once(tag.name, line: number)
            guard let value = tag.value, let type = PlaylistType(rawValue: value) else {
                throw PlaylistParseError(line: number, message: "#EXT-X-PLAYLIST-TYPE must be EVENT or VOD")
            }
            playlist.playlistType = type
        case "EXT-X-INDEPENDENT-SEGMENTS":
            try once(tag.name, line: number)
            playlist.independentSegments = true
        case "EXT-X-ENDLIST":
            try once(tag.name, line: number)
            playlist.endList = true
        case "EXT-X-I-FRAMES-ONLY":
            try once(tag.name, line: number)
            playlist.iFramesOnly = true
        case "EXT-X-KEY":
            let attributes = try TagAttributes(tag: tag, line: number)
            if let key = try EncryptionKey.parse(attributes, variables: variables) {
                pendingKey = key
                keyInForce = key
            } else {
                pendingExtraTags.append(line.text)
            }
        case "EXT-X-START":
            try once(tag.name, line: number)
            let attributes = try TagAttributes(tag: tag, line: number)
            guard let offset = try attributes.decimal("TIME-OFFSET", allowNegative: true) else {
                throw attributes.error("TIME-OFFSET is required")
            }
            playlist.start = StartOffset(timeOffset: offset, precise: try attributes.yesNo("PRECISE") ?? false)
        case "EXT-X-DEFINE":
            let attributes = try TagAttributes(tag: tag, line: number)
            playlist.definitions.append(try variables.define(attributes, allowImport: true))
        case "EXTINF":
            guard pendingDuration == nil else {
                throw PlaylistParseError(line: number, message: "a second #EXTINF before the segment's URI")
            }
            pendingDuration = try Self.extinf(tag.value ?? "", line: number)
        case "EXT-X-DISCONTINUITY":
            pendingDiscontinuity = true
        case "EXT-X-GAP":
            pendingGap = true
        case "EXT-X-PROGRAM-DATE-TIME":
            guard let value = tag.value, let date = ProgramDateTime(iso8601: value) else {
                throw PlaylistParseError(line: number, message: "#EXT-X-PROGRAM-DATE-TIME is not a valid date-time")
            }
            pendingProgramDateTime = date
        case "EXT-X-BYTERANGE":
            guard let value = tag.value, let range = Self.byteRange(value) else {
                throw PlaylistParseError(line: number, message: "#EXT-X-BYTERANGE must be <length>[@<offset>]")
            }
            pendingByteRange = range
        case "EXT-X-MAP":
            let attributes = try TagAttributes(tag: tag, line: number)
            let uri = try attributes.requiredQuoted("URI", variables: variables)
            var byteRange: ByteRange?
            if let rangeText = try attributes.quoted("BYTERANGE", variables: variables) {
                guard let range = Self.byteRange(rangeText) else {
                    throw attributes.error("BYTERANGE must be \"<length>[@<offset>]\"")
                }
                byteRange = range
            }
            if case .aes128(_, nil) = keyInForce {
                throw attributes.error("an AES-128 EXT-X-KEY without IV applies to it (RFC 8216 4.3.2.5 needs the IV)")
            }
            currentMap = MediaInitializationSection(uri: uri, byteRange: byteRange)
        case "EXT-X-SERVER-CONTROL":
            try once(tag.name, line: number)
            playlist.serverControl = try Self.serverControl(tag, line: number)
        case "EXT-X-PART-INF":
            try once(tag.name, line: number)
            let attributes = try TagAttributes(tag: tag, line: number)
            guard let target = try attributes.decimal("PART-TARGET") else {
                throw attributes.error("PART-TARGET is required")
            }
            playlist.partTarget = target
        case "EXT-X-SKIP":
            try once(tag.name, line: number)
            let attributes = try TagAttributes(tag: tag, line: number)
            guard let skipped = try attributes.integer("SKIPPED-SEGMENTS") else {
                throw attributes.error("SKIPPED-SEGMENTS is required")
            }
            var skip = Skip(skippedSegments: skipped)
            if let removed = try attributes.quoted("RECENTLY-REMOVED-DATERANGES", variables: variables) {
                skip.recentlyRemovedDateRanges = removed.split(separator: "\t").map(String.init)
            }
            playlist.skip = skip
        case "EXT-X-PART":
            let attributes = try TagAttributes(tag: tag, line: number)
            guard let duration = try attributes.decimal("DURATION") else {
                throw attributes.error("DURATION is required")
            }
            var part = PartialSegment(
                duration: duration, uri: try attributes.requiredQuoted("URI", variables: variables))
            part.independent = try Self.yes("INDEPENDENT", attributes)
            part.gap = try Self.yes("GAP", attributes)
            if let rangeText = try attributes.quoted("BYTERANGE", variables: variables) {
                guard let range = Self.byteRange(rangeText) else {
                    throw attributes.error("BYTERANGE must be \"<length>[@<offset>]\"")
                }
                part.byteRange = range
            }
            pendingParts.append(part)
        case "EXT-X-PRELOAD-HINT":
            let attributes = try TagAttributes(tag: tag, line: number)
            guard let typeText = try attributes.enumerated("TYPE"), let type = PreloadHint.HintType(rawValue: typeText)
            else {
                throw attributes.error("TYPE must be PART or MAP")
            }
            playlist.preloadHints.append(
                PreloadHint(
                    type: type, uri: try attributes.requiredQuoted("URI", variables: variables),
                    byteRangeStart: try attributes.integer("BYTERANGE-START"),
                    byteRangeLength: try attributes.integer("BYTERANGE-LENGTH")))
        case "EXT-X-RENDITION-REPORT":
            let attributes = try TagAttributes(tag: tag, line: number)
            let uri = try attributes.requiredQuoted("URI", variables: variables)
            guard let lastMSNText = attributes.values["LAST-MSN"] else {
                throw attributes.error("LAST-MSN is required")
            }
            guard let lastMSN = AttributeList.decimalInteger(lastMSNText) else {
                throw attributes.error("LAST-MSN must be a decimal integer")
            }
            playlist.renditionReports.append(
                RenditionReport(uri: uri, lastMSN: lastMSN, lastPart: try attributes.integer("LAST-PART")))
        case "EXT-X-DATERANGE":
            let attributes = try TagAttributes(tag: tag, line: number)
            let dateRange = try Self.dateRange(attributes, variables: variables, earlierStarts: dateRangeStarts)
            if dateRangeStarts[dateRange.id] == nil { dateRangeStarts[dateRange.id] = dateRange.startDate }
            pendingDateRanges.append(dateRange)
        default:
            if MediaPlaylist.multivariantOnlyTags.contains(tag.name) {
                throw PlaylistParseError(line: number, message: "#\(tag.name) belongs in a multivariant playlist")
            }
            if !MediaPlaylist.ignoredTags.contains(tag.name) {
                pendingExtraTags.append(line.text)
            }
        }
    }

    mutating func once(_ name: String, line: Int) throws(PlaylistParseError) {
        guard seenPlaylistTags.insert(name).inserted else {
            throw PlaylistParseError(line: line, message: "#\(name) appears twice")
        }
    }

    mutating func addSegment(uri rawURI: String, line: Int) throws(PlaylistParseError) {
        guard let extinf = pendingDuration else {
            throw PlaylistParseError(line: line, message: "URI line without a preceding #EXTINF")
        }
        let uri: String
        do {
            uri = try variables.substitute(rawURI)
        } catch {
            throw error.at(line: line)
        }
        playlist.segments.append(
            MediaSegment(
                uri: uri, duration: extinf.duration, title: extinf.title, discontinuity: pendingDiscontinuity,
                gap: pendingGap, programDateTime: pendingProgramDateTime, map: currentMap, byteRange: pendingByteRange,
                dateRanges: pendingDateRanges, extraTags: pendingExtraTags))
        playlist.segments[playlist.segments.count - 1].key = pendingKey
        playlist.segments[playlist.segments.count - 1].parts = pendingParts
        pendingParts = []
        pendingKey = nil
        pendingDuration = nil
        pendingDiscontinuity = false
        pendingGap = false
        pendingProgramDateTime = nil
        pendingByteRange = nil
        pendingDateRanges = []
        pendingExtraTags = []
    }

    func finish() throws(PlaylistParseError) -> MediaPlaylist {
        if let pendingDuration {
            throw PlaylistParseError(line: pendingDuration.line, message: "#EXTINF without a URI line after it")
        }
        guard seenPlaylistTags.contains("EXT-X-TARGETDURATION") else {
            throw PlaylistParseError(line: 0, message: "#EXT-X-TARGETDURATION is missing")
        }
        var playlist = playlist
        if !pendingParts.isEmpty {
            var segment = MediaSegment(
                uri: "", duration: 0, discontinuity: pendingDiscontinuity, gap: pendingGap,
                programDateTime: pendingProgramDateTime, map: currentMap, byteRange: pendingByteRange,
                dateRanges: pendingDateRanges, extraTags: pendingExtraTags)
            segment.key = pendingKey
            segment.parts = pendingParts
            playlist.segmentInProgress = segment
        }
        return playlist
    }

    /// EXT-X-SERVER-CONTROL; an empty attribute list is a control with nothing supported.
    static func serverControl(_ tag: PlaylistText.Tag, line: Int) throws(PlaylistParseError) -> ServerControl {
        guard let value = tag.value, !value.isEmpty else { return ServerControl() }
        let attributes = try TagAttributes(tag: tag, line: line)
        var control = ServerControl()
        control.canBlockReload = try yes("CAN-BLOCK-RELOAD", attributes)
        control.canSkipUntil = try attributes.decimal("CAN-SKIP-UNTIL")
        control.canSkipDateRanges = try yes("CAN-SKIP-DATERANGES", attributes)
        control.holdBack = try attributes.decimal("HOLD-BACK")
        control.partHoldBack = try attributes.decimal("PART-HOLD-BACK")
        if control.canSkipDateRanges, control.canSkipUntil == nil {
            throw attributes.error("CAN-SKIP-DATERANGES needs CAN-SKIP-UNTIL")
        }
        return control
    }

    /// An attribute whose only value is YES (absent: false).
    static func yes(_ name: String, _ attributes: TagAttributes) throws(PlaylistParseError) -> Bool {
        guard let value = try attributes.enumerated(name) else { return false }
        guard value == "YES" else { throw attributes.error("\(name) must be YES") }
        return true
    }

    // MARK: - Values

    static func integer(_ tag: PlaylistText.Tag, line: Int, maximum: UInt64) throws(PlaylistParseError) -> UInt64 {
        guard let value = tag.value, let number = AttributeList.decimalInteger(value), number <= maximum else {
            throw PlaylistParseError(line: line, message: "#\(tag.name) must be a decimal integer")
        }
        return number
    }

    /// `#EXTINF:<duration>,[<title>]`; the comma may be missing (pre-version-3 playlists).
    /// The longest EXTINF the parser takes (a year): anything longer is a broken playlist, and refusing it keeps
    /// every sum of durations far inside 64-bit milliseconds.
    static let longestSegmentSeconds: Double = 31_536_000

    static func extinf(
        _ value: String, line: Int
    ) throws(PlaylistParseError) -> (duration: Double, title: String, line: Int) {
        let durationText: Substring
        let title: Substring
        if let comma = value.firstIndex(of: ",") {
            durationText = value[..<comma]
            title = value[value.index(after: comma)...]
        } else {
            durationText = value[...]
            title = ""
        }
        guard let duration = AttributeList.decimal(String(durationText)), duration >= 0 else {
            throw PlaylistParseError(line: line, message: "#EXTINF duration must be a decimal number >= 0")
        }
        guard duration <= Self.longestSegmentSeconds else {
            throw PlaylistParseError(
                line: line, message: "#EXTINF duration \(durationText) is longer than any segment can be")
        }
        return (duration, String(title), line)
    }

    /// `<length>[@<offset>]`.
    static func byteRange(_ text: String) -> ByteRange? {
        let parts = text.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
        guard let length = AttributeList.decimalInteger(String(parts[0])), length <= UInt64(Int.max) else {
            return nil
        }
        guard parts.count == 2 else { return ByteRange(length: Int(length)) }
        guard let offset = AttributeList.decimalInteger(String(parts[1])), offset <= UInt64(Int.max) else {
            return nil
        }
        return ByteRange(length: Int(length), offset: Int(offset))
    }

    static func dateRange(
        _ attributes: TagAttributes, variables: VariableTable, earlierStarts: [String: ProgramDateTime]
    ) throws(PlaylistParseError) -> DateRange {
        let id = try attributes.requiredQuoted(DateRangeAttribute.id.name, variables: variables)
        let startDate: ProgramDateTime
        if let startText = try attributes.quoted(DateRangeAttribute.startDate.name, variables: variables) {
            guard let date = ProgramDateTime(iso8601: startText) else {
                throw attributes.error("\(DateRangeAttribute.startDate.name) is not a valid date-time")
            }
            startDate = date
        } else if let earlier = earlierStarts[id] {
            startDate = earlier
        } else {
            throw attributes.error("\(DateRangeAttribute.startDate.name) is required")
        }
        var dateRange = DateRange(id: id, startDate: startDate)
        dateRange.classAttribute = try attributes.quoted(DateRangeAttribute.classAttribute.name, variables: variables)
        if let cue = try attributes.quoted(DateRangeAttribute.cue.name, variables: variables) {
            dateRange.cue = cue.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        }
        if let endText = try attributes.quoted(DateRangeAttribute.endDate.name, variables: variables) {
            guard let date = ProgramDateTime(iso8601: endText) else {
                throw attributes.error("\(DateRangeAttribute.endDate.name) is not a valid date-time")
            }
            dateRange.endDate = date
        }
        dateRange.duration = try attributes.decimal(DateRangeAttribute.duration.name)
        dateRange.plannedDuration = try attributes.decimal(DateRangeAttribute.plannedDuration.name)
        dateRange.scte35Command = try attributes.hexadecimal(DateRangeAttribute.scte35Command.name)
        dateRange.scte35Out = try attributes.hexadecimal(DateRangeAttribute.scte35Out.name)
        dateRange.scte35In = try attributes.hexadecimal(DateRangeAttribute.scte35In.name)
        if let endOnNext = try attributes.enumerated(DateRangeAttribute.endOnNext.name) {
            guard endOnNext == "YES" else { throw attributes.error("\(DateRangeAttribute.endOnNext.name) must be YES") }
            dateRange.endOnNext = true
        }
        for name in attributes.order where name.hasPrefix("X-") {
            guard let raw = attributes.values[name] else { continue }
            var value = AttributeList.value(raw)
            if case .quotedString = value {
                value = .quotedString(try attributes.quoted(name, variables: variables) ?? "")
            }
            dateRange.clientAttributes.append(ClientAttribute(name: name, value: value))
        }
        return dateRange
    }
}
