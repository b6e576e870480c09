import TestSupport
import Testing

@testable import HLSPlaylist

@Suite("Multivariant playlist", .offThePool)
struct MultivariantPlaylistTests {
    static let withAudioOnly = MultivariantPlaylist(
        independentSegments: true,
        renditions: [
            Rendition(
                type: .audio, groupID: "aac", name: "English", uri: "audio/en/index.m3u8", language: "en",
                isDefault: true, autoselect: true, channels: "2"),
            Rendition(type: .audio, groupID: "aac", name: "Deutsch", uri: "audio/de/index.m3u8", language: "de"),
            Rendition(
                type: .subtitles, groupID: "subs", name: "English", uri: "subs/en/index.m3u8", language: "en",
                autoselect: true),
        ],
        variants: [
            VariantStream(
                uri: "1080p/index.m3u8", bandwidth: 6_000_000, averageBandwidth: 5_000_000,
                codecs: ["avc1.640028", "mp4a.40.2"], resolution: Resolution(width: 1920, height: 1080),
                frameRate: 29.97, audioGroup: "aac", subtitlesGroup: "subs", closedCaptions: .group("cc")),
            VariantStream(
                uri: "360p/index.m3u8", bandwidth: 900_000, codecs: ["avc1.4d401e", "mp4a.40.2"],
                resolution: Resolution(width: 640, height: 360), frameRate: 25, audioGroup: "aac"),
            VariantStream(
                uri: "audio/en/index.m3u8", bandwidth: 140_000, averageBandwidth: 132_000, codecs: ["mp4a.40.2"]),
        ])

    static let playlists: [MultivariantPlaylist] = [
        MultivariantPlaylist(),
        withAudioOnly,
        MultivariantPlaylist(
            definitions: [.value(name: "cdn", value: "https://cdn.example"), .queryParameter(name: "token")],
            renditions: [Rendition(type: .closedCaptions, groupID: "cc", name: "CC1")],
            variants: [VariantStream(uri: "v.m3u8?t={$token}", bandwidth: 1, frameRate: 59.94)]),
    ]

