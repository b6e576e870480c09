import Foundation
import TestSupport
import Testing

@testable import HLSPlaylist

/// Alternate renditions as the origin renders them for a demuxed push (audio group, subtitles, closed captions) and
/// as ffmpeg 5.1 sends its multivariant hint.
@Suite("Alternate renditions in the multivariant playlist", .offThePool)
struct AlternateRenditionPlaylistTests {
    static let english = Rendition(
        type: .audio, groupID: "group_aud", name: "English", uri: "en/index.m3u8", language: "en", isDefault: true,
        autoselect: true, channels: "1")
    static let french = Rendition(
        type: .audio, groupID: "group_aud", name: "Français", uri: "fr/index.m3u8", language: "fr", autoselect: true,
        channels: "1")
    static let subtitles = Rendition(
        type: .subtitles, groupID: "subs", name: "lo-vtt", uri: "lo-vtt/index.m3u8", autoselect: true, forced: false)
    static let captions = Rendition(
        type: .closedCaptions, groupID: "cc", name: "CC1", language: "en", autoselect: true, instreamID: "CC1")

    static func videoVariants(closedCaptions: ClosedCaptionsReference) -> [VariantStream] {
        [
            VariantStream(
                uri: "hi/index.m3u8", bandwidth: 2_195_400, averageBandwidth: 2_128_300,
                codecs: ["avc1.42c01e", "mp4a.40.2"], resolution: Resolution(width: 640, height: 360), frameRate: 30,
                audioGroup: "group_aud", subtitlesGroup: "subs", closedCaptions: closedCaptions),
            VariantStream(
                uri: "lo/index.m3u8", bandwidth: 832_400, averageBandwidth: 778_300,
                codecs: ["avc1.42c00d", "mp4a.40.2"], resolution: Resolution(width: 320, height: 180), frameRate: 30,
                audioGroup: "group_aud", subtitlesGroup: "subs", closedCaptions: closedCaptions),
        ]
    }

    /// The design's worked example: the issue's ffmpeg push plus WebVTT subtitles on `lo`, no captions.
    static let demuxed = MultivariantPlaylist(
        independentSegments: true, renditions: [english, french, subtitles],
        variants: videoVariants(closedCaptions: ClosedCaptionsReference.none))

    static let demuxedText = """
        #EXTM3U
        #EXT-X-INDEPENDENT-SEGMENTS
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="group_aud",NAME="English",LANGUAGE="en",DEFAULT=YES,AUTOSELECT=YES,\
        CHANNELS="1",URI="en/index.m3u8"
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="group_aud",NAME="Français",LANGUAGE="fr",DEFAULT=NO,AUTOSELECT=YES,\
        CHANNELS="1",URI="fr/index.m3u8"
        #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="lo-vtt",DEFAULT=NO,AUTOSELECT=YES,FORCED=NO,\
        URI="lo-vtt/index.m3u8"
        #EXT-X-STREAM-INF:BANDWIDTH=2195400,AVERAGE-BANDWIDTH=2128300,CODECS="avc1.42c01e,mp4a.40.2",\
        RESOLUTION=640x360,FRAME-RATE=30.000,AUDIO="group_aud",SUBTITLES="subs",CLOSED-CAPTIONS=NONE
        hi/index.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=832400,AVERAGE-BANDWIDTH=778300,CODECS="avc1.42c00d,mp4a.40.2",\
        RESOLUTION=320x180,FRAME-RATE=30.000,AUDIO="group_aud",SUBTITLES="subs",CLOSED-CAPTIONS=NONE
        lo/index.m3u8

        """

    /// The audio-only variant offered with `audioOnlyVariant: true`: the default audio rendition's playlist.
    /// CLOSED-CAPTIONS=NONE is on it too, because RFC 8216 4.3.4.2 wants NONE on every variant once one has it.
    static let audioOnlyVariant = VariantStream(
        uri: "en/index.m3u8", bandwidth: 80_000, averageBandwidth: 78_000, codecs: ["mp4a.40.2"],
        audioGroup: "group_aud", closedCaptions: ClosedCaptionsReference.none)

    /// The same channel when `hi` carries CEA-608 captions on CC1.
    static let withCaptions = MultivariantPlaylist(
        independentSegments: true, renditions: [english, french, subtitles, captions],
        variants: videoVariants(closedCaptions: .group("cc")))

