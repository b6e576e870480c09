import HLSPackaging
import HLSPlaylist
import LiveTimeline
import MediaProbe
import TestSupport
import Testing

/// `RenditionLayout.resolve`: who is a video variant and who is a member of which group, from the configuration,
/// then the encoder's hint, then the probe.
@Suite("Rendition layout", .offThePool)
struct RenditionLayoutTests {
    static func video(_ name: String, audio: Bool = false) -> LayoutRendition {
        var tracks = [
            TrackInfo(kind: .video, codec: "avc1.42c01e", width: 640, height: 360, trackID: 256, timescale: 90000)
        ]
        if audio {
            tracks.append(TrackInfo(kind: .audio, codec: "mp4a.40.2", channelCount: 2, trackID: 257, timescale: 90000))
        }
        return LayoutRendition(name: name, tracks: tracks)
    }

    static func audio(_ name: String, codec: String = "mp4a.40.2") -> LayoutRendition {
        LayoutRendition(
            name: name, tracks: [TrackInfo(kind: .audio, codec: codec, channelCount: 2, trackID: 257, timescale: 90000)]
        )
    }

    static func subtitles(_ name: String, codec: String = "wvtt") -> LayoutRendition {
        LayoutRendition(
            name: name, tracks: [TrackInfo(kind: .subtitles, codec: codec, trackID: 1, timescale: 90000)],
            isSubtitles: true)
    }

    static let demux = [video("hi"), video("lo"), audio("en"), audio("fr"), subtitles("lo-vtt")]

    static let hint = MultivariantHint(
        members: [
            .init(rendition: "en", kind: .audio, group: "group_aud", name: "English", language: "en", isDefault: true),
            .init(rendition: "fr", kind: .audio, group: "group_aud", name: "Français", language: "fr"),
            .init(rendition: "lo-vtt", kind: .subtitles, group: "subs", name: "lo-vtt"),
        ],
        variants: ["hi", "lo"])

    /// `group: [rendition NAME LANGUAGE DEFAULT]` lines, for compact expectations.
    static func summary(_ layout: RenditionLayout) -> [String] {
        layout.groups.map { group in
            "\(group.type.rawValue) \(group.id): "
                + group.members.map { member in
                    "\(member.rendition) \"\(member.name)\" \(member.language ?? "-")\(member.isDefault ? " default" : "")"
                }.joined(separator: ", ")
        }
    }

