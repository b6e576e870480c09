extension MultivariantPlaylist {
    /// Multivariant tags this model does not carry; read and dropped.
    static let ignoredTags: Set<String> = [
        "EXT-X-SESSION-DATA", "EXT-X-CONTENT-STEERING", "EXT-X-START", "EXT-X-ALLOW-CACHE",
    ]
    /// Media playlist tags: a multivariant playlist that contains one is refused (RFC 8216 section 4.3).
    static let mediaOnlyTags: Set<String> = [
        "EXTINF", "EXT-X-TARGETDURATION", "EXT-X-MEDIA-SEQUENCE", "EXT-X-DISCONTINUITY-SEQUENCE", "EXT-X-BYTERANGE",
        "EXT-X-DISCONTINUITY", "EXT-X-KEY", "EXT-X-MAP", "EXT-X-PROGRAM-DATE-TIME", "EXT-X-DATERANGE",
        "EXT-X-ENDLIST", "EXT-X-PLAYLIST-TYPE", "EXT-X-I-FRAMES-ONLY", "EXT-X-GAP", "EXT-X-PART", "EXT-X-PART-INF",
        "EXT-X-SERVER-CONTROL", "EXT-X-SKIP", "EXT-X-PRELOAD-HINT", "EXT-X-RENDITION-REPORT", "EXT-X-BITRATE",
    ]

    /// Parses a multivariant playlist.
    ///
    /// Strict on `#EXTM3U` first, attribute lists, required attributes (EXT-X-MEDIA: TYPE, GROUP-ID, NAME;
    /// EXT-X-STREAM-INF: BANDWIDTH and a URI line after it), no media playlist tags, EXT-X-DEFINE (no IMPORT here)
    /// and `{$name}` references. EXT-X-I-FRAME-STREAM-INF (BANDWIDTH and URI required) is read into ``iFrameStreams``,
    /// EXT-X-SESSION-KEY (METHOD NONE or AES-128, as EXT-X-KEY) into ``sessionKeys``; SAMPLE-AES session keys, session
    /// data, unknown tags and attributes are ignored. `CLOSED-CAPTIONS=NONE` reads as ``ClosedCaptionsReference/none``.
    /// - Parameter text: the playlist text.
    /// - Throws: ``PlaylistParseError`` with the 1-based line number.
    public static func parse(_ text: String) throws(PlaylistParseError) -> MultivariantPlaylist {
        var playlist = MultivariantPlaylist()
        var variables = VariableTable()
        var seenPlaylistTags: Set<String> = []
        var pendingVariant: (variant: VariantStream, line: Int)?

        for line in try PlaylistText.lines(text).dropFirst() {
            let number = line.number
            if PlaylistText.isComment(line.text) { continue }
            guard let tag = PlaylistText.tag(line.text) else {
                guard var pending = pendingVariant else {
                    throw PlaylistParseError(line: number, message: "URI line without a preceding #EXT-X-STREAM-INF")
                }
                do {
                    pending.variant.uri = try variables.substitute(line.text)
                } catch {
                    throw error.at(line: number)
                }
                playlist.variants.append(pending.variant)
                pendingVariant = nil
                continue
            }
            if pendingVariant != nil, tag.name == "EXT-X-STREAM-INF" {
                throw PlaylistParseError(line: number, message: "#EXT-X-STREAM-INF before the previous one's URI")
            }
            switch tag.name {
            case "EXTM3U":
                throw PlaylistParseError(line: number, message: "#EXTM3U appears twice")
            case "EXT-X-VERSION", "EXT-X-INDEPENDENT-SEGMENTS":
                guard seenPlaylistTags.insert(tag.name).inserted else {
                    throw PlaylistParseError(line: number, message: "#\(tag.name) appears twice")
                }
                if tag.name == "EXT-X-INDEPENDENT-SEGMENTS" {
                    playlist.independentSegments = true
                } else {
                    guard let value = tag.value, let version = AttributeList.decimalInteger(value), version >= 1 else {
                        throw PlaylistParseError(line: number, message: "#EXT-X-VERSION must be a positive integer")
                    }
                }
            case "EXT-X-DEFINE":
                let attributes = try TagAttributes(tag: tag, line: number)
                playlist.definitions.append(try variables.define(attributes, allowImport: false))
            case "EXT-X-MEDIA":
                let attributes = try TagAttributes(tag: tag, line: number)
                playlist.renditions.append(try Self.rendition(attributes, variables: variables))
            case "EXT-X-STREAM-INF":
                let attributes = try TagAttributes(tag: tag, line: number)
                pendingVariant = (try Self.variant(attributes, variables: variables), number)
            case "EXT-X-I-FRAME-STREAM-INF":
                let attributes = try TagAttributes(tag: tag, line: number)
                playlist.iFrameStreams.append(try Self.iFrameStream(attributes, variables: variables))
            case "EXT-X-SESSION-KEY":
                let attributes = try TagAttributes(tag: tag, line: number)
                if let key = try EncryptionKey.parse(attributes, variables: variables) {
                    playlist.sessionKeys.append(key)
                }
            default:
                if MultivariantPlaylist.mediaOnlyTags.contains(tag.name) {
                    throw PlaylistParseError(line: number, message: "#\(tag.name) belongs in a media playlist")
                }
            }
        }
        if let pendingVariant {
            throw PlaylistParseError(
                line: pendingVariant.line, message: "#EXT-X-STREAM-INF without a URI line after it")
        }
        return playlist
    }

    private static func rendition(
        _ attributes: TagAttributes, variables: VariableTable
    ) throws(PlaylistParseError) -> Rendition {
        guard let typeText = try attributes.enumerated("TYPE") else { throw attributes.error("TYPE is required") }
        guard let type = RenditionType(rawValue: typeText) else {
            throw attributes.error("TYPE must be AUDIO, VIDEO, SUBTITLES or CLOSED-CAPTIONS")
        }
        return Rendition(
            type: type,
            groupID: try attributes.requiredQuoted("GROUP-ID", variables: variables),
            name: try attributes.requiredQuoted("NAME", variables: variables),
            uri: try attributes.quoted("URI", variables: variables),
            language: try attributes.quoted("LANGUAGE", variables: variables),
            isDefault: try attributes.yesNo("DEFAULT") ?? false,
            autoselect: try attributes.yesNo("AUTOSELECT") ?? false,
            channels: try attributes.quoted("CHANNELS", variables: variables),
            forced: try attributes.yesNo("FORCED"),
            instreamID: try attributes.quoted("INSTREAM-ID", variables: variables),
            characteristics: try attributes.quoted("CHARACTERISTICS", variables: variables))
    }

    private static func variant(
        _ attributes: TagAttributes, variables: VariableTable
    ) throws(PlaylistParseError) -> VariantStream {
        guard let bandwidth = try attributes.integer("BANDWIDTH") else {
            throw attributes.error("BANDWIDTH is required")
        }
        var variant = VariantStream(uri: "", bandwidth: bandwidth)
        variant.averageBandwidth = try attributes.integer("AVERAGE-BANDWIDTH")
        if let codecs = try attributes.quoted("CODECS", variables: variables) {
            variant.codecs = codecs.split(separator: ",").map { String($0.trimmingSpaces) }
        }
        variant.resolution = try Self.resolution(attributes)
        variant.frameRate = try attributes.decimal("FRAME-RATE")
        variant.videoAttributes = try videoAttributes(attributes, variables: variables)
        variant.audioGroup = try attributes.quoted("AUDIO", variables: variables)
        variant.subtitlesGroup = try attributes.quoted("SUBTITLES", variables: variables)
        if let raw = attributes.values["CLOSED-CAPTIONS"] {
            if raw == "NONE" {
                variant.closedCaptions = ClosedCaptionsReference.none
            } else if let group = try attributes.quoted("CLOSED-CAPTIONS", variables: variables) {
                variant.closedCaptions = .group(group)
            }
        }
        return variant
    }
}

