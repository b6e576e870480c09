import TestSupport
import Testing

@testable import HLSPlaylist

@Suite("Media playlist parsing", .offThePool)
struct MediaPlaylistParsingTests {
    /// `ffmpeg -f lavfi -i testsrc2=d=6 -f hls -hls_time 2 /tmp/x/index.m3u8` (ffmpeg 5.1, default GOP of 250).
    static let ffmpegDefault = """
        #EXTM3U
        #EXT-X-VERSION:3
        #EXT-X-TARGETDURATION:6
        #EXT-X-MEDIA-SEQUENCE:0
        #EXTINF:6.000000,
        index0.ts
        #EXT-X-ENDLIST

        """

    /// The same with `-g 50 -hls_flags program_date_time -hls_allow_cache 1`: PDT after EXTINF, ALLOW-CACHE.
    static let ffmpegProgramDateTime = """
        #EXTM3U
        #EXT-X-VERSION:3
        #EXT-X-ALLOW-CACHE:YES
        #EXT-X-TARGETDURATION:2
        #EXT-X-MEDIA-SEQUENCE:0
        #EXTINF:2.000000,
        #EXT-X-PROGRAM-DATE-TIME:2026-11-23T06:58:54.992+0000
        index0.ts
        #EXTINF:2.000000,
        #EXT-X-PROGRAM-DATE-TIME:2026-11-23T06:58:56.992+0000
        index1.ts
        #EXTINF:2.000000,
        #EXT-X-PROGRAM-DATE-TIME:2026-11-23T06:58:58.992+0000
        index2.ts
        #EXT-X-ENDLIST

        """

    /// The same with `-g 50 -hls_segment_type fmp4 -hls_playlist_type vod -hls_flags independent_segments`.
    static let ffmpegFragmentedMP4 = """
        #EXTM3U
        #EXT-X-VERSION:7
        #EXT-X-TARGETDURATION:2
        #EXT-X-MEDIA-SEQUENCE:0
        #EXT-X-PLAYLIST-TYPE:VOD
        #EXT-X-INDEPENDENT-SEGMENTS
        #EXT-X-MAP:URI="init.mp4"
        #EXTINF:2.000000,
        index0.m4s
        #EXTINF:2.000000,
        index1.m4s
        #EXTINF:2.000000,
        index2.m4s
        #EXT-X-ENDLIST

        """