    @Test("audio-only variant and EXT-X-MEDIA, byte for byte")
    func renderWithAudioOnly() {
        #expect(
            Self.withAudioOnly.render() == """
                #EXTM3U
                #EXT-X-INDEPENDENT-SEGMENTS
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aac",NAME="English",LANGUAGE="en",DEFAULT=YES,AUTOSELECT=YES,\
                CHANNELS="2",URI="audio/en/index.m3u8"
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aac",NAME="Deutsch",LANGUAGE="de",DEFAULT=NO,AUTOSELECT=NO,\
                URI="audio/de/index.m3u8"
                #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="English",LANGUAGE="en",DEFAULT=NO,AUTOSELECT=YES,\
                URI="subs/en/index.m3u8"
                #EXT-X-STREAM-INF:BANDWIDTH=6000000,AVERAGE-BANDWIDTH=5000000,CODECS="avc1.640028,mp4a.40.2",\
                RESOLUTION=1920x1080,FRAME-RATE=29.970,AUDIO="aac",SUBTITLES="subs",CLOSED-CAPTIONS="cc"
                1080p/index.m3u8
                #EXT-X-STREAM-INF:BANDWIDTH=900000,CODECS="avc1.4d401e,mp4a.40.2",RESOLUTION=640x360,\
                FRAME-RATE=25.000,AUDIO="aac"
                360p/index.m3u8
                #EXT-X-STREAM-INF:BANDWIDTH=140000,AVERAGE-BANDWIDTH=132000,CODECS="mp4a.40.2"
                audio/en/index.m3u8

                """)
        #expect(Self.withAudioOnly.minimumVersion == 1)
    }

    @Test("VERSION only above 1; DEFINE needs 8, QUERYPARAM 11")
    func versions() {
        #expect(MultivariantPlaylist().render() == "#EXTM3U\n")
        #expect(MultivariantPlaylist(definitions: [.value(name: "a", value: "b")]).minimumVersion == 8)
        #expect(
            Self.playlists[2].render() == """
                #EXTM3U
                #EXT-X-VERSION:11
                #EXT-X-DEFINE:NAME="cdn",VALUE="https://cdn.example"
                #EXT-X-DEFINE:QUERYPARAM="token"
                #EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID="cc",NAME="CC1",DEFAULT=NO,AUTOSELECT=NO
                #EXT-X-STREAM-INF:BANDWIDTH=1,FRAME-RATE=59.940
                v.m3u8?t={$token}

                """)
    }

    @Test("parses what packagers write: unknown tags, I-frame streams, CLOSED-CAPTIONS=NONE, substitution")
    func parseTolerant() throws {
        let text = """
            #EXTM3U\r
            #EXT-X-VERSION:8\r
            #EXT-X-DEFINE:NAME="cdn",VALUE="https://cdn.example"\r
            #EXT-X-SESSION-DATA:DATA-ID="com.example.title",VALUE="Demo"\r
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="{$cdn}",URI="{$cdn}/a.m3u8",X-FUTURE=1\r
            \r
            #EXT-X-STREAM-INF:BANDWIDTH=1280000,CODECS="avc1.4d401f, mp4a.40.2",CLOSED-CAPTIONS=NONE,AUDIO="a"\r
            {$cdn}/low.m3u8\r
            #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=86000,URI="low/iframe.m3u8"\r
            #EXT-X-FUTURE-TAG:whatever\r
            """
        var playlist = try MultivariantPlaylist.parse(text)
        #expect(playlist.iFrameStreams == [IFrameStream(uri: "low/iframe.m3u8", bandwidth: 86000)])
        playlist.iFrameStreams = []
        #expect(
            playlist
                == MultivariantPlaylist(
                    definitions: [.value(name: "cdn", value: "https://cdn.example")],
                    renditions: [
                        Rendition(
                            type: .audio, groupID: "a", name: "https://cdn.example", uri: "https://cdn.example/a.m3u8")
                    ],
                    variants: [
                        VariantStream(
                            uri: "https://cdn.example/low.m3u8", bandwidth: 1_280_000,
                            codecs: ["avc1.4d401f", "mp4a.40.2"], audioGroup: "a",
                            closedCaptions: ClosedCaptionsReference.none)
                    ]))
    }

    static let invalid: [(String, Int, String)] = [
        ("#EXT-X-STREAM-INF:BANDWIDTH=1\n", 1, "the first line must be #EXTM3U"),
        ("#EXTM3U\nv.m3u8\n", 2, "URI line without a preceding #EXT-X-STREAM-INF"),
        ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n", 2, "#EXT-X-STREAM-INF without a URI line after it"),
        (
            "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n#EXT-X-STREAM-INF:BANDWIDTH=2\nv\n", 3,
            "#EXT-X-STREAM-INF before the previous one's URI"
        ),
        ("#EXTM3U\n#EXT-X-STREAM-INF:CODECS=\"a\"\nv\n", 2, "#EXT-X-STREAM-INF: BANDWIDTH is required"),
        ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1.5\nv\n", 2, "#EXT-X-STREAM-INF: BANDWIDTH must be a decimal integer"),
        (
            "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,BANDWIDTH=2\nv\n", 2,
            "#EXT-X-STREAM-INF: attribute BANDWIDTH appears twice"
        ),
        (
            "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,RESOLUTION=1920*1080\nv\n", 2,
            "#EXT-X-STREAM-INF: RESOLUTION must be <width>x<height>"
        ),
        (
            "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,FRAME-RATE=fast\nv\n", 2,
            "#EXT-X-STREAM-INF: FRAME-RATE must be a decimal number >= 0"
        ),
        ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,AUDIO=a\nv\n", 2, "#EXT-X-STREAM-INF: AUDIO must be a quoted string"),
        (
            "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,CODECS=\"a\n", 2,
            "#EXT-X-STREAM-INF: unterminated quoted string in CODECS"
        ),
        ("#EXTM3U\n#EXT-X-MEDIA:GROUP-ID=\"a\",NAME=\"b\"\n", 2, "#EXT-X-MEDIA: TYPE is required"),
        (
            "#EXTM3U\n#EXT-X-MEDIA:TYPE=TEXT,GROUP-ID=\"a\",NAME=\"b\"\n", 2,
            "#EXT-X-MEDIA: TYPE must be AUDIO, VIDEO, SUBTITLES or CLOSED-CAPTIONS"
        ),
        ("#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,NAME=\"b\"\n", 2, "#EXT-X-MEDIA: GROUP-ID is required"),
        ("#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\"\n", 2, "#EXT-X-MEDIA: NAME is required"),
        (
            "#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"b\",DEFAULT=yes\n", 2,
            "#EXT-X-MEDIA: DEFAULT must be YES or NO"
        ),
        (
            "#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"{$g}\",NAME=\"b\"\n", 2,
            "#EXT-X-MEDIA: GROUP-ID: undefined variable reference {$g}"
        ),
        ("#EXTM3U\n#EXT-X-DEFINE:IMPORT=\"a\"\n", 2, "#EXT-X-DEFINE: IMPORT is only allowed in media playlists"),
        ("#EXTM3U\n#EXTINF:2,\n", 2, "#EXTINF belongs in a media playlist"),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n", 2, "#EXT-X-TARGETDURATION belongs in a media playlist"),
        (
            "#EXTM3U\n#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-INDEPENDENT-SEGMENTS\n", 3,
            "#EXT-X-INDEPENDENT-SEGMENTS appears twice"
        ),
    ]

    @Test("invalid multivariant playlists fail with the line and the reason", arguments: invalid)
    func invalidPlaylists(text: String, line: Int, message: String) {
        #expect(throws: PlaylistParseError(line: line, message: message)) { try MultivariantPlaylist.parse(text) }
    }
}
