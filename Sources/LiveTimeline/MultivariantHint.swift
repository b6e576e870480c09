public import HLSPlaylist

/// What an encoder's multivariant playlist (`PUT /ingest/{channel}/master.m3u8`) says about the channel's groups,
/// validated and normalized: never trusted as is. BANDWIDTH, CODECS, RESOLUTION and VERSION are dropped (the origin
/// measures them); ffmpeg's generated NAMEs (`audio_2`, `subtitle_1`) become the language's own name, else the
/// rendition name.
public struct MultivariantHint: Sendable, Hashable, Codable {
    /// Audio or subtitles.
    public enum MemberKind: String, Sendable, Hashable, Codable {
        case audio, subtitles
    }

    /// One EXT-X-MEDIA of the hint, by the rendition its URI names.
    public struct Member: Sendable, Hashable, Codable {
        public var rendition: String
        public var kind: MemberKind
        public var group: String
        public var name: String
        public var language: String?
        public var isDefault: Bool
        public var autoselect: Bool
        public var forced: Bool

        public init(
            rendition: String, kind: MemberKind, group: String, name: String, language: String? = nil,
            isDefault: Bool = false, autoselect: Bool = true, forced: Bool = false
        ) {
            self.rendition = rendition
            self.kind = kind
            self.group = group
            self.name = name
            self.language = language
            self.isDefault = isDefault
            self.autoselect = autoselect
            self.forced = forced
        }

        /// The member as a group membership (what the configuration would say).
        public var membership: MediaGroupMembership {
            MediaGroupMembership(
                group: group, language: language, name: name, isDefault: isDefault, autoselect: autoselect,
                forced: forced)
        }
    }

    /// Audio and subtitle members, in the hint's order.
    public var members: [Member]
    /// Renditions the hint's EXT-X-STREAM-INF lines name, in order.
    public var variants: [String]

    public init(members: [Member] = [], variants: [String] = []) {
        self.members = members
        self.variants = variants
    }

    /// Largest hint read (64 KiB): a multivariant playlist is a few hundred bytes.
    public static let maxBytes = 64 << 10

    /// The member for a rendition, if the hint names it.
    public func member(for rendition: String) -> Member? {
        members.first { $0.rendition == rendition }
    }

    /// Reads, validates and normalizes a hint.
    /// - Throws: ``MultivariantHintError`` saying why it was refused (too large, not UTF-8 or not a multivariant
    ///   playlist, a URI that is not `{rendition}/{file}.m3u8`, NAME twice in a group, two DEFAULT=YES in a group,
    ///   a LANGUAGE that is not an RFC 5646 tag, a rendition in two groups).
    public static func read(_ bytes: [UInt8]) throws(MultivariantHintError) -> MultivariantHint {
        guard bytes.count <= maxBytes else {
            throw MultivariantHintError("hint of \(bytes.count) bytes is larger than \(maxBytes) bytes")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw MultivariantHintError("hint is not UTF-8 text")
        }
        let playlist: MultivariantPlaylist
        do {
            playlist = try MultivariantPlaylist.parse(text)
        } catch {
            throw MultivariantHintError("not a multivariant playlist: \(error)")
        }
        return try read(playlist)
    }

    /// Validates and normalizes a parsed multivariant playlist (see ``read(_:)-(Array<UInt8>)``).
    public static func read(_ playlist: MultivariantPlaylist) throws(MultivariantHintError) -> MultivariantHint {
        var hint = MultivariantHint()
        for rendition in playlist.renditions {
            let kind: MemberKind
            switch rendition.type {
            case .audio: kind = .audio
            case .subtitles: kind = .subtitles
            case .video, .closedCaptions: continue
            }
            guard let uri = rendition.uri else { continue }  // muxed into the variants: nothing to place
            hint.members.append(
                Member(
                    rendition: try renditionName(uri), kind: kind, group: rendition.groupID, name: rendition.name,
                    language: rendition.language, isDefault: rendition.isDefault, autoselect: true))
        }
        try validateGroups(hint.members)
        for variant in playlist.variants {
            let name = try renditionName(variant.uri)
            if !hint.variants.contains(name) { hint.variants.append(name) }
        }
        hint.normalizeNames()
        return hint
    }

    /// Checks group members as rule 35 asks, for hints and configured memberships alike: LANGUAGE an RFC 5646 tag,
    /// a rendition in one group only, a GROUP-ID for one TYPE only, NAME unique in a group, at most one DEFAULT=YES
    /// in a group.
    public static func validateGroups(_ members: [Member]) throws(MultivariantHintError) {
        var seen: [Member] = []
        for member in members {
            if let language = member.language, !MultivariantPlaylist.isLanguageTag(language) {
                throw MultivariantHintError(
                    "LANGUAGE \"\(language)\" of \(member.rendition) is not an RFC 5646 tag")
            }
            if seen.contains(where: { $0.rendition == member.rendition }) {
                throw MultivariantHintError("rendition \(member.rendition) is listed twice")
            }
            if seen.contains(where: { $0.group == member.group && $0.kind != member.kind }) {
                throw MultivariantHintError("GROUP-ID \"\(member.group)\" is used for audio and subtitles")
            }
            let inGroup = seen.filter { $0.group == member.group }
            if inGroup.contains(where: { $0.name == member.name }) {
                throw MultivariantHintError("NAME \"\(member.name)\" appears twice in GROUP-ID \"\(member.group)\"")
            }
            if member.isDefault, inGroup.contains(where: \.isDefault) {
                throw MultivariantHintError("two DEFAULT=YES in GROUP-ID \"\(member.group)\"")
            }
            seen.append(member)
        }
    }

    /// ffmpeg's generated NAMEs (`audio_N`, `subtitle_N`) become the language's own name, else the rendition name;
    /// a name that would then appear twice in its group stays the rendition name.
    mutating func normalizeNames() {
        for position in members.indices where Self.isGeneratedName(members[position].name) {
            let member = members[position]
            var name = member.language.flatMap(LanguageNames.endonym) ?? member.rendition
            let taken = members.contains {
                $0.group == member.group && $0.rendition != member.rendition && $0.name == name
            }
            if taken { name = member.rendition }
            members[position].name = name
        }
    }

    /// True for ffmpeg's `audio_N` and `subtitle_N`.
    static func isGeneratedName(_ name: String) -> Bool {
        for prefix in ["audio_", "subtitle_"] where name.hasPrefix(prefix) {
            let digits = name.dropFirst(prefix.count)
            return !digits.isEmpty && digits.allSatisfy { $0.isASCII && $0.isNumber }
        }
        return false
    }

    /// The rendition a hint URI names: `{r}/{file}.m3u8` relative to the channel, `{r}` a valid rendition name;
    /// WebVTT playlists under a video rendition (`lo/index_vtt.m3u8`) name its subtitle rendition (`lo-vtt`).
    static func renditionName(_ uri: String) throws(MultivariantHintError) -> String {
        let parts = uri.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, OriginNames.isValid(parts[0]), parts[1].hasSuffix(".m3u8"), parts[1].count > 5,
            !parts[1].contains("?"), !parts[1].contains("..")
        else {
            throw MultivariantHintError(
                "URI \"\(uri)\" is not {rendition}/{file}.m3u8 relative to the channel (\(OriginNames.rule))")
        }
        return OriginNames.rendition(parts[0], forFile: parts[1])
    }
}

/// Why an encoder's multivariant hint was refused; `message` is the 400 body.
public struct MultivariantHintError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