    @Test("ffmpeg 5.1 default output")
    func ffmpegDefaultPlaylist() throws {
        let playlist = try MediaPlaylist.parse(Self.ffmpegDefault)
        #expect(
            playlist
                == MediaPlaylist(
                    targetDuration: 6, endList: true, segments: [MediaSegment(uri: "index0.ts", duration: 6)]))
    }

    @Test("ffmpeg 5.1 with PROGRAM-DATE-TIME after EXTINF and ALLOW-CACHE, with CRLF line ends")
    func ffmpegProgramDateTimePlaylist() throws {
        let base: Int64 = 1_795_417_134_992
        let expected = MediaPlaylist(
            targetDuration: 2, endList: true,
            segments: (0..<3).map { index in
                MediaSegment(
                    uri: "index\(index).ts", duration: 2,
                    programDateTime: ProgramDateTime(millisecondsSince1970: base + Int64(index) * 2000))
            })
        #expect(try MediaPlaylist.parse(Self.ffmpegProgramDateTime) == expected)
        let crlf = Self.ffmpegProgramDateTime.split(separator: "\n", omittingEmptySubsequences: false)
            .joined(separator: "\r\n")
        #expect(try MediaPlaylist.parse(crlf) == expected)
    }

    @Test("ffmpeg 5.1 fMP4 output: MAP applies to every segment")
    func ffmpegFragmentedMP4Playlist() throws {
        let playlist = try MediaPlaylist.parse(Self.ffmpegFragmentedMP4)
        let map = MediaInitializationSection(uri: "init.mp4")
        #expect(
            playlist
                == MediaPlaylist(
                    targetDuration: 2, independentSegments: true, playlistType: .vod, endList: true,
                    segments: (0..<3).map { MediaSegment(uri: "index\($0).m4s", duration: 2, map: map) }))
        #expect(playlist.minimumVersion == 6)
    }

    @Test("every segment tag, comments, blank lines, unknown tags and spaces")
    func everyTag() throws {
        let text = """
            #EXTM3U
            # a comment

            #EXT-X-TARGETDURATION:4
            #EXT-X-MEDIA-SEQUENCE:18446744073709551615
            #EXT-X-DISCONTINUITY-SEQUENCE:12
            #EXT-X-PLAYLIST-TYPE:EVENT
            #EXT-X-START:TIME-OFFSET=-12
            #EXT-X-DATERANGE:ID="ad",START-DATE="2026-11-23T07:49:05.123+01:00",PLANNED-DURATION=15.5,\
            SCTE35-OUT=0xfc30,X-COUNT=-3,X-URI="https://a/b",X-BLOB=0xABC,X-MODE=FAST,X-EMPTY=""
            #EXT-X-DISCONTINUITY
            #EXT-X-MAP:URI="init.mp4",BYTERANGE="616@0"
            #EXT-X-CUE-OUT:15
            #EXT-X-BYTERANGE:1024@616
            #EXT-X-GAP
            #EXTINF:3.5,title, with comma
              seg 1.m4s  
            #EXTINF:4
            seg2.m4s
            #EXT-X-DATERANGE:ID="ad",END-DATE="2026-11-23T06:49:20.623Z",DURATION=15.5,SCTE35-IN=0x01
            #EXT-X-DATERANGE:ID="ad2",CLASS="c",START-DATE="2026-11-23T06:49:20.623Z",CUE="PRE,ONCE",END-ON-NEXT=YES
            #EXTINF:4.000,
            seg3.m4s
            #EXT-X-DATERANGE:ID="after-the-last-segment",START-DATE="2026-11-23T06:49:20.623Z"
            """
        let playlist = try MediaPlaylist.parse(text)
        let start = ProgramDateTime(millisecondsSince1970: 1_795_416_545_123)
        let map = MediaInitializationSection(uri: "init.mp4", byteRange: ByteRange(length: 616, offset: 0))
        let adOut = DateRange(
            id: "ad", startDate: start, plannedDuration: 15.5,
            clientAttributes: [
                ClientAttribute(name: "X-COUNT", value: .decimal(-3)),
                ClientAttribute(name: "X-URI", value: .quotedString("https://a/b")),
                ClientAttribute(name: "X-BLOB", value: .hexadecimal([0x0A, 0xBC])),
                ClientAttribute(name: "X-MODE", value: .enumerated("FAST")),
                ClientAttribute(name: "X-EMPTY", value: .quotedString("")),
            ], scte35Out: [0xFC, 0x30])
        let adIn = DateRange(
            id: "ad", startDate: start, endDate: start.adding(milliseconds: 15_500), duration: 15.5, scte35In: [0x01])
        let next = DateRange(
            id: "ad2", classAttribute: "c", startDate: start.adding(milliseconds: 15_500), cue: ["PRE", "ONCE"],
            endOnNext: true)
        let expected = MediaPlaylist(
            targetDuration: 4, mediaSequence: .max, discontinuitySequence: 12, playlistType: .event,
            start: StartOffset(timeOffset: -12),
            segments: [
                MediaSegment(
                    uri: "seg 1.m4s", duration: 3.5, title: "title, with comma", discontinuity: true, gap: true,
                    map: map, byteRange: ByteRange(length: 1024, offset: 616), dateRanges: [adOut],
                    extraTags: ["#EXT-X-CUE-OUT:15"]),
                MediaSegment(uri: "seg2.m4s", duration: 4, map: map),
                MediaSegment(uri: "seg3.m4s", duration: 4, map: map, dateRanges: [adIn, next]),
            ])
        #expect(playlist == expected)
    }

    @Test("EXT-X-DEFINE substitutes URI lines and quoted strings")
    func variableSubstitution() throws {
        let text = """
            #EXTM3U
            #EXT-X-VERSION:8
            #EXT-X-TARGETDURATION:2
            #EXT-X-DEFINE:NAME="host",VALUE="https://cdn.example"
            #EXT-X-DEFINE:NAME="a_b-9",VALUE="x"
            #EXT-X-DEFINE:IMPORT="token"
            #EXT-X-DEFINE:QUERYPARAM="session"
            #EXT-X-MAP:URI="{$host}/init-{$a_b-9}.mp4"
            #EXTINF:2,
            {$host}/1.m4s?t={$token}&s={$session}&literal={$}&{notvar}
            """
        let playlist = try MediaPlaylist.parse(text)
        #expect(
            playlist.definitions == [
                .value(name: "host", value: "https://cdn.example"), .value(name: "a_b-9", value: "x"),
                .import(name: "token"), .queryParameter(name: "session"),
            ])
        #expect(playlist.segments.first?.map?.uri == "https://cdn.example/init-x.mp4")
        #expect(
            playlist.segments.first?.uri == "https://cdn.example/1.m4s?t={$token}&s={$session}&literal={$}&{notvar}")
    }

    static let invalid: [(String, Int, String)] = [
        ("", 1, "the first line must be #EXTM3U"),
        ("\u{FEFF}#EXTM3U\n#EXT-X-TARGETDURATION:2\n", 1, "the first line must be #EXTM3U"),
        ("#EXTM3\n", 1, "the first line must be #EXTM3U"),
        ("garbage\n#EXTM3U\n", 1, "the first line must be #EXTM3U"),
        ("#EXTM3U\n#EXTINF:2,\na.ts\n", 0, "#EXT-X-TARGETDURATION is missing"),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n", 3, "#EXTINF without a URI line after it"),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:2\na.ts\n", 3, "URI line without a preceding #EXTINF"),
        (
            "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n#EXTINF:2,\na.ts\n", 4,
            "a second #EXTINF before the segment's URI"
        ),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-TARGETDURATION:2\n", 3, "#EXT-X-TARGETDURATION appears twice"),
        ("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-VERSION:3\n", 3, "#EXT-X-VERSION appears twice"),
        ("#EXTM3U\n#EXT-X-VERSION:three\n", 2, "#EXT-X-VERSION must be a positive integer"),
        ("#EXTM3U\n#EXTM3U\n", 2, "#EXTM3U appears twice"),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:2.5\n", 2, "#EXT-X-TARGETDURATION must be a decimal integer"),
        (
            "#EXTM3U\n#EXT-X-TARGETDURATION:99999999999999999999\n", 2,
            "#EXT-X-TARGETDURATION must be a decimal integer"
        ),
        ("#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:-1\n", 2, "#EXT-X-MEDIA-SEQUENCE must be a decimal integer"),
        ("#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:18446744073709551616\n", 2, "#EXT-X-MEDIA-SEQUENCE must be a decimal integer"),
        ("#EXTM3U\n#EXT-X-DISCONTINUITY-SEQUENCE\n", 2, "#EXT-X-DISCONTINUITY-SEQUENCE must be a decimal integer"),
        ("#EXTM3U\n#EXT-X-PLAYLIST-TYPE:LIVE\n", 2, "#EXT-X-PLAYLIST-TYPE must be EVENT or VOD"),
        (
            "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:-2,\na.ts\n", 3,
            "#EXTINF duration must be a decimal number >= 0"
        ),
        (
            "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:abc,\na.ts\n", 3,
            "#EXTINF duration must be a decimal number >= 0"
        ),
        (
            "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:1e3,\na.ts\n", 3,
            "#EXTINF duration must be a decimal number >= 0"
        ),
        (
            "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:99999999999999999999999,\na.ts\n", 3,
            "#EXTINF duration 99999999999999999999999 is longer than any segment can be"
        ),
        (
            "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:nan,\na.ts\n", 3,
            "#EXTINF duration must be a decimal number >= 0"
        ),
        (
            "#EXTM3U\n#EXT-X-PROGRAM-DATE-TIME:2026-02-30T00:00:00Z\n", 2,
            "#EXT-X-PROGRAM-DATE-TIME is not a valid date-time"
        ),
        ("#EXTM3U\n#EXT-X-BYTERANGE:10@\n", 2, "#EXT-X-BYTERANGE must be <length>[@<offset>]"),
        ("#EXTM3U\n#EXT-X-BYTERANGE:@10\n", 2, "#EXT-X-BYTERANGE must be <length>[@<offset>]"),
        ("#EXTM3U\n#EXT-X-MAP:URI=init.mp4\n", 2, "#EXT-X-MAP: URI must be a quoted string"),
        ("#EXTM3U\n#EXT-X-MAP:BYTERANGE=\"1@0\"\n", 2, "#EXT-X-MAP: URI is required"),
        ("#EXTM3U\n#EXT-X-MAP:URI=\"i\",BYTERANGE=\"x\"\n", 2, "#EXT-X-MAP: BYTERANGE must be \"<length>[@<offset>]\""),
        ("#EXTM3U\n#EXT-X-MAP\n", 2, "#EXT-X-MAP needs an attribute list"),
        ("#EXTM3U\n#EXT-X-MAP:URI=\"a\",URI=\"b\"\n", 2, "#EXT-X-MAP: attribute URI appears twice"),
        ("#EXTM3U\n#EXT-X-MAP:URI=\"init.mp4\n", 2, "#EXT-X-MAP: unterminated quoted string in URI"),
        ("#EXTM3U\n#EXT-X-MAP:URI =\"a\"\n", 2, "#EXT-X-MAP: whitespace after attribute name URI"),
        (
            "#EXTM3U\n#EXT-X-MAP:URI= \"a\"\n", 2,
            "#EXT-X-MAP: invalid character in value of URI (whitespace or quote)"
        ),
        ("#EXTM3U\n#EXT-X-MAP:URI=\"a\",\n", 2, "#EXT-X-MAP: attribute list ends with ','"),
        ("#EXTM3U\n#EXT-X-MAP:URI=\"a\"x\n", 2, "#EXT-X-MAP: expected ',' after the value of URI"),
        ("#EXTM3U\n#EXT-X-MAP:uri=\"a\"\n", 2, "#EXT-X-MAP: missing attribute name at offset 0"),
        ("#EXTM3U\n#EXT-X-DATERANGE:ID=\"a\"\n", 2, "#EXT-X-DATERANGE: START-DATE is required"),
        ("#EXTM3U\n#EXT-X-DATERANGE:START-DATE=\"2026-11-23T06:49:05Z\"\n", 2, "#EXT-X-DATERANGE: ID is required"),
        (
            "#EXTM3U\n#EXT-X-DATERANGE:ID=\"a\",START-DATE=\"yesterday\"\n", 2,
            "#EXT-X-DATERANGE: START-DATE is not a valid date-time"
        ),
        (
            "#EXTM3U\n#EXT-X-DATERANGE:ID=\"a\",START-DATE=\"2026-11-23T06:49:05Z\",DURATION=-1\n", 2,
            "#EXT-X-DATERANGE: DURATION must be a decimal number >= 0"
        ),
        (
            "#EXTM3U\n#EXT-X-DATERANGE:ID=\"a\",START-DATE=\"2026-11-23T06:49:05Z\",SCTE35-OUT=FC\n", 2,
            "#EXT-X-DATERANGE: SCTE35-OUT must be 0x + hex digits"
        ),
        (
            "#EXTM3U\n#EXT-X-DATERANGE:ID=\"a\",START-DATE=\"2026-11-23T06:49:05Z\",END-ON-NEXT=NO\n", 2,
            "#EXT-X-DATERANGE: END-ON-NEXT must be YES"
        ),
        (
            "#EXTM3U\n#EXT-X-DATERANGE:ID=\"a\",START-DATE=\"2026-11-23T06:49:05Z\",END-ON-NEXT=\"YES\"\n", 2,
            "#EXT-X-DATERANGE: END-ON-NEXT must not be quoted"
        ),
        (
            "#EXTM3U\n#EXT-X-DATERANGE:ID=\"a\",ID=\"b\",START-DATE=\"2026-11-23T06:49:05Z\"\n", 2,
            "#EXT-X-DATERANGE: attribute ID appears twice"
        ),
        ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\na.m3u8\n", 2, "#EXT-X-STREAM-INF belongs in a multivariant playlist"),
        (
            "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n{$missing}.ts\n", 4,
            "undefined variable reference {$missing}"
        ),
        ("#EXTM3U\n#EXT-X-MAP:URI=\"{$x}\"\n", 2, "#EXT-X-MAP: URI: undefined variable reference {$x}"),
        (
            "#EXTM3U\n#EXT-X-MAP:URI=\"{$x}\"\n#EXT-X-DEFINE:NAME=\"x\",VALUE=\"y\"\n", 2,
            "#EXT-X-MAP: URI: undefined variable reference {$x}"
        ),
        ("#EXTM3U\n#EXT-X-DEFINE:NAME=\"x\"\n", 2, "#EXT-X-DEFINE: NAME needs a quoted VALUE"),
        (
            "#EXTM3U\n#EXT-X-DEFINE:NAME=\"x\",IMPORT=\"y\"\n", 2,
            "#EXT-X-DEFINE: needs exactly one of NAME, IMPORT, QUERYPARAM"
        ),
        ("#EXTM3U\n#EXT-X-DEFINE:VALUE=\"y\"\n", 2, "#EXT-X-DEFINE: needs exactly one of NAME, IMPORT, QUERYPARAM"),
        (
            "#EXTM3U\n#EXT-X-DEFINE:NAME=\"a.b\",VALUE=\"y\"\n", 2,
            "#EXT-X-DEFINE: variable name \"a.b\" is not [A-Za-z0-9_-]+"
        ),
        (
            "#EXTM3U\n#EXT-X-DEFINE:NAME=\"x\",VALUE=\"1\"\n#EXT-X-DEFINE:IMPORT=\"x\"\n", 3,
            "#EXT-X-DEFINE: variable x is defined twice"
        ),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:2\tx\n", 2, "control character 0x9"),
        ("#EXTM3U\n#EXT-X-TARGETDURATION:2\r#EXTINF:2,\n", 2, "a CR not followed by LF"),
        ("#EXTM3U\na\u{0}b\n", 2, "control character 0x0"),
        ("#EXTM3U\na\u{85}b\n", 2, "C1 control character"),
        ("#EXTM3U\n#EXT-X-START:PRECISE=YES\n", 2, "#EXT-X-START: TIME-OFFSET is required"),
        ("#EXTM3U\n#EXT-X-START:TIME-OFFSET=ten\n", 2, "#EXT-X-START: TIME-OFFSET must be a decimal number"),
        ("#EXTM3U\n#EXT-X-START:TIME-OFFSET=1,PRECISE=MAYBE\n", 2, "#EXT-X-START: PRECISE must be YES or NO"),
        ("#EXTM3U\n#EXT-X-START:TIME-OFFSET=1\n#EXT-X-START:TIME-OFFSET=2\n", 3, "#EXT-X-START appears twice"),
    ]

    @Test("invalid playlists fail with the line and the reason", arguments: invalid)
    func invalidPlaylists(text: String, line: Int, message: String) {
        #expect(throws: PlaylistParseError(line: line, message: message)) { try MediaPlaylist.parse(text) }
    }

    @Test("size guards: 16 MiB input, 64 KiB line")
    func sizeGuards() throws {
        let longLine = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n" + String(repeating: "a", count: 64 * 1024 + 1)
        #expect(throws: PlaylistParseError(line: 4, message: "line longer than 64 KiB")) {
            try MediaPlaylist.parse(longLine)
        }
        let justFits = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n" + String(repeating: "a", count: 64 * 1024)
        #expect(try MediaPlaylist.parse(justFits).segments.first?.uri.utf8.count == 64 * 1024)
        let huge = "#EXTM3U\n" + String(repeating: "#\n", count: 8 * 1024 * 1024)
        #expect(throws: PlaylistParseError(line: 0, message: "playlist larger than 16 MiB")) {
            try MediaPlaylist.parse(huge)
        }
    }

    @Test("substitution cannot blow up a line past 64 KiB")
    func substitutionBomb() {
        let value = String(repeating: "v", count: 60_000)
        let text =
            "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-DEFINE:NAME=\"v\",VALUE=\"\(value)\"\n#EXTINF:2,\n"
            + String(repeating: "{$v}", count: 1000)
        #expect(throws: PlaylistParseError(line: 5, message: "variable substitution result longer than 64 KiB")) {
            try MediaPlaylist.parse(text)
        }
    }

    @Test("truncations of a valid playlist never crash and fail where a URI is missing")
    func truncations() {
        let text = MediaPlaylistRoundTripTests.playlists[2].render()
        var failures = 0
        for length in 0...text.utf8.count {
            let prefix = String(decoding: text.utf8.prefix(length), as: UTF8.self)
            do {
                _ = try MediaPlaylist.parse(prefix)
            } catch {
                failures += 1
                #expect(error.line >= 0)
            }
        }
        #expect(failures > 0)
    }

    @Test("garbage never crashes")
    func garbage() {
        var generator = SplitMix64(seed: 0x5EED)
        let alphabet = Array("#EXTM3U-:=,\"@{$}0123456789.xXABZT\n\r ,abc\u{FEFF}é")
        let fragments = [
            "#EXTM3U\n", "#EXTINF:", "#EXT-X-DATERANGE:", "ID=\"", "START-DATE=\"2026-11-23T06:49:05Z\"", ",",
            "#EXT-X-MAP:URI=\"", "#EXT-X-DEFINE:NAME=\"a\",VALUE=\"", "{$a}", "\n", "#EXT-X-TARGETDURATION:2\n",
            "X-A=0x", "#EXT-X-BYTERANGE:", "@", "#EXT-X-STREAM-INF:BANDWIDTH=", "#EXT-X-MEDIA:TYPE=AUDIO",
        ]
        for _ in 0..<3000 {
            var text = generator.next() % 2 == 0 ? "#EXTM3U\n" : ""
            for _ in 0..<(generator.next() % 40) {
                if generator.next() % 3 == 0 {
                    text.append(alphabet[Int(generator.next() % UInt64(alphabet.count))])
                } else {
                    text += fragments[Int(generator.next() % UInt64(fragments.count))]
                }
            }
            _ = try? MediaPlaylist.parse(text)
            _ = try? MultivariantPlaylist.parse(text)
            _ = try? AttributeList.parse(text)
        }
    }

    @Test("error description carries the line")
    func errorDescription() {
        #expect(PlaylistParseError(line: 4, message: "boom").description == "line 4: boom")
        #expect(PlaylistParseError(line: 0, message: "boom").description == "boom")
    }
}

