import Foundation
import TestSupport
import Testing

extension EndToEnd {
    /// The checker the protected-stream tests apply to every playlist they fetch: it passes the design's worked
    /// example (docs/design/iframes-define-aes-design.md section 7) and finds each kind of fault rules 30, 33 and 36
    /// name.
    @Suite("End to end: the rules 30/33/36 checker itself", .offThePool)
    struct ProtectedPlaylistRulesTests {
        static let token = "1795914000-3q2-7wAAAAC0aGxzb3Jp_w"
        static let multivariant = """
            #EXTM3U
            #EXT-X-VERSION:8
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXT-X-DEFINE:NAME="token",VALUE="\(token)"
            #EXT-X-SESSION-KEY:METHOD=AES-128,URI="key-34.key?token={$token}"
            #EXT-X-STREAM-INF:BANDWIDTH=2612000,CODECS="avc1.64001f,mp4a.40.2",RESOLUTION=1280x720
            hi/index.m3u8
            #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=301000,CODECS="avc1.64001f",RESOLUTION=1280x720,URI="hi/iframes.m3u8"

            """
        static let media = """
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

            """
        static let iFrames = """
            #EXTM3U
            #EXT-X-VERSION:8
            #EXT-X-TARGETDURATION:2
            #EXT-X-MEDIA-SEQUENCE:100
            #EXT-X-I-FRAMES-ONLY
            #EXT-X-DEFINE:IMPORT="token"
            #EXT-X-KEY:METHOD=AES-128,URI="../key-33.key?token={$token}"
            #EXTINF:2.000,
            iframe-100.ts?token={$token}

            """

        static func check(multivariant: String = multivariant, media: [(String, String)]) -> [String] {
            let rules = ProtectedPlaylistRules()
            rules.multivariant(path: "/live/news/index.m3u8?token=\(token)", text: multivariant)
            for (path, text) in media { rules.media(path: path, text: text, imports: ["token": token]) }
            return rules.finish()
        }

        @Test("the worked example passes; the reader sees MSNs, keys in force and the GAP")
        func workedExamplePasses() throws {
            let violations = Self.check(
                media: [("/live/news/hi/index.m3u8", Self.media), ("/live/news/hi/iframes.m3u8", Self.iFrames)])
            #expect(violations.isEmpty, "\(violations)")
            let playlist = try MediaPlaylistText(Self.media)
            #expect(playlist.entries.map(\.msn) == [100, 101, 102])
            #expect(playlist.entries.map(\.gap) == [false, true, false])
            #expect(
                playlist.entries.map(\.keyURI) == [
                    "../key-33.key?token={$token}", "../key-33.key?token={$token}", "../key-34.key?token={$token}",
                ])
            #expect(
                PlaylistURL.resolve(
                    playlist.entries[2].keyURI!, against: "/live/news/hi/index.m3u8",
                    variables: ["token": Self.token]) == "/live/news/key-34.key?token=\(Self.token)")
        }

        @Test("IMPORT in a multivariant, an undefined reference, a low version, QUERYPARAM without the query: rule 30")
        func defineFaults() {
            let importing = Self.multivariant.replacingOccurrences(
                of: #"NAME="token",VALUE="\#(Self.token)""#, with: #"IMPORT="token""#)
            #expect(Self.check(multivariant: importing, media: []).contains { $0.contains("IMPORT in a multivariant") })
            let undefined = Self.media.replacingOccurrences(of: "102.ts?token={$token}", with: "102.ts?t={$other}")
            #expect(Self.check(media: [("/live/news/hi/index.m3u8", undefined)]).contains { $0.contains("{$other}") })
            let old = Self.media.replacingOccurrences(of: "#EXT-X-VERSION:8", with: "#EXT-X-VERSION:7")
            #expect(Self.check(media: [("/live/news/hi/index.m3u8", old)]).contains { $0.contains("needs version 8") })
            let query = Self.media.replacingOccurrences(of: #"IMPORT="token""#, with: #"QUERYPARAM="token""#)
                .replacingOccurrences(of: "#EXT-X-VERSION:8", with: "#EXT-X-VERSION:11")
            #expect(
                Self.check(media: [("/live/news/hi/index.m3u8", query)]).contains { $0.contains("no such query") })
            #expect(Self.check(media: [("/live/news/hi/index.m3u8?token=\(Self.token)", query)]).isEmpty)
        }

        @Test("a KEY removed while its segment is listed, a KEY without URI, a SESSION-KEY with no KEY: rule 33")
        func keyFaults() {
            // The next reload drops MSN 100 and with it the only KEY above 101, which then looks clear.
            let dropped = """
                #EXTM3U
                #EXT-X-VERSION:8
                #EXT-X-TARGETDURATION:2
                #EXT-X-MEDIA-SEQUENCE:101
                #EXT-X-DEFINE:IMPORT="token"
                #EXT-X-GAP
                #EXTINF:2.000,
                101.ts?token={$token}
                #EXT-X-KEY:METHOD=AES-128,URI="../key-34.key?token={$token}"
                #EXTINF:2.000,
                102.ts?token={$token}

                """
            let violations = Self.check(
                media: [("/live/news/hi/index.m3u8", Self.media), ("/live/news/hi/index.m3u8", dropped)])
            #expect(violations.contains { $0.contains("MSN 101 was listed under key") }, "\(violations)")
            let noURI = Self.media.replacingOccurrences(
                of: #"#EXT-X-KEY:METHOD=AES-128,URI="../key-34.key?token={$token}""#, with: "#EXT-X-KEY:METHOD=AES-128")
            #expect(Self.check(media: [("/live/news/hi/index.m3u8", noURI)]).contains { $0.contains("without URI") })
            let session = Self.multivariant.replacingOccurrences(of: "key-34.key", with: "key-35.key")
            #expect(
                Self.check(multivariant: session, media: [("/live/news/hi/index.m3u8", Self.media)])
                    .contains { $0.contains("matches no EXT-X-KEY") })
        }

        @Test("an I-frame stream without BANDWIDTH, or whose playlist lacks I-FRAMES-ONLY: rule 36")
        func iFrameFaults() {
            let noBandwidth = Self.multivariant.replacingOccurrences(of: "BANDWIDTH=301000,", with: "")
            #expect(
                Self.check(multivariant: noBandwidth, media: []).contains { $0.contains("without a BANDWIDTH") })
            let notIFrames = Self.iFrames.replacingOccurrences(of: "#EXT-X-I-FRAMES-ONLY\n", with: "")
            #expect(
                Self.check(media: [
                    ("/live/news/hi/index.m3u8", Self.media), ("/live/news/hi/iframes.m3u8", notIFrames),
                ])
                .contains { $0.contains("no EXT-X-I-FRAMES-ONLY") })
        }
    }
}
