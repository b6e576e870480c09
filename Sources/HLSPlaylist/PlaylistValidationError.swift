/// A value that breaks an RFC 8216 rule and so cannot be rendered: names the attribute at fault.
public struct PlaylistValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The attribute name as written in the playlist, e.g. `END-DATE` or `X-AD-ID`.
    public var attribute: String
    /// What is wrong, in plain words.
    public var message: String
    /// The multivariant rule broken, for errors from ``MultivariantPlaylist/validate()``; nil otherwise.
    public var rule: MultivariantRule?

    /// Creates an error.
    /// - Parameters:
    ///   - attribute: the attribute name as written in the playlist.
    ///   - message: what is wrong.
    ///   - rule: the multivariant rule broken, if any.
    public init(attribute: String, message: String, rule: MultivariantRule? = nil) {
        self.attribute = attribute
        self.message = message
        self.rule = rule
    }

    public var description: String { "\(attribute): \(message)" }
}

/// The rules ``MultivariantPlaylist/validate()`` checks (RFC 8216 sections 4.3.4.1 and 4.3.4.2, HLS rule 35), so
/// that a caller can tell which ones a playlist broke, e.g. to repair an encoder's hint instead of refusing it.
public enum MultivariantRule: String, Sendable, Hashable, CaseIterable {
    /// NAME is unique within a group (same TYPE and GROUP-ID).
    case uniqueNameInGroup
    /// At most one rendition of a group has DEFAULT=YES.
    case oneDefaultPerGroup
    /// DEFAULT=YES needs AUTOSELECT=YES.
    case autoselectWhenDefault
    /// FORCED appears on SUBTITLES renditions only.
    case forcedOnlyOnSubtitles
    /// CLOSED-CAPTIONS renditions have an INSTREAM-ID (CC1-CC4, SERVICE1-SERVICE63); no other type has one.
    case instreamIDOnClosedCaptions
    /// CLOSED-CAPTIONS renditions have no URI.
    case closedCaptionsWithoutURI
    /// The CLOSED-CAPTIONS renditions of a group have distinct INSTREAM-IDs.
    case distinctInstreamIDs
    /// A variant's AUDIO, SUBTITLES or CLOSED-CAPTIONS names an existing group of that TYPE.
    case referencedGroupExists
    /// Every variant (audio-only variants aside) references the same group types.
    case sameGroupsOnEveryVariant
    /// When one variant says CLOSED-CAPTIONS=NONE, every variant does.
    case closedCaptionsNoneEverywhere
    /// LANGUAGE is an RFC 5646 tag.
    case languageTag
}
