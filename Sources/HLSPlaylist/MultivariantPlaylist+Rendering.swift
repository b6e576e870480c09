extension MultivariantPlaylist {
    /// The lowest EXT-X-VERSION the playlist's features allow: 1, 8 with any EXT-X-DEFINE, 11 with QUERYPARAM.
    public var minimumVersion: Int {
        definitions.reduce(1) { max($0, $1.minimumVersion) }
    }

    /// The playlist text; every line ends with `\n`.
    ///
    /// EXTM3U, VERSION (only when ``minimumVersion`` > 1), INDEPENDENT-SEGMENTS, DEFINEs, then one EXT-X-MEDIA per
    /// rendition (TYPE, GROUP-ID, NAME, LANGUAGE, DEFAULT, AUTOSELECT, CHANNELS, URI; DEFAULT and AUTOSELECT always
    /// as YES/NO), then per variant EXT-X-STREAM-INF (BANDWIDTH, AVERAGE-BANDWIDTH, CODECS, RESOLUTION, FRAME-RATE
    /// with three decimals, AUDIO, SUBTITLES, CLOSED-CAPTIONS; each only when set) and its URI line.
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
        for rendition in renditions {
            text += rendition.renderedTag + "\n"
        }
        for variant in variants {
            text += variant.renderedTag + "\n"
            text += variant.uri + "\n"
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
        if let channels {
            text += ",CHANNELS=" + AttributeList.quoted(channels)
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
        var text = "#EXT-X-STREAM-INF:BANDWIDTH=\(bandwidth)"
        if let averageBandwidth {
            text += ",AVERAGE-BANDWIDTH=\(averageBandwidth)"
        }
        if !codecs.isEmpty {
            text += ",CODECS=" + AttributeList.quoted(codecs.joined(separator: ","))
        }
        if let resolution {
            text += ",RESOLUTION=\(resolution.width)x\(resolution.height)"
        }
        if let frameRate {
            text += ",FRAME-RATE=" + NumberFormatting.fixed3(frameRate)
        }
        if let audioGroup {
            text += ",AUDIO=" + AttributeList.quoted(audioGroup)
        }
        if let subtitlesGroup {
            text += ",SUBTITLES=" + AttributeList.quoted(subtitlesGroup)
        }
        if let closedCaptionsGroup {
            text += ",CLOSED-CAPTIONS=" + AttributeList.quoted(closedCaptionsGroup)
        }
        return text
    }
}
