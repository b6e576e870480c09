public import HLSPlaylist
public import LiveTimeline
public import MediaProbe

/// One `EXT-X-MEDIA` of the layout: a rendition's place in its group.
public struct MediaGroupMember: Sendable, Hashable {
    public var rendition: String
    /// NAME, unique in the group.
    public var name: String
    /// LANGUAGE; nil: none (never invented).
    public var language: String?
    public var isDefault: Bool
    public var autoselect: Bool
    /// FORCED (subtitles only).
    public var forced: Bool
}

/// One GROUP-ID: one TYPE, one codec or subtitle format.
public struct MediaGroup: Sendable, Hashable {
    public var id: String
    /// `.audio` or `.subtitles`.
    public var type: RenditionType
    public var members: [MediaGroupMember]
    /// Subtitles in IMSC1 (`stpp.ttml.im1t`, named in CODECS); false for WebVTT and audio.
    public var isIMSC: Bool
}

/// A rendition as the layout sees it: its name, what its newest segment carries and its role.
public struct LayoutRendition: Sendable, Hashable {
    public var name: String
    public var tracks: [TrackInfo]
    /// Created as a subtitle rendition (WebVTT pushed under a video rendition's path, or a configured one).
    public var isSubtitles: Bool

    public init(name: String, tracks: [TrackInfo], isSubtitles: Bool = false) {
        self.name = name
        self.tracks = tracks
        self.isSubtitles = isSubtitles
    }

    var hasVideo: Bool { tracks.contains { $0.kind == .video } }
    var isAudioOnly: Bool { !tracks.isEmpty && tracks.allSatisfy { $0.kind == .audio } }
    var carriesSubtitles: Bool { isSubtitles || (!tracks.isEmpty && tracks.allSatisfy { $0.kind == .subtitles }) }
}

/// What the multivariant playlist offers: which renditions are video variants and which are members of audio and
/// subtitle groups. Pure: computed from the configuration, then the encoder's hint, then the probe, in that order of
/// precedence, over the renditions that delivered media.
public struct RenditionLayout: Sendable, Hashable {
    /// Audio groups, then subtitle groups, first seen first.
    public var groups: [MediaGroup] = []
    /// Video renditions, in channel order.
    public var videoVariants: [String] = []
    /// Also offer each audio group's default member as a variant (audio-only clients).
    public var audioOnlyVariants = false
    /// False: the channel keeps one variant per rendition (no video rendition, or video with muxed audio, or no
    /// audio or subtitle rendition to group).
    public var isGrouped: Bool { !videoVariants.isEmpty && !groups.isEmpty }
    /// What the configuration overrode in the hint, or what the probe contradicted; logged and counted.
    public var contradictions: [String] = []

    /// Default GROUP-ID of audio renditions no one named a group for.
    public static let defaultAudioGroup = "audio"
    /// Default GROUP-ID of subtitle renditions no one named a group for.
    public static let defaultSubtitleGroup = "subs"

    public init() {}

