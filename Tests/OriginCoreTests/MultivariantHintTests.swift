import HLSPlaylist
import LiveTimeline
import TestSupport
import Testing

/// The encoder's multivariant playlist as a hint: read, validated, normalized, never trusted as is.
@Suite("Multivariant hint", .offThePool)
struct MultivariantHintTests {
    /// The exact bytes ffmpeg 5.1 PUTs to `/ingest/demux/master.m3u8` for the issue's command with subtitles on `lo`
    /// (blank lines and an EXT-X-MEDIA between variants included).
    static let ffmpeg51Master = """
        #EXTM3U
        #EXT-X-VERSION:3
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="group_aud",NAME="audio_2",DEFAULT=YES,LANGUAGE="en",URI="en/index.m3u8"
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="group_aud",NAME="audio_3",DEFAULT=NO,LANGUAGE="fr",URI="fr/index.m3u8"
        #EXT-X-STREAM-INF:BANDWIDTH=75900,RESOLUTION=640x360,CODECS="avc1.42c01e,mp4a.40.2",AUDIO="group_aud"
        hi/index.m3u8

        #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="subtitle_1",DEFAULT=NO,URI="lo/index_vtt.m3u8"
        #EXT-X-STREAM-INF:BANDWIDTH=75900,RESOLUTION=320x180,CODECS="avc1.42c00d,mp4a.40.2",AUDIO="group_aud",SUBTITLES="subs"
        lo/index.m3u8

        """

    static func read(_ text: String) throws(MultivariantHintError) -> MultivariantHint {
        try MultivariantHint.read(Array(text.utf8))
    }

    @Test func ffmpegHintNamesGroupsLanguagesAndDefaultWithEndonyms() throws {
        let hint = try Self.read(Self.ffmpeg51Master)
        #expect(
            hint.members == [
                .init(
                    rendition: "en", kind: .audio, group: "group_aud", name: "English", language: "en",
                    isDefault: true),
                .init(rendition: "fr", kind: .audio, group: "group_aud", name: "Français", language: "fr"),
                .init(rendition: "lo-vtt", kind: .subtitles, group: "subs", name: "lo-vtt"),
            ])
        #expect(hint.variants == ["hi", "lo"])
    }

    @Test func generatedNameOfAnUnknownLanguageBecomesTheRenditionName() throws {
        let hint = try Self.read(
            """
            #EXTM3U
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="audio_0",LANGUAGE="tlh",URI="tlh/index.m3u8"
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="Commentary",LANGUAGE="en",URI="com/index.m3u8"
            #EXT-X-STREAM-INF:BANDWIDTH=1
            v/index.m3u8
            """)
        #expect(hint.members.map(\.name) == ["tlh", "Commentary"])
    }

    @Test(
        "refused with the reason",
        arguments: [
            ("../other/index.m3u8", "URI \"../other/index.m3u8\" is not {rendition}/{file}.m3u8"),
            ("http://evil.example/en/index.m3u8", "is not {rendition}/{file}.m3u8"),
            ("/demux/en/index.m3u8", "is not {rendition}/{file}.m3u8"),
            ("en/index.ts", "is not {rendition}/{file}.m3u8"),
            ("en%2F/index.m3u8", "is not {rendition}/{file}.m3u8"),
        ])
    func badURIsAreRefused(uri: String, message: String) {
        let text = """
            #EXTM3U
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="en",URI="\(uri)"
            #EXT-X-STREAM-INF:BANDWIDTH=1,AUDIO="a"
            v/index.m3u8
            """
        do {
            _ = try Self.read(text)
            Issue.record("accepted \(uri)")
        } catch {
            #expect(error.message.contains(message), "\(error.message)")
        }
    }

    @Test(
        "group rules: NAME once, one DEFAULT, RFC 5646 LANGUAGE, one group per rendition",
        arguments: [
            (
                """
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="Same",URI="en/index.m3u8"
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="Same",URI="fr/index.m3u8"
                """,
                "NAME \"Same\" appears twice in GROUP-ID \"a\""
            ),
            (
                """
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="en",DEFAULT=YES,AUTOSELECT=YES,URI="en/index.m3u8"
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="fr",DEFAULT=YES,AUTOSELECT=YES,URI="fr/index.m3u8"
                """,
                "two DEFAULT=YES in GROUP-ID \"a\""
            ),
            (
                """
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="en",LANGUAGE="english!",URI="en/index.m3u8"
                """,
                "LANGUAGE \"english!\" of en is not an RFC 5646 tag"
            ),
            (
                """
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="en",URI="en/index.m3u8"
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="b",NAME="en",URI="en/other.m3u8"
                """,
                "rendition en is listed twice"
            ),
            (
                """
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="en",URI="en/index.m3u8"
                #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="a",NAME="s",URI="s/index.m3u8"
                """,
                "GROUP-ID \"a\" is used for audio and subtitles"
            ),
        ])
    func groupRulesAreEnforced(media: String, message: String) {
        let text = "#EXTM3U\n" + media + "\n#EXT-X-STREAM-INF:BANDWIDTH=1,AUDIO=\"a\"\nv/index.m3u8\n"
        do {
            _ = try Self.read(text)
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.message == message)
        }
    }

    @Test func oversizedUnreadableAndMediaPlaylistsAreRefused() {
        let large = Self.ffmpeg51Master + String(repeating: "#", count: MultivariantHint.maxBytes)
        let cases: [([UInt8], String)] = [
            (Array(large.utf8), "larger than 65536 bytes"),
            ([0x23, 0x45, 0xFF, 0xFE], "not UTF-8"),
            (Array("#EXTM3U\n#EXTINF:2,\nx.ts\n".utf8), "not a multivariant playlist"),
            (Array("hello".utf8), "not a multivariant playlist"),
        ]
        for (bytes, message) in cases {
            do {
                _ = try MultivariantHint.read(bytes)
                Issue.record("accepted \(bytes.prefix(20))")
            } catch {
                #expect(error.message.contains(message), "\(error.message)")
            }
        }
    }
}
