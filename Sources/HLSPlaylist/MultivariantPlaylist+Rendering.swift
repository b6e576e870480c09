extension MultivariantPlaylist {
    /// The lowest EXT-X-VERSION the playlist's features allow: 1, 2 with a SESSION-KEY that has an IV, 7 with an
    /// INSTREAM-ID `SERVICEn`, 8 with any EXT-X-DEFINE, 11 with QUERYPARAM (EXT-X-MEDIA, AUDIO, SUBTITLES and
    /// EXT-X-I-FRAME-STREAM-INF need none: RFC 8216 section 7).
    public var minimumVersion: Int {
        let definitionsVersion = definitions.reduce(1) { max($0, $1.minimumVersion) }
        let usesServices = renditions.contains { $0.instreamID?.hasPrefix("SERVICE") == true }
        let keysVersion = sessionKeys.reduce(1) { max($0, $1.minimumVersion) }
        return max(definitionsVersion, usesServices ? 7 : 1, keysVersion)
    }

    /// The playlist text; every line ends with `\n`.
    ///
    /// EXTM3U, VERSION (only when ``minimumVersion`` > 1), INDEPENDENT-SEGMENTS, DEFINEs, SESSION-KEYs (METHOD, URI,
    /// IV as in EXT-X-KEY), CONTENT-STEERING (SERVER-URI, PATHWAY-ID), then one EXT-X-MEDIA per
    /// rendition (TYPE, GROUP-ID, NAME, LANGUAGE, DEFAULT, AUTOSELECT, FORCED, CHANNELS, INSTREAM-ID,
    /// CHARACTERISTICS, URI; DEFAULT and AUTOSELECT always as YES/NO, FORCED only for SUBTITLES), then per variant
    /// EXT-X-STREAM-INF (BANDWIDTH, AVERAGE-BANDWIDTH, CODECS, RESOLUTION, FRAME-RATE with three decimals, AUDIO,
    /// SUBTITLES, CLOSED-CAPTIONS as a quoted group or NONE, PATHWAY-ID; each only when set) and its URI line, then
    /// one EXT-X-I-FRAME-STREAM-INF per I-frame stream (BANDWIDTH, AVERAGE-BANDWIDTH, CODECS, RESOLUTION, PATHWAY-ID,
    /// URI).
    public func render() -> String {
        var text = "#EXTM3U\n"
        let version = minimumVersion
        if version > 1 {
            text += "#EXT-X-VERSION:\(version)\n"
        }
        if independentSegments {
            text += "#EXT-X-INDEPENDENT-SEGMENTS\n"
        }
        for definition in definitions {
            text += definition.renderedTag + "\n"
        }
        for sessionKey in sessionKeys {
            text += sessionKey.renderedSessionKeyTag + "\n"
        }
        if let contentSteering {
            text += "#EXT-X-CONTENT-STEERING:SERVER-URI=" + AttributeList.quoted(contentSteering.serverURI)
            if let pathway = contentSteering.pathwayID { text += ",PATHWAY-ID=" + AttributeList.quoted(pathway) }
            text += "\n"
        }
        for rendition in renditions {
            text += rendition.renderedTag + "\n"
        }
        for variant in variants {
            text += variant.renderedTag + "\n"
            text += variant.uri + "\n"
        }
        for iFrameStream in iFrameStreams {
            text += iFrameStream.renderedTag + "\n"
        }
        return text
    }
}

