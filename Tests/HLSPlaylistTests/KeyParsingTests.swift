import TestSupport
import Testing

@testable import HLSPlaylist

@Suite("EXT-X-KEY, SESSION-KEY, I-frame parsing and variable resolution", .offThePool)
struct KeyParsingTests {
    static let encryptedMedia = """
        #EXTM3U
        #EXT-X-VERSION:8
        #EXT-X-TARGETDURATION:2
        #EXT-X-MEDIA-SEQUENCE:100
        #EXT-X-DISCONTINUITY-SEQUENCE:4
        #EXT-X-INDEPENDENT-SEGMENTS
        #EXT-X-DEFINE:IMPORT="token"
        #EXT-X-KEY:METHOD=AES-128,URI="../key-33.key?token={$token}"
        #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:00.000Z
        #EXTINF:2.000,
        100.ts?token={$token}
        #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:02.000Z
        #EXT-X-GAP
        #EXTINF:2.000,
        101.ts?token={$token}
        #EXT-X-KEY:METHOD=AES-128,URI="../key-34.key?token={$token}"
        #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:04.000Z
        #EXTINF:2.000,
        102.ts?token={$token}
        #EXT-X-DISCONTINUITY
        #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:06.000Z
        #EXTINF:1.960,
        103.ts?token={$token}

        """