    @Test("the demuxed worked example renders byte for byte and is valid at version 1")
    func rendersTheDemuxedExample() {
        #expect(Self.demuxed.render() == Self.demuxedText)
        #expect(Self.demuxed.minimumVersion == 1)
        #expect(Self.demuxed.validate() == [])
    }

    @Test("an audio-only variant comes last with the audio group and CLOSED-CAPTIONS=NONE, and needs no SUBTITLES")
    func rendersTheAudioOnlyVariant() {
        var playlist = Self.demuxed
        playlist.variants.append(Self.audioOnlyVariant)
        #expect(
            playlist.render() == Self.demuxedText + """
                #EXT-X-STREAM-INF:BANDWIDTH=80000,AVERAGE-BANDWIDTH=78000,CODECS="mp4a.40.2",AUDIO="group_aud",\
                CLOSED-CAPTIONS=NONE
                en/index.m3u8

                """)
        #expect(playlist.validate() == [])
    }

    @Test("captions add a CLOSED-CAPTIONS group with INSTREAM-ID and no URI, referenced by every video variant")
    func rendersTheClosedCaptionsGroup() {
        var playlist = Self.withCaptions
        playlist.variants.append(
            VariantStream(
                uri: "en/index.m3u8", bandwidth: 80_000, averageBandwidth: 78_000, codecs: ["mp4a.40.2"],
                audioGroup: "group_aud"))
        let lines = playlist.render().split(separator: "\n", omittingEmptySubsequences: false)
        #expect(
            lines[5] == """
                #EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID="cc",NAME="CC1",LANGUAGE="en",DEFAULT=NO,AUTOSELECT=YES,\
                INSTREAM-ID="CC1"
                """)
        #expect(
            lines[6] == """
                #EXT-X-STREAM-INF:BANDWIDTH=2195400,AVERAGE-BANDWIDTH=2128300,CODECS="avc1.42c01e,mp4a.40.2",\
                RESOLUTION=640x360,FRAME-RATE=30.000,AUDIO="group_aud",SUBTITLES="subs",CLOSED-CAPTIONS="cc"
                """)
        #expect(lines[8].hasSuffix(#"SUBTITLES="subs",CLOSED-CAPTIONS="cc""#))
        #expect(
            lines[10]
                == #"#EXT-X-STREAM-INF:BANDWIDTH=80000,AVERAGE-BANDWIDTH=78000,CODECS="mp4a.40.2",AUDIO="group_aud""#)
        #expect(playlist.minimumVersion == 1)
        #expect(playlist.validate() == [])
    }

    @Test("a CEA-708 SERVICE needs EXT-X-VERSION:7; CEA-608 channels need none")
    func serviceNeedsVersionSeven() {
        var playlist = Self.withCaptions
        playlist.renditions.append(
            Rendition(type: .closedCaptions, groupID: "cc", name: "Service 1", autoselect: true, instreamID: "SERVICE1")
        )
        #expect(playlist.minimumVersion == 7)
        #expect(playlist.render().hasPrefix("#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-INDEPENDENT-SEGMENTS\n"))
        #expect(playlist.validate() == [])
        var withDefine = playlist
        withDefine.definitions = [.value(name: "a", value: "b")]
        #expect(withDefine.minimumVersion == 8)
    }

    @Test("FORCED renders only for SUBTITLES; CHARACTERISTICS comes after INSTREAM-ID, before URI")
    func forcedAndCharacteristicsPlacement() {
        let forcedSubtitles = Rendition(
            type: .subtitles, groupID: "subs", name: "Forced", uri: "f.m3u8", language: "en", forced: true,
            characteristics: "public.accessibility.transcribes-spoken-dialog")
        #expect(
            forcedSubtitles.renderedTag == """
                #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="Forced",LANGUAGE="en",DEFAULT=NO,AUTOSELECT=NO,\
                FORCED=YES,CHARACTERISTICS="public.accessibility.transcribes-spoken-dialog",URI="f.m3u8"
                """)
        let audio = Rendition(
            type: .audio, groupID: "a", name: "Described", uri: "ad.m3u8", channels: "2", forced: true,
            characteristics: "public.accessibility.describes-video")
        #expect(
            audio.renderedTag == """
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="Described",DEFAULT=NO,AUTOSELECT=NO,CHANNELS="2",\
                CHARACTERISTICS="public.accessibility.describes-video",URI="ad.m3u8"
                """)
        let notForced = Rendition(type: .subtitles, groupID: "subs", name: "Plain", uri: "p.m3u8")
        #expect(!notForced.renderedTag.contains("FORCED"))
    }

    static func ffmpegHint() throws -> String {
        let url = try #require(
            Bundle.module.url(forResource: "ffmpeg51-master", withExtension: "m3u8", subdirectory: "Fixtures"),
            "fixture ffmpeg51-master.m3u8 missing from the test bundle")
        return try String(contentsOf: url, encoding: .utf8)
    }

    @Test("ffmpeg 5.1's multivariant hint parses, blank lines and EXT-X-MEDIA between variants included")
    func parsesTheFFmpegHint() throws {
        let text = try Self.ffmpegHint()
        #expect(text.utf8.count == 584)
        #expect(text.contains("hi/index.m3u8\n\n#EXT-X-MEDIA:TYPE=SUBTITLES"))
        #expect(
            try MultivariantPlaylist.parse(text)
                == MultivariantPlaylist(
                    renditions: [
                        Rendition(
                            type: .audio, groupID: "group_aud", name: "audio_2", uri: "en/index.m3u8", language: "en",
                            isDefault: true),
                        Rendition(
                            type: .audio, groupID: "group_aud", name: "audio_3", uri: "fr/index.m3u8", language: "fr"),
                        Rendition(type: .subtitles, groupID: "subs", name: "subtitle_1", uri: "lo/index_vtt.m3u8"),
                    ],
                    variants: [
                        VariantStream(
                            uri: "hi/index.m3u8", bandwidth: 75_900, codecs: ["avc1.42c01e", "mp4a.40.2"],
                            resolution: Resolution(width: 640, height: 360), audioGroup: "group_aud"),
                        VariantStream(
                            uri: "lo/index.m3u8", bandwidth: 75_900, codecs: ["avc1.42c00d", "mp4a.40.2"],
                            resolution: Resolution(width: 320, height: 180), audioGroup: "group_aud",
                            subtitlesGroup: "subs"),
                    ]))
    }

    @Test("validate() finds what is wrong with ffmpeg's hint: DEFAULT without AUTOSELECT, SUBTITLES on one variant")
    func validatesTheFFmpegHint() throws {
        let errors = try MultivariantPlaylist.parse(Self.ffmpegHint()).validate()
        #expect(errors.map(\.rule) == [.autoselectWhenDefault, .sameGroupsOnEveryVariant])
        #expect(errors.map(\.attribute) == ["AUTOSELECT", "SUBTITLES"])
        #expect(
            errors.first?.description
                == #"AUTOSELECT: AUDIO rendition "audio_2" in group "group_aud" has DEFAULT=YES, so it needs "#
                + "AUTOSELECT=YES")
    }

    @Test("parse, render and parse again give the same playlist", arguments: ["ffmpeg", "demuxed", "captions"])
    func roundTrip(source: String) throws {
        let text: String
        switch source {
        case "ffmpeg": text = try Self.ffmpegHint()
        case "demuxed": text = Self.demuxed.render()
        default: text = Self.withCaptions.render()
        }
        let parsed = try MultivariantPlaylist.parse(text)
        let rendered = parsed.render()
        #expect(try MultivariantPlaylist.parse(rendered) == parsed)
        #expect(try MultivariantPlaylist.parse(rendered).render() == rendered)
        if source == "demuxed" {
            #expect(parsed == Self.demuxed)
        } else if source == "captions" {
            #expect(parsed == Self.withCaptions)
        }
    }

    @Test("CLOSED-CAPTIONS=NONE parses as .none and a quoted group as .group; other enumerated values are refused")
    func parsesClosedCaptionsReference() throws {
        func closedCaptions(_ value: String) throws -> ClosedCaptionsReference? {
            try MultivariantPlaylist.parse("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\(value)\nv.m3u8\n")
                .variants.first?.closedCaptions
        }
        #expect(try closedCaptions(",CLOSED-CAPTIONS=NONE") == ClosedCaptionsReference.none)
        #expect(try closedCaptions(",CLOSED-CAPTIONS=\"cc\"") == .group("cc"))
        #expect(try closedCaptions("") == nil)
        #expect(
            throws: PlaylistParseError(line: 2, message: "#EXT-X-STREAM-INF: CLOSED-CAPTIONS must be a quoted string")
        ) { try closedCaptions(",CLOSED-CAPTIONS=ALL") }
    }
}