extension MultivariantPlaylist {
    fileprivate static func resolution(_ attributes: TagAttributes) throws(PlaylistParseError) -> Resolution? {
        guard let resolution = try attributes.enumerated("RESOLUTION") else { return nil }
        let parts = resolution.split(separator: "x", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let width = AttributeList.decimalInteger(String(parts[0])),
            let height = AttributeList.decimalInteger(String(parts[1])), width <= UInt64(Int.max),
            height <= UInt64(Int.max)
        else { throw attributes.error("RESOLUTION must be <width>x<height>") }
        return Resolution(width: Int(width), height: Int(height))
    }

    fileprivate static func iFrameStream(
        _ attributes: TagAttributes, variables: VariableTable
    ) throws(PlaylistParseError) -> IFrameStream {
        guard let bandwidth = try attributes.integer("BANDWIDTH") else {
            throw attributes.error("BANDWIDTH is required")
        }
        var stream = IFrameStream(uri: try attributes.requiredQuoted("URI", variables: variables), bandwidth: bandwidth)
        stream.averageBandwidth = try attributes.integer("AVERAGE-BANDWIDTH")
        if let codecs = try attributes.quoted("CODECS", variables: variables) {
            stream.codecs = codecs.split(separator: ",").map { String($0.trimmingSpaces) }
        }
        stream.resolution = try resolution(attributes)
        stream.videoAttributes = try videoAttributes(attributes, variables: variables)
        return stream
    }

    /// SUPPLEMENTAL-CODECS, VIDEO-RANGE, HDCP-LEVEL and ALLOWED-CPC, as both stream tags carry them; an unknown
    /// VIDEO-RANGE or HDCP-LEVEL is read as unset, a malformed ALLOWED-CPC is an error naming the attribute.
    fileprivate static func videoAttributes(
        _ attributes: TagAttributes, variables: VariableTable
    ) throws(PlaylistParseError) -> VideoAttributes {
        let supplemental = try attributes.quoted("SUPPLEMENTAL-CODECS", variables: variables).map {
            $0.split(separator: ",").map { String($0.trimmingSpaces) }
        }
        // RFC 8216bis: a client SHOULD NOT select a variant with a VIDEO-RANGE or HDCP-LEVEL it does not know; such
        // a value (from a newer packager) is not malformed, so it is read as unset rather than refusing the playlist.
        let range = try attributes.enumerated("VIDEO-RANGE").flatMap(HLSVideoRange.init(rawValue:))
        let hdcp = try attributes.enumerated("HDCP-LEVEL").flatMap(HDCPLevel.init(rawValue:))
        var cpc: AllowedCPC?
        if let raw = try attributes.quoted("ALLOWED-CPC", variables: variables) {
            do { cpc = try AllowedCPC(raw) } catch { throw attributes.error(error.message) }
        }
        return VideoAttributes(
            supplementalCodecs: supplemental ?? [], videoRange: range, hdcpLevel: hdcp, allowedCPC: cpc)
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var result = self
        while result.first == " " { result.removeFirst() }
        while result.last == " " { result.removeLast() }
        return result
    }
}