    @Test func probeOnlyPutsAudioIntoTheDefaultGroupWithoutLanguage() {
        let layout = RenditionLayout.resolve(configured: [], hint: nil, renditions: Self.demux)
        #expect(layout.isGrouped)
        #expect(layout.videoVariants == ["hi", "lo"])
        #expect(
            Self.summary(layout) == [
                "AUDIO audio: en \"en\" - default, fr \"fr\" -", "SUBTITLES subs: lo-vtt \"lo-vtt\" -",
            ])
        #expect(layout.contradictions.isEmpty)
    }

    @Test func hintOnlyNamesGroupsLanguagesAndDefault() {
        let layout = RenditionLayout.resolve(configured: [], hint: Self.hint, renditions: Self.demux)
        #expect(
            Self.summary(layout) == [
                "AUDIO group_aud: en \"English\" en default, fr \"Français\" fr",
                "SUBTITLES subs: lo-vtt \"lo-vtt\" -",
            ])
    }

    @Test func configurationOnly() {
        let configured = [
            RenditionConfiguration(name: "hi"),
            RenditionConfiguration(name: "en", audio: .init(group: "aud", language: "en", name: "English")),
            RenditionConfiguration(
                name: "fr", audio: .init(group: "aud", language: "fr", name: "French", isDefault: true)),
            RenditionConfiguration(
                name: "lo-vtt", subtitles: .init(group: "text", language: "en", name: "English", forced: true)),
        ]
        let layout = RenditionLayout.resolve(configured: configured, hint: nil, renditions: Self.demux)
        #expect(
            Self.summary(layout) == [
                "AUDIO aud: en \"English\" en, fr \"French\" fr default", "SUBTITLES text: lo-vtt \"English\" en",
            ])
        #expect(layout.groups[1].members[0].forced)
    }

    @Test func configurationWinsOverTheHintAndSaysWhere() {
        let configured = [
            RenditionConfiguration(name: "en", audio: .init(group: "aud", language: "en-GB", name: "British"))
        ]
        let layout = RenditionLayout.resolve(configured: configured, hint: Self.hint, renditions: Self.demux)
        // en follows the configuration, fr the hint: two audio groups, one variant per group and video.
        #expect(
            Self.summary(layout) == [
                "AUDIO aud: en \"British\" en-GB default", "AUDIO group_aud: fr \"Français\" fr default",
                "SUBTITLES subs: lo-vtt \"lo-vtt\" -",
            ])
        #expect(layout.contradictions.count == 1)
        #expect(layout.contradictions[0].contains("hint for en"))
    }

    @Test func aHintThatContradictsTheProbeIsOverruled() {
        var hint = Self.hint
        hint.members[1].kind = .subtitles
        let layout = RenditionLayout.resolve(configured: [], hint: hint, renditions: Self.demux)
        #expect(Self.summary(layout)[0] == "AUDIO group_aud: en \"English\" en default")
        #expect(Self.summary(layout)[1] == "AUDIO audio: fr \"fr\" - default")
        #expect(layout.contradictions == ["hint lists fr as subtitles but it carries audio"])
    }

    @Test func radioKeepsOneVariantPerRendition() {
        let layout = RenditionLayout.resolve(
            configured: [], hint: Self.hint, renditions: [Self.audio("en"), Self.audio("fr")])
        #expect(!layout.isGrouped)
    }

    @Test func muxedVideoKeepsOneVariantPerRendition() {
        let muxedOnly = RenditionLayout.resolve(
            configured: [], hint: nil, renditions: [Self.video("360p", audio: true), Self.video("180p", audio: true)])
        #expect(!muxedOnly.isGrouped)
        #expect(muxedOnly.contradictions.isEmpty)
        let muxedAndAudio = RenditionLayout.resolve(
            configured: [], hint: nil, renditions: [Self.video("360p", audio: true), Self.audio("en")])
        #expect(!muxedAndAudio.isGrouped)
        #expect(muxedAndAudio.contradictions.count == 1)
    }

    @Test func membersFollowTheConfigurationThenTheHintNotTheOrderPushesArrived() {
        let arrivedFrenchFirst = [Self.video("hi"), Self.audio("fr"), Self.subtitles("lo-vtt"), Self.audio("en")]
        let hinted = RenditionLayout.resolve(configured: [], hint: Self.hint, renditions: arrivedFrenchFirst)
        #expect(
            Self.summary(hinted) == [
                "AUDIO group_aud: en \"English\" en default, fr \"Français\" fr", "SUBTITLES subs: lo-vtt \"lo-vtt\" -",
            ])
        let configured = RenditionLayout.resolve(
            configured: [
                RenditionConfiguration(name: "fr", audio: MediaGroupMembership(group: "aud", language: "fr")),
                RenditionConfiguration(name: "en", audio: MediaGroupMembership(group: "aud", language: "en")),
            ], hint: Self.hint, renditions: [Self.video("hi"), Self.audio("en"), Self.audio("fr")])
        #expect(configured.groups.first?.members.map(\.rendition) == ["fr", "en"])
    }

    @Test func muxedVideoStillReferencesSubtitles() {
        let layout = RenditionLayout.resolve(
            configured: [], hint: nil, renditions: [Self.video("360p", audio: true), Self.subtitles("360p-vtt")])
        #expect(layout.isGrouped)
        #expect(layout.videoVariants == ["360p"])
        #expect(Self.summary(layout) == ["SUBTITLES subs: 360p-vtt \"360p-vtt\" -"])
        #expect(layout.contradictions.isEmpty)
    }

    @Test func oneGroupPerCodecAndIMSCApart() {
        let renditions = [
            Self.video("hi"), Self.audio("en"), Self.audio("en51", codec: "ac-3"), Self.audio("fr51", codec: "ec-3"),
            Self.subtitles("lo-vtt"), Self.subtitles("ttml", codec: "stpp.ttml.im1t"),
        ]
        let layout = RenditionLayout.resolve(configured: [], hint: nil, renditions: renditions)
        #expect(layout.groups.map(\.id) == ["audio", "audio-ac3", "audio-ec3", "subs", "subs-imsc"])
        #expect(layout.groups.map(\.isIMSC) == [false, false, false, false, true])
        #expect(layout.groups.filter { $0.type == .audio }.allSatisfy { $0.members.first?.isDefault == true })
    }

    @Test func renditionsWithoutMediaAreLeftOut() {
        let waiting = LayoutRendition(name: "fr", tracks: [])
        let layout = RenditionLayout.resolve(
            configured: [], hint: Self.hint, renditions: [Self.video("hi"), Self.audio("en"), waiting])
        #expect(Self.summary(layout) == ["AUDIO group_aud: en \"English\" en default"])
    }

    @Test func clashingNamesAndDefaultsAreRepairedSoTheGroupStaysValid() {
        let configured = [
            RenditionConfiguration(name: "en", audio: .init(group: "aud", name: "Main", isDefault: true))
        ]
        let hint = MultivariantHint(members: [
            .init(rendition: "fr", kind: .audio, group: "aud", name: "Main", isDefault: true)
        ])
        let layout = RenditionLayout.resolve(
            configured: configured, hint: hint, renditions: [Self.video("hi"), Self.audio("en"), Self.audio("fr")])
        #expect(Self.summary(layout) == ["AUDIO aud: en \"Main\" - default, fr \"Main (fr)\" -"])
        #expect(layout.contradictions.count == 2)
    }
}