extension Rendition {
    /// The `#EXT-X-MEDIA:` line, without a line break.
    public var renderedTag: String {
        var text = "#EXT-X-MEDIA:TYPE=" + type.rawValue
        text += ",GROUP-ID=" + AttributeList.quoted(groupID)
        text += ",NAME=" + AttributeList.quoted(name)
        if let language {
            text += ",LANGUAGE=" + AttributeList.quoted(language)
        }
        text += ",DEFAULT=" + (isDefault ? "YES" : "NO")
        text += ",AUTOSELECT=" + (autoselect ? "YES" : "NO")
        if type == .subtitles, let forced {
            text += ",FORCED=" + (forced ? "YES" : "NO")
        }
        if let channels {
            text += ",CHANNELS=" + AttributeList.quoted(channels)
        }
        if let instreamID {
            text += ",INSTREAM-ID=" + AttributeList.quoted(instreamID)
        }
        if let characteristics {
            text += ",CHARACTERISTICS=" + AttributeList.quoted(characteristics)
        }
        if let uri {
            text += ",URI=" + AttributeList.quoted(uri)
        }
        return text
    }
}

extension VariantStream {
    /// The `#EXT-X-STREAM-INF:` line, without a line break (the URI line follows it).
    public var renderedTag: String {
        var text =
            "#EXT-X-STREAM-INF:"
            + streamAttributes(
                bandwidth: bandwidth, averageBandwidth: averageBandwidth, codecs: codecs, resolution: resolution,
                video: videoAttributes)
        if let frameRate {
            text += ",FRAME-RATE=" + NumberFormatting.fixed3(frameRate)
        }
        if let audioGroup {
            text += ",AUDIO=" + AttributeList.quoted(audioGroup)
        }
        if let subtitlesGroup {
            text += ",SUBTITLES=" + AttributeList.quoted(subtitlesGroup)
        }
        switch closedCaptions {
        case nil: break
        case .some(.none): text += ",CLOSED-CAPTIONS=NONE"
        case .some(.group(let group)): text += ",CLOSED-CAPTIONS=" + AttributeList.quoted(group)
        }
        if let pathwayID {
            text += ",PATHWAY-ID=" + AttributeList.quoted(pathwayID)
        }
        return text
    }
}

extension IFrameStream {
    /// The `#EXT-X-I-FRAME-STREAM-INF:` line, without a line break (the URI is an attribute; no URI line follows).
    public var renderedTag: String {
        var text =
            "#EXT-X-I-FRAME-STREAM-INF:"
            + streamAttributes(
                bandwidth: bandwidth, averageBandwidth: averageBandwidth, codecs: codecs, resolution: resolution,
                video: videoAttributes)
        if let pathwayID {
            text += ",PATHWAY-ID=" + AttributeList.quoted(pathwayID)
        }
        text += ",URI=" + AttributeList.quoted(uri)
        return text
    }
}

/// `BANDWIDTH=…[,AVERAGE-BANDWIDTH=…][,CODECS="…"][,SUPPLEMENTAL-CODECS="…"][,RESOLUTION=WxH][,VIDEO-RANGE=…]
/// [,HDCP-LEVEL=…][,ALLOWED-CPC="…"]`: the attributes EXT-X-STREAM-INF and EXT-X-I-FRAME-STREAM-INF begin with.
private func streamAttributes(
    bandwidth: Int, averageBandwidth: Int?, codecs: [String], resolution: Resolution?, video: VideoAttributes
) -> String {
    var text = "BANDWIDTH=\(bandwidth)"
    if let averageBandwidth { text += ",AVERAGE-BANDWIDTH=\(averageBandwidth)" }
    if !codecs.isEmpty { text += ",CODECS=" + AttributeList.quoted(codecs.joined(separator: ",")) }
    if !video.supplementalCodecs.isEmpty {
        text += ",SUPPLEMENTAL-CODECS=" + AttributeList.quoted(video.supplementalCodecs.joined(separator: ","))
    }
    if let resolution { text += ",RESOLUTION=\(resolution.width)x\(resolution.height)" }
    if let videoRange = video.videoRange { text += ",VIDEO-RANGE=" + videoRange.rawValue }
    if let hdcpLevel = video.hdcpLevel { text += ",HDCP-LEVEL=" + hdcpLevel.rawValue }
    if let allowedCPC = video.allowedCPC { text += ",ALLOWED-CPC=" + AttributeList.quoted(allowedCPC.rendered) }
    return text
}
