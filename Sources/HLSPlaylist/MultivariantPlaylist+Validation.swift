extension MultivariantPlaylist {
    /// Checks the alternate-rendition rules of RFC 8216 sections 4.3.4.1 and 4.3.4.2 (HLS rule 35); one error per
    /// problem, in playlist order (renditions, then groups, then variants), empty when the playlist is valid.
    ///
    /// - EXT-X-MEDIA: LANGUAGE an RFC 5646 tag (``isLanguageTag(_:)``); AUTOSELECT=YES when DEFAULT=YES; FORCED only on
    ///   SUBTITLES; INSTREAM-ID (`CC1`-`CC4`, `SERVICE1`-`SERVICE63`) required on and only on CLOSED-CAPTIONS, which
    ///   have no URI.
    /// - Groups (TYPE and GROUP-ID): NAMEs unique, at most one DEFAULT=YES, CLOSED-CAPTIONS INSTREAM-IDs distinct.
    /// - EXT-X-STREAM-INF: AUDIO, SUBTITLES and CLOSED-CAPTIONS name an existing group of that TYPE; every variant
    ///   references the same group types as the first one, except audio-only variants (whose URI is an AUDIO
    ///   rendition's), which may leave SUBTITLES and CLOSED-CAPTIONS out; CLOSED-CAPTIONS=NONE on one variant means
    ///   NONE on every variant, audio-only ones included.
    /// - Returns: the errors, each naming its ``MultivariantRule``.
    public func validate() -> [PlaylistValidationError] {
        var errors: [PlaylistValidationError] = []
        for rendition in renditions {
            errors += rendition.validationErrors()
        }
        errors += groupErrors()
        errors += variantErrors()
        return errors
    }

    /// Whether `text` is an RFC 5646 language tag as this origin accepts it: `^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$`
    /// (a primary language subtag, then any subtags), e.g. `en`, `fr-CA`, `zh-Hant-TW`.
    public static func isLanguageTag(_ text: String) -> Bool {
        let subtags = text.utf8.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        guard let primary = subtags.first, (2...3).contains(primary.count), primary.allSatisfy(Self.isLetter) else {
            return false
        }
        return subtags.dropFirst().allSatisfy { subtag in
            (1...8).contains(subtag.count) && subtag.allSatisfy { Self.isLetter($0) || AttributeList.isDigit($0) }
        }
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
    }

    /// Whether `text` is an INSTREAM-ID: `CC1`-`CC4` or `SERVICE1`-`SERVICE63`, without leading zeros.
    static func isInstreamID(_ text: String) -> Bool {
        func number(after prefix: String) -> Int? {
            guard text.hasPrefix(prefix) else { return nil }
            let digits = text.dropFirst(prefix.count)
            guard !digits.isEmpty, digits.count <= 2, digits.first != "0",
                digits.utf8.allSatisfy(AttributeList.isDigit)
            else { return nil }
            return Int(digits)
        }
        if let channel = number(after: "CC") { return (1...4).contains(channel) }
        if let service = number(after: "SERVICE") { return (1...63).contains(service) }
        return false
    }

    private struct GroupKey: Hashable {
        var type: RenditionType
        var groupID: String
    }

    private func groupErrors() -> [PlaylistValidationError] {
        var order: [GroupKey] = []
        var members: [GroupKey: [Rendition]] = [:]
        for rendition in renditions {
            let key = GroupKey(type: rendition.type, groupID: rendition.groupID)
            if members[key] == nil { order.append(key) }
            members[key, default: []].append(rendition)
        }
        var errors: [PlaylistValidationError] = []
        for key in order {
            let group = members[key] ?? []
            let label = "\(key.type.rawValue) group \(AttributeList.quoted(key.groupID))"
            for name in Self.repeated(group.map(\.name)) {
                errors.append(
                    PlaylistValidationError(
                        attribute: "NAME", message: "\(AttributeList.quoted(name)) appears twice in \(label)",
                        rule: .uniqueNameInGroup))
            }
            let defaults = group.filter(\.isDefault).map(\.name)
            if defaults.count > 1 {
                errors.append(
                    PlaylistValidationError(
                        attribute: "DEFAULT",
                        message: "\(label) has DEFAULT=YES on "
                            + defaults.map(AttributeList.quoted).joined(separator: ", ") + "; at most one is allowed",
                        rule: .oneDefaultPerGroup))
            }
            if key.type == .closedCaptions {
                for instreamID in Self.repeated(group.compactMap(\.instreamID)) {
                    errors.append(
                        PlaylistValidationError(
                            attribute: "INSTREAM-ID",
                            message: "\(AttributeList.quoted(instreamID)) appears twice in \(label)",
                            rule: .distinctInstreamIDs))
                }
            }
        }
        return errors
    }

    /// The values that occur more than once, each once, in order of their second occurrence.
    private static func repeated(_ values: [String]) -> [String] {
        var seen: Set<String> = []
        var reported: Set<String> = []
        var result: [String] = []
        for value in values where !seen.insert(value).inserted && reported.insert(value).inserted {
            result.append(value)
        }
        return result
    }

    private func variantErrors() -> [PlaylistValidationError] {
        var errors: [PlaylistValidationError] = []
        let groups = Set(renditions.map { GroupKey(type: $0.type, groupID: $0.groupID) })
        func checkReference(_ groupID: String?, type: RenditionType, variant: VariantStream) {
            guard let groupID, !groups.contains(GroupKey(type: type, groupID: groupID)) else { return }
            errors.append(
                PlaylistValidationError(
                    attribute: type.rawValue,
                    message: "variant \(variant.uri) references \(AttributeList.quoted(groupID)), which is not "
                        + "the GROUP-ID of any \(type.rawValue) rendition",
                    rule: .referencedGroupExists))
        }
        for variant in variants {
            checkReference(variant.audioGroup, type: .audio, variant: variant)
            checkReference(variant.subtitlesGroup, type: .subtitles, variant: variant)
            if case .group(let group) = variant.closedCaptions {
                checkReference(group, type: .closedCaptions, variant: variant)
            }
        }

        let audioURIs = Set(renditions.filter { $0.type == .audio }.compactMap(\.uri))
        let fullVariants = variants.filter { !audioURIs.contains($0.uri) }
        if let first = fullVariants.first {
            for variant in fullVariants.dropFirst() {
                for (mine, theirs) in zip(variant.referencedGroupTypes, first.referencedGroupTypes)
                where mine.present != theirs.present {
                    errors.append(
                        PlaylistValidationError(
                            attribute: mine.attribute,
                            message: "variant \(variant.uri) " + (mine.present ? "has" : "has no")
                                + " \(mine.attribute) while variant \(first.uri) "
                                + (mine.present ? "has none" : "has one") + "; every variant must be offered the same "
                                + "groups",
                            rule: .sameGroupsOnEveryVariant))
                }
            }
        }

        if let none = variants.first(where: { $0.closedCaptions == ClosedCaptionsReference.none }) {
            for variant in variants where variant.closedCaptions != ClosedCaptionsReference.none {
                errors.append(
                    PlaylistValidationError(
                        attribute: "CLOSED-CAPTIONS",
                        message: "variant \(variant.uri) lacks CLOSED-CAPTIONS=NONE while variant \(none.uri) has "
                            + "it; NONE must be on every variant",
                        rule: .closedCaptionsNoneEverywhere))
            }
        }
        return errors
    }
}

