extension DateRange {
    /// Checks the RFC 8216 / 8216bis rules for EXT-X-DATERANGE, so that ``renderedTag`` is a legal tag.
    ///
    /// - ID: non-empty quoted string; CLASS, when set, non-empty quoted string (no `"`, CR or LF).
    /// - START-DATE and END-DATE: years 0000–9999; END-DATE not before START-DATE.
    /// - DURATION and PLANNED-DURATION: finite, not negative, ending by the year 9999; DURATION and END-DATE, when both set, agree to
    ///   within one millisecond (END-DATE = START-DATE + DURATION).
    /// - CUE: each of PRE, POST, ONCE at most once, never PRE and POST together.
    /// - END-ON-NEXT: needs CLASS, forbids DURATION and END-DATE.
    /// - Client attributes: names `X-[A-Z0-9-]+`, each once; values a valid quoted string, a non-empty hexadecimal
    ///   sequence or a finite decimal (enumerated strings are not allowed for `X-` attributes).
    /// - SCTE35-CMD, SCTE35-OUT, SCTE35-IN: at least one byte.
    /// - CLASS="com.apple.hls.interstitial": the interstitial rules of 8216bis Appendix D (`DateRange+Interstitial`).
    /// - Throws: ``PlaylistValidationError`` naming the first attribute at fault.
    /// 9999-12-31T23:59:59.999Z, the latest date RFC 8216 can write (ms since 1970).
    static let latestMilliseconds: Int64 = 253_402_300_799_999

    public func validate() throws(PlaylistValidationError) {
        try Self.checkQuoted(id, attribute: DateRangeAttribute.id.name)
        if let classAttribute {
            try Self.checkQuoted(classAttribute, attribute: DateRangeAttribute.classAttribute.name)
        }
        guard startDate.isRepresentable else {
            throw Self.invalid(.startDate, "year outside 0000-9999")
        }
        try validateCue()
        if let endDate {
            guard endDate.isRepresentable else {
                throw Self.invalid(.endDate, "year outside 0000-9999")
            }
            guard endDate >= startDate else {
                throw Self.invalid(.endDate, "\(endDate.formatted) is before START-DATE \(startDate.formatted)")
            }
        }
        for (attribute, value) in [(DateRangeAttribute.duration, duration), (.plannedDuration, plannedDuration)] {
            guard let value else { continue }
            guard value.isFinite, value >= 0 else { throw Self.invalid(attribute, "must be a finite number >= 0") }
            // A range that would end after 9999-12-31 has no END-DATE to agree with, and its end would not fit the
            // millisecond arithmetic of the marker book.
            guard Double(startDate.millisecondsSince1970) + value * 1000 <= Double(Self.latestMilliseconds) else {
                throw Self.invalid(attribute, "\(value) s would end after the year 9999")
            }
        }
        if let duration, let endDate {
            let spanned = endDate.millisecondsSince1970 - startDate.millisecondsSince1970
            let difference = spanned - NumberFormatting.milliseconds(duration)
            guard difference.magnitude <= 1 else {
                throw PlaylistValidationError(
                    attribute: DateRangeAttribute.duration.name,
                    message: "DURATION \(NumberFormatting.shortest(duration)) disagrees with END-DATE - START-DATE "
                        + "(\(NumberFormatting.shortest(Double(spanned) / 1000)))")
            }
        }
        if endOnNext {
            guard classAttribute != nil else {
                throw Self.invalid(.endOnNext, "requires CLASS")
            }
            guard duration == nil else {
                throw Self.invalid(.endOnNext, "forbids DURATION")
            }
            guard endDate == nil else {
                throw Self.invalid(.endOnNext, "forbids END-DATE")
            }
        }
        try validateClientAttributes()
        try validateInterstitial()
        for attribute in DateRangeAttribute.allCases where attribute.valueType == .hexadecimal {
            if case .hexadecimal(let bytes) = self[attribute], bytes.isEmpty {
                throw PlaylistValidationError(attribute: attribute.name, message: "empty hexadecimal sequence")
            }
        }
    }

    private func validateCue() throws(PlaylistValidationError) {
        var seen = Set<String>()
        for value in cue {
            guard value == "PRE" || value == "POST" || value == "ONCE" else {
                throw Self.invalid(.cue, "unknown value \"\(value)\" (PRE, POST, ONCE)")
            }
            guard seen.insert(value).inserted else {
                throw Self.invalid(.cue, "\(value) given twice")
            }
        }
        if seen.contains("PRE") && seen.contains("POST") {
            throw Self.invalid(.cue, "PRE and POST together")
        }
    }

    private func validateClientAttributes() throws(PlaylistValidationError) {
        var seen = Set<String>()
        for attribute in clientAttributes {
            let name = attribute.name
            guard name.hasPrefix("X-"), name.utf8.count > 2, AttributeList.isValidName(name) else {
                throw PlaylistValidationError(attribute: name, message: "client attribute names are X-[A-Z0-9-]+")
            }
            guard seen.insert(name).inserted else {
                throw PlaylistValidationError(attribute: name, message: "given twice")
            }
            switch attribute.value {
            case .quotedString(let text):
                try Self.checkQuoted(text, attribute: name, allowEmpty: true)
            case .hexadecimal(let bytes):
                guard !bytes.isEmpty else {
                    throw PlaylistValidationError(attribute: name, message: "empty hexadecimal sequence")
                }
            case .decimal(let number):
                guard number.isFinite else {
                    throw PlaylistValidationError(attribute: name, message: "decimal must be finite")
                }
            case .enumerated:
                throw PlaylistValidationError(
                    attribute: name, message: "client attribute values are quoted strings, hexadecimal or decimal")
            }
        }
    }

    private static func invalid(_ attribute: DateRangeAttribute, _ message: String) -> PlaylistValidationError {
        PlaylistValidationError(attribute: attribute.name, message: message)
    }

    private static func checkQuoted(
        _ text: String, attribute: String, allowEmpty: Bool = false
    ) throws(PlaylistValidationError) {
        guard allowEmpty || !text.isEmpty else {
            throw PlaylistValidationError(attribute: attribute, message: "empty quoted string")
        }
        guard AttributeList.isValidQuotedContent(text) else {
            throw PlaylistValidationError(attribute: attribute, message: "quoted string contains '\"', CR or LF")
        }
    }
}
