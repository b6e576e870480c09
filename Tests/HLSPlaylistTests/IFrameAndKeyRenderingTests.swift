import TestSupport
import Testing

@testable import HLSPlaylist

@Suite("I-frame, EXT-X-KEY and SESSION-KEY rendering", .offThePool)
struct IFrameAndKeyRenderingTests {
    static let token = "1795914000-3q2-7wAAAAC0aGxzb3Jp_w"
    /// 2026-11-24T00:40:00.000Z.
    static let start = ProgramDateTime(millisecondsSince1970: 1_795_480_800_000)

    static func key(_ period: Int) -> EncryptionKey {
        .aes128(uri: "../key-\(period).key?token={$token}")
    }

    /// The worked example's window: 100..103, 101 a GAP, 103 after the feed came back; `uri` names each entry.
    static func entries(uri: (UInt64) -> String, keys: Bool) -> [MediaSegment] {
        (UInt64(100)...103).map { msn in
            var segment = MediaSegment(
                uri: uri(msn), duration: msn == 103 ? 1.96 : 2, discontinuity: msn == 103, gap: msn == 101,
                programDateTime: start.adding(milliseconds: Int64(msn - 100) * 2000))
            if keys, msn == 100 { segment.key = key(33) }
            if keys, msn == 102 { segment.key = key(34) }
            return segment
        }
    }