extension VariantStream {
    /// For AUDIO, SUBTITLES and CLOSED-CAPTIONS (in this order): whether the variant references a group of that type.
    fileprivate var referencedGroupTypes: [(attribute: String, present: Bool)] {
        var closedCaptionsGroup = false
        if case .group = closedCaptions { closedCaptionsGroup = true }
        return [
            ("AUDIO", audioGroup != nil), ("SUBTITLES", subtitlesGroup != nil),
            ("CLOSED-CAPTIONS", closedCaptionsGroup),
        ]
    }
}

extension Rendition {
    /// The errors of this EXT-X-MEDIA on its own (not against its group).
    fileprivate func validationErrors() -> [PlaylistValidationError] {
        var errors: [PlaylistValidationError] = []
        let label = "\(type.rawValue) rendition \(AttributeList.quoted(name)) in group \(AttributeList.quoted(groupID))"
        func fail(_ attribute: String, _ message: String, _ rule: MultivariantRule) {
            errors.append(PlaylistValidationError(attribute: attribute, message: "\(label) \(message)", rule: rule))
        }
        if let language, !MultivariantPlaylist.isLanguageTag(language) {
            fail("LANGUAGE", "has \(AttributeList.quoted(language)), which is not an RFC 5646 tag", .languageTag)
        }
        if isDefault, !autoselect {
            fail("AUTOSELECT", "has DEFAULT=YES, so it needs AUTOSELECT=YES", .autoselectWhenDefault)
        }
        if forced != nil, type != .subtitles {
            fail("FORCED", "has FORCED, which only SUBTITLES renditions may have", .forcedOnlyOnSubtitles)
        }
        if type == .closedCaptions {
            if let instreamID {
                if !MultivariantPlaylist.isInstreamID(instreamID) {
                    fail(
                        "INSTREAM-ID",
                        "has INSTREAM-ID \(AttributeList.quoted(instreamID)); it must be CC1-CC4 "
                            + "or SERVICE1-SERVICE63", .instreamIDOnClosedCaptions)
                }
            } else {
                fail("INSTREAM-ID", "needs an INSTREAM-ID", .instreamIDOnClosedCaptions)
            }
            if uri != nil {
                fail("URI", "has a URI, which CLOSED-CAPTIONS renditions must not have", .closedCaptionsWithoutURI)
            }
        } else if instreamID != nil {
            fail(
                "INSTREAM-ID", "has INSTREAM-ID, which only CLOSED-CAPTIONS renditions may have",
                .instreamIDOnClosedCaptions)
        }
        return errors
    }
}
