/// HLS Interstitials (draft-pantos-hls-rfc8216bis, Appendix D): an EXT-X-DATERANGE with
/// `CLASS="com.apple.hls.interstitial"` asks the player to play other content (an ad, a promo) at its START-DATE.
/// Its attributes are client attributes (`X-...`) whose names and value formats 8216bis defines; they are checked here.
extension DateRange {
    /// The CLASS of an interstitial date range.
    public static let interstitialClass = "com.apple.hls.interstitial"

    /// The `X-` attributes 8216bis defines for interstitials.
    public enum InterstitialAttribute: String, CaseIterable, Sendable {
        /// Quoted-string URI of one asset (a playlist).
        case assetURI = "X-ASSET-URI"
        /// Quoted-string URI of a JSON asset list (`{"ASSETS": [{"URI": ..., "DURATION": ...}]}`).
        case assetList = "X-ASSET-LIST"
        /// Decimal-floating-point seconds: where the primary resumes, from START-DATE.
        case resumeOffset = "X-RESUME-OFFSET"
        /// Decimal-floating-point seconds: the longest the interstitial plays.
        case playoutLimit = "X-PLAYOUT-LIMIT"
        /// Quoted enumerated list: OUT, IN.
        case snap = "X-SNAP"
        /// Quoted enumerated list: SKIP, JUMP.
        case restrict = "X-RESTRICT"
        /// Quoted enumerated string: YES, NO.
        case contentMayVary = "X-CONTENT-MAY-VARY"
        /// Quoted enumerated string: POINT, RANGE.
        case timelineOccupies = "X-TIMELINE-OCCUPIES"
        /// Quoted enumerated string: HIGHLIGHT, PRIMARY.
        case timelineStyle = "X-TIMELINE-STYLE"

        /// The enumerated values the attribute takes (one, or a comma-separated list for X-SNAP and X-RESTRICT);
        /// nil for URIs and numbers.
        public var allowedValues: [String]? {
            switch self {
            case .assetURI, .assetList, .resumeOffset, .playoutLimit: nil
            case .snap: ["OUT", "IN"]
            case .restrict: ["SKIP", "JUMP"]
            case .contentMayVary: ["YES", "NO"]
            case .timelineOccupies: ["POINT", "RANGE"]
            case .timelineStyle: ["HIGHLIGHT", "PRIMARY"]
            }
        }

        /// Whether the value is a comma-separated list (X-SNAP, X-RESTRICT).
        public var isList: Bool { self == .snap || self == .restrict }
    }

    /// Whether CLASS is `com.apple.hls.interstitial`.
    public var isInterstitial: Bool { classAttribute == Self.interstitialClass }

    /// The value of an interstitial attribute, nil when absent.
    public subscript(interstitial attribute: InterstitialAttribute) -> AttributeValue? {
        clientAttributes.first { $0.name == attribute.rawValue }?.value
    }

    /// The 8216bis rules for an interstitial date range (nothing is checked for another CLASS):
    /// - exactly one of X-ASSET-URI and X-ASSET-LIST, a non-empty quoted-string URI;
    /// - X-RESUME-OFFSET and X-PLAYOUT-LIMIT decimal-floating-point (finite, not negative);
    /// - X-SNAP (OUT, IN) and X-RESTRICT (SKIP, JUMP): a quoted comma-separated list, each value once;
    /// - X-CONTENT-MAY-VARY (YES, NO), X-TIMELINE-OCCUPIES (POINT, RANGE), X-TIMELINE-STYLE (HIGHLIGHT, PRIMARY): a
    ///   quoted-string holding one of its values.
    /// - Throws: ``PlaylistValidationError`` naming the attribute.
    func validateInterstitial() throws(PlaylistValidationError) {
        guard isInterstitial else { return }
        let uri = self[interstitial: .assetURI]
        let list = self[interstitial: .assetList]
        switch (uri, list) {
        case (nil, nil):
            throw PlaylistValidationError(
                attribute: InterstitialAttribute.assetURI.rawValue,
                message: "an interstitial needs X-ASSET-URI or X-ASSET-LIST")
        case (.some, .some):
            throw PlaylistValidationError(
                attribute: InterstitialAttribute.assetList.rawValue,
                message: "an interstitial has X-ASSET-URI or X-ASSET-LIST, not both")
        default: break
        }
        for attribute in InterstitialAttribute.allCases {
            guard let value = self[interstitial: attribute] else { continue }
            let name = attribute.rawValue
            switch attribute {
            case .assetURI, .assetList:
                guard case .quotedString(let text) = value, !text.isEmpty,
                    !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F })
                else {
                    throw PlaylistValidationError(
                        attribute: name, message: "must be a quoted-string URI (non-empty, no spaces)")
                }
            case .resumeOffset, .playoutLimit:
                guard case .decimal(let number) = value, number.isFinite, number >= 0 else {
                    throw PlaylistValidationError(attribute: name, message: "must be a decimal number of seconds >= 0")
                }
            case .snap, .restrict, .contentMayVary, .timelineOccupies, .timelineStyle:
                let allowed = attribute.allowedValues ?? []
                let known = allowed.joined(separator: ", ")
                guard case .quotedString(let text) = value else {
                    throw PlaylistValidationError(attribute: name, message: "must be a quoted string (\(known))")
                }
                let values = attribute.isList ? text.split(separator: ",", omittingEmptySubsequences: false) : [text[...]]
                var seen = Set<Substring>()
                for item in values {
                    guard allowed.contains(String(item)) else {
                        throw PlaylistValidationError(attribute: name, message: "unknown value \"\(item)\" (\(known))")
                    }
                    guard seen.insert(item).inserted else {
                        throw PlaylistValidationError(attribute: name, message: "\(item) given twice")
                    }
                }
            }
        }
    }
}