    /// The layout of a channel.
    /// - Parameters:
    ///   - configured: the channel's configured renditions (their `audio:`/`subtitles:` memberships win).
    ///   - hint: the encoder's validated multivariant hint, if it sent one.
    ///   - renditions: the channel's renditions in order; those without tracks (no media yet) are left out.
    ///   - audioOnlyVariant: the channel's `audioOnlyVariant`.
    public static func resolve(
        configured: [RenditionConfiguration], hint: MultivariantHint?, renditions: [LayoutRendition],
        audioOnlyVariant: Bool = false
    ) -> RenditionLayout {
        var layout = RenditionLayout()
        layout.audioOnlyVariants = audioOnlyVariant
        let started = renditions.filter { !$0.tracks.isEmpty }
        let configuration = Dictionary(configured.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let videos = started.filter { $0.hasVideo && !$0.carriesSubtitles }
        // Video with muxed audio can still reference subtitle groups; alternate audio beside muxed audio would need
        // a URI-less EXT-X-MEDIA for the muxed track (out of scope), so such a channel keeps one variant per rendition.
        if videos.contains(where: { $0.tracks.contains { $0.kind == .audio } }),
            started.contains(where: { $0.isAudioOnly && !$0.carriesSubtitles })
        {
            layout.contradictions.append(
                "video renditions carry muxed audio beside audio-only renditions: every rendition stays a variant "
                    + "of its own")
            return layout
        }
        var audio: [(group: String, member: MediaGroupMember, codec: String?)] = []
        var subtitles: [(group: String, member: MediaGroupMember, imsc: Bool)] = []
        // Members in configuration order, then the hint's, then arrival: the same playlist text whatever order the
        // encoder's first pushes happened to arrive in.
        let configuredOrder = Dictionary(
            configured.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        let hintedOrder = Dictionary(
            (hint?.members ?? []).enumerated().map { ($1.rendition, $0) }, uniquingKeysWith: { first, _ in first })
        let alternates = started.enumerated().filter { !videos.contains($0.element) }.sorted { a, b in
            let rank = { (entry: (offset: Int, element: LayoutRendition)) in
                (
                    configuredOrder[entry.element.name] ?? Int.max, hintedOrder[entry.element.name] ?? Int.max,
                    entry.offset
                )
            }
            return rank(a) < rank(b)
        }.map(\.element)
        for rendition in alternates {
            let configuredAs = configuration[rendition.name]
            let hinted = hint?.member(for: rendition.name)
            let kind: MultivariantHint.MemberKind
            if rendition.carriesSubtitles {
                kind = .subtitles
            } else if rendition.isAudioOnly {
                kind = .audio
            } else {
                continue  // data only: nothing to offer
            }
            var membership: MediaGroupMembership
            let fromConfiguration = kind == .audio ? configuredAs?.audio : configuredAs?.subtitles
            if let other = kind == .audio ? configuredAs?.subtitles : configuredAs?.audio {
                layout.contradictions.append(
                    "\(rendition.name) is configured as \(kind == .audio ? "subtitles" : "audio") (group "
                        + "\(other.group)) but carries \(kind.rawValue)")
            }
            if let fromConfiguration {
                membership = fromConfiguration
                if let hinted, hinted.membership != membership.comparable(to: hinted) {
                    layout.contradictions.append(
                        "hint for \(rendition.name) (group \(hinted.group), NAME \(hinted.name)) differs from the "
                            + "configuration, which wins")
                }
            } else if let hinted, hinted.kind == kind {
                membership = hinted.membership
            } else {
                if let hinted {
                    layout.contradictions.append(
                        "hint lists \(rendition.name) as \(hinted.kind.rawValue) but it carries \(kind.rawValue)")
                }
                membership = MediaGroupMembership(
                    group: kind == .audio ? defaultAudioGroup : defaultSubtitleGroup)
            }
            let member = MediaGroupMember(
                rendition: rendition.name, name: membership.name ?? rendition.name, language: membership.language,
                isDefault: membership.isDefault, autoselect: membership.autoselect || membership.isDefault,
                forced: kind == .subtitles && membership.forced)
            if kind == .audio {
                let codec = rendition.tracks.first { $0.kind == .audio }?.codec
                audio.append((membership.group + audioGroupSuffix(codec), member, codec))
            } else {
                let imsc = rendition.tracks.contains { $0.codec?.hasPrefix("stpp") == true }
                subtitles.append((membership.group + (imsc ? "-imsc" : ""), member, imsc))
            }
        }
        layout.videoVariants = videos.map(\.name)
        for entry in audio { layout.add(entry.member, group: entry.group, type: .audio, imsc: false) }
        for entry in subtitles { layout.add(entry.member, group: entry.group, type: .subtitles, imsc: entry.imsc) }
        for position in layout.groups.indices where layout.groups[position].type == .audio {
            // Players need one audio rendition to start with: the first member is the default if none is.
            if !layout.groups[position].members.contains(where: \.isDefault) {
                layout.groups[position].members[0].isDefault = true
                layout.groups[position].members[0].autoselect = true
            }
        }
        return layout
    }

    /// Suffix of an audio group for a codec, so a group holds one codec: AAC (and other `mp4a`) none, AC-3 `-ac3`,
    /// E-AC-3 `-ec3`, any other codec its name.
    static func audioGroupSuffix(_ codec: String?) -> String {
        guard let codec, !codec.hasPrefix("mp4a") else { return "" }
        switch codec {
        case "ac-3": return "-ac3"
        case "ec-3": return "-ec3"
        default:
            return "-"
                + String(
                    codec.lowercased().unicodeScalars.filter {
                        $0.isASCII && $0.properties.isAlphabetic
                            || ("0"..."9").contains($0)
                    }.map(Character.init))
        }
    }

    /// Adds a member to its group (made on first use); a NAME already in the group becomes `NAME (rendition)`, and a
    /// second DEFAULT=YES is dropped, so every group keeps rule 35.
    private mutating func add(_ member: MediaGroupMember, group id: String, type: RenditionType, imsc: Bool) {
        var member = member
        let position: Int
        if let existing = groups.firstIndex(where: { $0.id == id && $0.type == type }) {
            position = existing
        } else {
            groups.append(MediaGroup(id: id, type: type, members: [], isIMSC: imsc))
            position = groups.count - 1
        }
        if groups[position].members.contains(where: { $0.name == member.name }) {
            contradictions.append("NAME \(member.name) appears twice in group \(id): \(member.rendition) renamed")
            member.name = "\(member.name) (\(member.rendition))"
        }
        if member.isDefault, groups[position].members.contains(where: \.isDefault) {
            contradictions.append("group \(id) has a default already: \(member.rendition) is not DEFAULT")
            member.isDefault = false
        }
        groups[position].members.append(member)
    }
}

extension MediaGroupMembership {
    /// The fields a hint can state, for comparing a configured membership with a hint's.
    fileprivate func comparable(to hint: MultivariantHint.Member) -> MediaGroupMembership {
        MediaGroupMembership(
            group: group, language: language, name: name ?? hint.name, isDefault: isDefault,
            autoselect: hint.autoselect, forced: forced)
    }
}