    @Test("tokenized, encrypted media playlist: KEY where the key changes, after MAP and before PDT")
    func encryptedMediaPlaylist() {
        let playlist = MediaPlaylist(
            targetDuration: 2, mediaSequence: 100, discontinuitySequence: 4, independentSegments: true,
            definitions: [.import(name: "token")],
            segments: Self.entries(uri: { "\($0).ts?token={$token}" }, keys: true))
        #expect(
            playlist.render() == """
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

                """)
    }

    @Test("encrypted I-frame playlist: I-FRAMES-ONLY after INDEPENDENT-SEGMENTS, before DEFINE; own resources")
    func encryptedIFramePlaylist() {
        var playlist = MediaPlaylist(
            targetDuration: 2, mediaSequence: 100, discontinuitySequence: 4, independentSegments: true,
            definitions: [.import(name: "token")],
            segments: Self.entries(
                uri: { $0 == 101 ? "101.ts?token={$token}" : "iframe-\($0).ts?token={$token}" }, keys: true))
        playlist.iFramesOnly = true
        #expect(
            playlist.render() == """
                #EXTM3U
                #EXT-X-VERSION:8
                #EXT-X-TARGETDURATION:2
                #EXT-X-MEDIA-SEQUENCE:100
                #EXT-X-DISCONTINUITY-SEQUENCE:4
                #EXT-X-INDEPENDENT-SEGMENTS
                #EXT-X-I-FRAMES-ONLY
                #EXT-X-DEFINE:IMPORT="token"
                #EXT-X-KEY:METHOD=AES-128,URI="../key-33.key?token={$token}"
                #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:00.000Z
                #EXTINF:2.000,
                iframe-100.ts?token={$token}
                #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:02.000Z
                #EXT-X-GAP
                #EXTINF:2.000,
                101.ts?token={$token}
                #EXT-X-KEY:METHOD=AES-128,URI="../key-34.key?token={$token}"
                #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:04.000Z
                #EXTINF:2.000,
                iframe-102.ts?token={$token}
                #EXT-X-DISCONTINUITY
                #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:06.000Z
                #EXTINF:1.960,
                iframe-103.ts?token={$token}

                """)
    }

    @Test("clear I-frame playlist: version 4, BYTERANGE after PDT into the segment URLs")
    func clearIFramePlaylist() {
        var segments = Self.entries(uri: { "\($0).ts" }, keys: false)
        segments[0].byteRange = ByteRange(length: 5076, offset: 0)
        segments[2].byteRange = ByteRange(length: 5264, offset: 0)
        segments[3].byteRange = ByteRange(length: 4888, offset: 0)
        var playlist = MediaPlaylist(
            targetDuration: 2, mediaSequence: 100, discontinuitySequence: 4, independentSegments: true,
            segments: Array(segments.prefix(2)))
        playlist.iFramesOnly = true
        #expect(playlist.minimumVersion == 4)
        #expect(
            playlist.render() == """
                #EXTM3U
                #EXT-X-VERSION:4
                #EXT-X-TARGETDURATION:2
                #EXT-X-MEDIA-SEQUENCE:100
                #EXT-X-DISCONTINUITY-SEQUENCE:4
                #EXT-X-INDEPENDENT-SEGMENTS
                #EXT-X-I-FRAMES-ONLY
                #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:00.000Z
                #EXT-X-BYTERANGE:5076@0
                #EXTINF:2.000,
                100.ts
                #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:02.000Z
                #EXT-X-GAP
                #EXTINF:2.000,
                101.ts

                """)
        // A GAP entry alone (no byte range) still needs version 4 for I-FRAMES-ONLY.
        playlist.segments = [segments[1]]
        #expect(playlist.minimumVersion == 4)
    }

    @Test("fMP4 I-frame playlist: version 5, MAP written before the first KEY")
    func fragmentedIFramePlaylist() {
        let map = MediaInitializationSection(uri: "init-0.mp4")
        var first = MediaSegment(uri: "iframe-7.m4s", duration: 2, map: map)
        first.key = .aes128(uri: "../key-2.key")
        var playlist = MediaPlaylist(
            targetDuration: 2, mediaSequence: 7,
            segments: [first, MediaSegment(uri: "iframe-8.m4s", duration: 2, map: map)])
        playlist.iFramesOnly = true
        #expect(
            playlist.render() == """
                #EXTM3U
                #EXT-X-VERSION:5
                #EXT-X-TARGETDURATION:2
                #EXT-X-MEDIA-SEQUENCE:7
                #EXT-X-DISCONTINUITY-SEQUENCE:0
                #EXT-X-I-FRAMES-ONLY
                #EXT-X-MAP:URI="init-0.mp4"
                #EXT-X-KEY:METHOD=AES-128,URI="../key-2.key"
                #EXTINF:2.000,
                iframe-7.m4s
                #EXTINF:2.000,
                iframe-8.m4s

                """)
        playlist.iFramesOnly = false
        #expect(playlist.minimumVersion == 6)
        playlist.definitions = [.queryParameter(name: "token")]
        #expect(playlist.minimumVersion == 11)
    }

    @Test("a MAP that changes under an AES-128 key sits between METHOD=NONE and the key stated again")
    func mapChangeUnderKey() {
        let first = MediaInitializationSection(uri: "init-0.mp4")
        let second = MediaInitializationSection(uri: "init-1.mp4")
        var segments = [
            MediaSegment(uri: "7.m4s", duration: 2, map: first),
            MediaSegment(uri: "8.m4s", duration: 2, discontinuity: true, map: second),
            MediaSegment(uri: "9.m4s", duration: 2, map: second),
            MediaSegment(uri: "10.m4s", duration: 2, discontinuity: true, map: first),
            MediaSegment(uri: "11.m4s", duration: 2, map: first),
            MediaSegment(uri: "12.m4s", duration: 2, discontinuity: true, map: second),
        ]
        segments[0].key = .aes128(uri: "key-2.key")
        segments[3].key = .aes128(uri: "key-3.key")
        segments[4].key = EncryptionKey.none
        let playlist = MediaPlaylist(targetDuration: 2, mediaSequence: 7, segments: segments)
        #expect(
            playlist.render() == """
                #EXTM3U
                #EXT-X-VERSION:6
                #EXT-X-TARGETDURATION:2
                #EXT-X-MEDIA-SEQUENCE:7
                #EXT-X-DISCONTINUITY-SEQUENCE:0
                #EXT-X-MAP:URI="init-0.mp4"
                #EXT-X-KEY:METHOD=AES-128,URI="key-2.key"
                #EXTINF:2.000,
                7.m4s
                #EXT-X-DISCONTINUITY
                #EXT-X-KEY:METHOD=NONE
                #EXT-X-MAP:URI="init-1.mp4"
                #EXT-X-KEY:METHOD=AES-128,URI="key-2.key"
                #EXTINF:2.000,
                8.m4s
                #EXTINF:2.000,
                9.m4s
                #EXT-X-DISCONTINUITY
                #EXT-X-KEY:METHOD=NONE
                #EXT-X-MAP:URI="init-0.mp4"
                #EXT-X-KEY:METHOD=AES-128,URI="key-3.key"
                #EXTINF:2.000,
                10.m4s
                #EXT-X-KEY:METHOD=NONE
                #EXTINF:2.000,
                11.m4s
                #EXT-X-DISCONTINUITY
                #EXT-X-MAP:URI="init-1.mp4"
                #EXTINF:2.000,
                12.m4s

                """)
    }

    @Test("KEY with IV: 32 hex digits, version 2 rule; METHOD=NONE for a clear key")
    func keyAttributes() {
        let iv: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xAF]
        #expect(
            EncryptionKey.aes128(uri: "k.key", iv: iv).renderedKeyTag
                == #"#EXT-X-KEY:METHOD=AES-128,URI="k.key",IV=0x000000000000000000000000000001AF"#)
        #expect(EncryptionKey.none.renderedKeyTag == "#EXT-X-KEY:METHOD=NONE")
        #expect(EncryptionKey.aes128(uri: "k.key", iv: iv).minimumVersion == 2)
        #expect(EncryptionKey.aes128(uri: "k.key").minimumVersion == 1)
        var multivariant = MultivariantPlaylist()
        multivariant.sessionKeys = [.aes128(uri: "k.key", iv: iv)]
        #expect(multivariant.minimumVersion == 2)
    }

    @Test("multivariant: SESSION-KEY after DEFINE, I-FRAME-STREAM-INF after the variants")
    func multivariant() {
        var playlist = MultivariantPlaylist(
            independentSegments: true, definitions: [.value(name: "token", value: Self.token)],
            variants: [
                VariantStream(
                    uri: "hi/index.m3u8", bandwidth: 2_612_000, averageBandwidth: 2_180_000,
                    codecs: ["avc1.64001f", "mp4a.40.2"], resolution: Resolution(width: 1280, height: 720),
                    frameRate: 30)
            ])
        playlist.sessionKeys = [.aes128(uri: "key-34.key?token={$token}")]
        playlist.iFrameStreams = [
            IFrameStream(
                uri: "hi/iframes.m3u8", bandwidth: 301_000, averageBandwidth: 262_000, codecs: ["avc1.64001f"],
                resolution: Resolution(width: 1280, height: 720))
        ]
        #expect(
            playlist.render() == """
                #EXTM3U
                #EXT-X-VERSION:8
                #EXT-X-INDEPENDENT-SEGMENTS
                #EXT-X-DEFINE:NAME="token",VALUE="1795914000-3q2-7wAAAAC0aGxzb3Jp_w"
                #EXT-X-SESSION-KEY:METHOD=AES-128,URI="key-34.key?token={$token}"
                #EXT-X-STREAM-INF:BANDWIDTH=2612000,AVERAGE-BANDWIDTH=2180000,CODECS="avc1.64001f,mp4a.40.2",RESOLUTION=1280x720,FRAME-RATE=30.000
                hi/index.m3u8
                #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=301000,AVERAGE-BANDWIDTH=262000,CODECS="avc1.64001f",RESOLUTION=1280x720,URI="hi/iframes.m3u8"

                """)
    }

    @Test("multivariant: SESSION-KEY comes before EXT-X-MEDIA; a bare I-frame stream has BANDWIDTH and URI only")
    func multivariantWithRenditions() {
        var playlist = MultivariantPlaylist(
            renditions: [Rendition(type: .audio, groupID: "aud", name: "en", uri: "en/index.m3u8")],
            variants: [VariantStream(uri: "hi/index.m3u8", bandwidth: 1000, audioGroup: "aud")])
        playlist.sessionKeys = [.aes128(uri: "key-1.key")]
        playlist.iFrameStreams = [IFrameStream(uri: "hi/iframes.m3u8", bandwidth: 100)]
        #expect(
            playlist.render() == """
                #EXTM3U
                #EXT-X-SESSION-KEY:METHOD=AES-128,URI="key-1.key"
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="en",DEFAULT=NO,AUTOSELECT=NO,URI="en/index.m3u8"
                #EXT-X-STREAM-INF:BANDWIDTH=1000,AUDIO="aud"
                hi/index.m3u8
                #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=100,URI="hi/iframes.m3u8"

                """)
    }
}