    @Test("an encrypted, tokenized media playlist round-trips byte for byte; KEY lands on its segment")
    func encryptedMediaRoundTrip() throws {
        let playlist = try MediaPlaylist.parse(Self.encryptedMedia)
        #expect(
            playlist.segments.map(\.key) == [
                .aes128(uri: "../key-33.key?token={$token}"), nil, .aes128(uri: "../key-34.key?token={$token}"), nil,
            ])
        #expect(playlist.segments.allSatisfy { $0.extraTags.isEmpty })
        #expect(playlist.render() == Self.encryptedMedia)
    }

    @Test("I-FRAMES-ONLY, BYTERANGE, MAP before KEY and the MAP-change sequence round-trip")
    func iFramesAndMapUnderKeyRoundTrip() throws {
        let text = """
            #EXTM3U
            #EXT-X-VERSION:5
            #EXT-X-TARGETDURATION:2
            #EXT-X-MEDIA-SEQUENCE:7
            #EXT-X-DISCONTINUITY-SEQUENCE:0
            #EXT-X-I-FRAMES-ONLY
            #EXT-X-MAP:URI="init-0.mp4"
            #EXT-X-KEY:METHOD=AES-128,URI="key-2.key",IV=0x000000000000000000000000000001AF
            #EXT-X-BYTERANGE:4755@0
            #EXTINF:2.000,
            7.m4s
            #EXT-X-DISCONTINUITY
            #EXT-X-KEY:METHOD=NONE
            #EXT-X-MAP:URI="init-1.mp4"
            #EXT-X-KEY:METHOD=AES-128,URI="key-2.key",IV=0x000000000000000000000000000001AF
            #EXT-X-BYTERANGE:4810@0
            #EXTINF:2.000,
            8.m4s

            """
        let playlist = try MediaPlaylist.parse(text)
        #expect(playlist.iFramesOnly)
        let key = EncryptionKey.aes128(
            uri: "key-2.key", iv: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xAF])
        #expect(playlist.segments.map(\.key) == [key, key])
        #expect(playlist.segments.map(\.map?.uri) == ["init-0.mp4", "init-1.mp4"])
        #expect(playlist.render() == text)
    }

    @Test("METHOD=NONE reads as .none; SAMPLE-AES stays an extra tag as written")
    func otherMethods() throws {
        let text = """
            #EXTM3U
            #EXT-X-TARGETDURATION:2
            #EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://key",KEYFORMAT="com.apple.streamingkeydelivery"
            #EXTINF:2,
            0.ts
            #EXT-X-KEY:METHOD=NONE
            #EXTINF:2,
            1.ts
            """
        let playlist = try MediaPlaylist.parse(text)
        #expect(playlist.segments[0].key == nil)
        #expect(
            playlist.segments[0].extraTags == [
                #"#EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://key",KEYFORMAT="com.apple.streamingkeydelivery""#
            ])
        #expect(playlist.segments[1].key == EncryptionKey.none)
    }

    @Test(
        "malformed keys are refused with their line",
        arguments: [
            ("#EXT-X-KEY:METHOD=AES-128", "line 3: #EXT-X-KEY: URI is required"),
            ("#EXT-X-KEY:URI=\"k\"", "line 3: #EXT-X-KEY: METHOD is required"),
            (
                "#EXT-X-KEY:METHOD=AES-128,URI=\"k\",IV=0x01",
                "line 3: #EXT-X-KEY: IV must be 0x followed by 32 hexadecimal digits"
            ),
            ("#EXT-X-KEY:METHOD=NONE,URI=\"k\"", "line 3: #EXT-X-KEY: URI is not allowed with METHOD=NONE"),
            (
                "#EXT-X-KEY:METHOD=AES-256,URI=\"k\"",
                "line 3: #EXT-X-KEY: METHOD must be NONE, AES-128, SAMPLE-AES or SAMPLE-AES-CTR"
            ),
            (
                "#EXT-X-KEY:METHOD=AES-128,URI=\"{$nope}\"",
                "line 3: #EXT-X-KEY: URI: undefined variable reference {$nope}"
            ),
        ])
    func malformedKeys(line: String, message: String) {
        let text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n\(line)\n#EXTINF:2,\n0.ts\n"
        #expect(throws: PlaylistParseError.self) { try MediaPlaylist.parse(text) }
        do {
            _ = try MediaPlaylist.parse(text)
        } catch {
            #expect(error.description == message)
        }
    }

    @Test("an EXT-X-MAP under an AES-128 key without IV is refused")
    func mapUnderKeyWithoutIV() {
        let text = """
            #EXTM3U
            #EXT-X-TARGETDURATION:2
            #EXT-X-KEY:METHOD=AES-128,URI="k"
            #EXT-X-MAP:URI="init.mp4"
            #EXTINF:2,
            0.m4s
            """
        do {
            _ = try MediaPlaylist.parse(text)
            Issue.record("parsed")
        } catch {
            #expect(error.line == 4)
            #expect(error.message.contains("IV"))
        }
    }

    @Test("a multivariant playlist with SESSION-KEY and I-FRAME-STREAM-INF round-trips")
    func multivariantRoundTrip() throws {
        let text = """
            #EXTM3U
            #EXT-X-VERSION:8
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXT-X-DEFINE:NAME="token",VALUE="1795914000-3q2-7wAAAAC0aGxzb3Jp_w"
            #EXT-X-SESSION-KEY:METHOD=AES-128,URI="key-34.key?token={$token}"
            #EXT-X-STREAM-INF:BANDWIDTH=2612000,AVERAGE-BANDWIDTH=2180000,CODECS="avc1.64001f,mp4a.40.2",RESOLUTION=1280x720,FRAME-RATE=30.000
            hi/index.m3u8
            #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=301000,AVERAGE-BANDWIDTH=262000,CODECS="avc1.64001f",RESOLUTION=1280x720,URI="hi/iframes.m3u8"

            """
        let playlist = try MultivariantPlaylist.parse(text)
        // NAME/VALUE variables are substituted when read.
        #expect(playlist.sessionKeys == [.aes128(uri: "key-34.key?token=1795914000-3q2-7wAAAAC0aGxzb3Jp_w")])
        #expect(
            playlist.iFrameStreams == [
                IFrameStream(
                    uri: "hi/iframes.m3u8", bandwidth: 301_000, averageBandwidth: 262_000, codecs: ["avc1.64001f"],
                    resolution: Resolution(width: 1280, height: 720))
            ])
        var unsubstituted = playlist
        unsubstituted.sessionKeys = [.aes128(uri: "key-34.key?token={$token}")]
        #expect(unsubstituted.render() == text)
    }

    @Test("I-FRAME-STREAM-INF needs BANDWIDTH and URI")
    func iFrameStreamRequiredAttributes() {
        for (line, message) in [
            (#"#EXT-X-I-FRAME-STREAM-INF:URI="i.m3u8""#, "BANDWIDTH is required"),
            ("#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=10", "URI is required"),
        ] {
            do {
                _ = try MultivariantPlaylist.parse("#EXTM3U\n\(line)\n")
                Issue.record("parsed \(line)")
            } catch {
                #expect(error.message.hasSuffix(message))
            }
        }
    }

    @Test("resolvingVariables substitutes imported values into segment, MAP and KEY URIs")
    func resolvingVariables() throws {
        var playlist = try MediaPlaylist.parse(Self.encryptedMedia)
        playlist.segments[0].map = MediaInitializationSection(uri: "init-0.mp4?token={$token}")
        let resolved = try playlist.resolvingVariables(["token": "T-1"])
        #expect(
            resolved.segments.map(\.uri) == [
                "100.ts?token=T-1", "101.ts?token=T-1", "102.ts?token=T-1", "103.ts?token=T-1",
            ])
        #expect(resolved.segments[0].map?.uri == "init-0.mp4?token=T-1")
        #expect(resolved.segments[2].key == .aes128(uri: "../key-34.key?token=T-1"))
        #expect(resolved.definitions == playlist.definitions)
    }

    @Test("resolvingVariables names an unresolved reference")
    func resolvingVariablesFailure() throws {
        let playlist = try MediaPlaylist.parse(Self.encryptedMedia)
        #expect(throws: UnresolvedVariableError(name: "token", text: "100.ts?token={$token}")) {
            try playlist.resolvingVariables([:])
        }
        var undeclared = MediaPlaylist(targetDuration: 2, segments: [MediaSegment(uri: "0.ts?t={$t}", duration: 2)])
        #expect(throws: UnresolvedVariableError(name: "t", text: "0.ts?t={$t}")) {
            try undeclared.resolvingVariables(["t": "given but not declared"])
        }
        undeclared.definitions = [.queryParameter(name: "t")]
        #expect(try undeclared.resolvingVariables(["t": "x"]).segments[0].uri == "0.ts?t=x")
    }
}
