import TestSupport
import Testing

@testable import HLSPlaylist

@Suite("Media playlist rendering", .offThePool)
struct MediaPlaylistRenderingTests {
    static let start = ProgramDateTime(millisecondsSince1970: 1_795_416_545_123)

    @Test("live MPEG-TS playlist, byte for byte")
    func liveTransportStream() {
        let playlist = MediaPlaylist(
            targetDuration: 2, mediaSequence: 1041, discontinuitySequence: 3,
            segments: [
                MediaSegment(uri: "1041.ts", duration: 2, programDateTime: Self.start),
                MediaSegment(uri: "1042.ts", duration: 2.002),
                MediaSegment(uri: "1043.ts", duration: 1.9995),
            ])
        #expect(
            playlist.render() == """
                #EXTM3U
                #EXT-X-VERSION:3
                #EXT-X-TARGETDURATION:2
                #EXT-X-MEDIA-SEQUENCE:1041
                #EXT-X-DISCONTINUITY-SEQUENCE:3
                #EXT-X-PROGRAM-DATE-TIME:2026-11-23T06:49:05.123Z
                #EXTINF:2.000,
                1041.ts
                #EXTINF:2.002,
                1042.ts
                #EXTINF:2.000,
                1043.ts

                """)
    }

    @Test("fMP4 playlist: MAP on the first segment and on every change")
    func fragmentedMP4() {
        let first = MediaInitializationSection(uri: "init-0.mp4")
        let second = MediaInitializationSection(uri: "init-1.mp4", byteRange: ByteRange(length: 720, offset: 0))
        let playlist = MediaPlaylist(
            targetDuration: 4, mediaSequence: 7, independentSegments: true, playlistType: .event, endList: true,
            segments: [
                MediaSegment(uri: "7.m4s", duration: 4, map: first),
                MediaSegment(uri: "8.m4s", duration: 4, map: first),
                MediaSegment(uri: "9.m4s", duration: 3.5, discontinuity: true, map: second),
                MediaSegment(uri: "10.m4s", duration: 4, map: second),
                MediaSegment(uri: "11.m4s", duration: 4, map: first),
            ])
        #expect(
            playlist.render() == """
                #EXTM3U
                #EXT-X-VERSION:6
                #EXT-X-TARGETDURATION:4
                #EXT-X-MEDIA-SEQUENCE:7
                #EXT-X-DISCONTINUITY-SEQUENCE:0
                #EXT-X-PLAYLIST-TYPE:EVENT
                #EXT-X-INDEPENDENT-SEGMENTS
                #EXT-X-MAP:URI="init-0.mp4"
                #EXTINF:4.000,
                7.m4s
                #EXTINF:4.000,
                8.m4s
                #EXT-X-DISCONTINUITY
                #EXT-X-MAP:URI="init-1.mp4",BYTERANGE="720@0"
                #EXTINF:3.500,
                9.m4s
                #EXTINF:4.000,
                10.m4s
                #EXT-X-MAP:URI="init-0.mp4"
                #EXTINF:4.000,
                11.m4s
                #EXT-X-ENDLIST

                """)
    }

    @Test("GAP, DISCONTINUITY, PDT, DATERANGE, extra tags, BYTERANGE and DEFINE in their order")
    func everySegmentTag() {
        let adBreak = DateRange(
            id: "ad-1", classAttribute: "com.example.ad", startDate: Self.start.adding(milliseconds: 4000),
            plannedDuration: 30, scte35Out: [0xFC, 0x30, 0x11])
        let playlist = MediaPlaylist(
            targetDuration: 2, mediaSequence: 100, discontinuitySequence: 1,
            definitions: [.value(name: "base", value: "https://cdn.example")],
            segments: [
                MediaSegment(uri: "100.ts", duration: 2, title: "first", programDateTime: Self.start),
                MediaSegment(
                    uri: "101.ts", duration: 2, gap: true, programDateTime: Self.start.adding(milliseconds: 2000)),
                MediaSegment(
                    uri: "102.ts", duration: 2, discontinuity: true,
                    programDateTime: Self.start.adding(milliseconds: 4000),
                    byteRange: ByteRange(length: 1000, offset: 188),
                    dateRanges: [adBreak], extraTags: ["#EXT-X-CUE-OUT:30", "#EXT-OATCLS-SCTE35:/DAlAAAA"]),
                MediaSegment(uri: "103.ts", duration: 2, byteRange: ByteRange(length: 1000)),
            ])
        #expect(
            playlist.render() == """
                #EXTM3U
                #EXT-X-VERSION:8
                #EXT-X-TARGETDURATION:2
                #EXT-X-MEDIA-SEQUENCE:100
                #EXT-X-DISCONTINUITY-SEQUENCE:1
                #EXT-X-DEFINE:NAME="base",VALUE="https://cdn.example"
                #EXT-X-PROGRAM-DATE-TIME:2026-11-23T06:49:05.123Z
                #EXTINF:2.000,first
                100.ts
                #EXT-X-PROGRAM-DATE-TIME:2026-11-23T06:49:07.123Z
                #EXT-X-GAP
                #EXTINF:2.000,
                101.ts
                #EXT-X-DATERANGE:ID="ad-1",CLASS="com.example.ad",START-DATE="2026-11-23T06:49:09.123Z",\
                PLANNED-DURATION=30,SCTE35-OUT=0xFC3011
                #EXT-X-DISCONTINUITY
                #EXT-X-PROGRAM-DATE-TIME:2026-11-23T06:49:09.123Z
                #EXT-X-CUE-OUT:30
                #EXT-OATCLS-SCTE35:/DAlAAAA
                #EXT-X-BYTERANGE:1000@188
                #EXTINF:2.000,
                102.ts
                #EXT-X-BYTERANGE:1000
                #EXTINF:2.000,
                103.ts

                """)
    }

    @Test("an empty playlist still has its header")
    func emptyPlaylist() {
        #expect(
            MediaPlaylist(targetDuration: 6).render() == """
                #EXTM3U
                #EXT-X-VERSION:3
                #EXT-X-TARGETDURATION:6
                #EXT-X-MEDIA-SEQUENCE:0
                #EXT-X-DISCONTINUITY-SEQUENCE:0

                """)
    }

    @Test("EXT-X-START after the playlist type: signed offset with three decimals, PRECISE always written")
    func startOffset() throws {
        var playlist = MediaPlaylist(
            targetDuration: 2, mediaSequence: 40, independentSegments: true, playlistType: .event,
            start: StartOffset(timeOffset: 3.25, precise: true))
        #expect(
            playlist.render() == """
                #EXTM3U
                #EXT-X-VERSION:3
                #EXT-X-TARGETDURATION:2
                #EXT-X-MEDIA-SEQUENCE:40
                #EXT-X-DISCONTINUITY-SEQUENCE:0
                #EXT-X-PLAYLIST-TYPE:EVENT
                #EXT-X-INDEPENDENT-SEGMENTS
                #EXT-X-START:TIME-OFFSET=3.250,PRECISE=YES

                """)
        playlist.start = StartOffset(timeOffset: -12)
        #expect(playlist.render().contains("\n#EXT-X-START:TIME-OFFSET=-12.000,PRECISE=NO\n"))
        let parsed = try MediaPlaylist.parse("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-START:TIME-OFFSET=-0.5\n")
        #expect(parsed.start == StartOffset(timeOffset: -0.5, precise: false))
    }

    @Test(
        "minimum version table",
        arguments: [
            (MediaPlaylist(targetDuration: 2), 3),
            (MediaPlaylist(targetDuration: 2, segments: [MediaSegment(uri: "a.ts", duration: 2)]), 3),
            (
                MediaPlaylist(
                    targetDuration: 2, playlistType: .vod, endList: true,
                    segments: [
                        MediaSegment(
                            uri: "a.ts", duration: 2, discontinuity: true, gap: true,
                            programDateTime: ProgramDateTime(millisecondsSince1970: 0),
                            dateRanges: [DateRange(id: "x", startDate: ProgramDateTime(millisecondsSince1970: 0))])
                    ]), 3
            ),
            (
                MediaPlaylist(
                    targetDuration: 2,
                    segments: [MediaSegment(uri: "a.ts", duration: 2, byteRange: ByteRange(length: 1))]),
                4
            ),
            (
                MediaPlaylist(
                    targetDuration: 2,
                    segments: [MediaSegment(uri: "a.m4s", duration: 2, map: MediaInitializationSection(uri: "i.mp4"))]),
                6
            ),
            (
                MediaPlaylist(
                    targetDuration: 2,
                    segments: [
                        MediaSegment(
                            uri: "a.m4s", duration: 2,
                            map: MediaInitializationSection(uri: "i.mp4", byteRange: ByteRange(length: 9, offset: 0)),
                            byteRange: ByteRange(length: 100, offset: 9))
                    ]), 6
            ),
            (MediaPlaylist(targetDuration: 2, definitions: [.value(name: "a", value: "b")]), 8),
            (MediaPlaylist(targetDuration: 2, definitions: [.import(name: "a")]), 8),
            (
                MediaPlaylist(
                    targetDuration: 2, definitions: [.value(name: "a", value: "b"), .queryParameter(name: "token")]),
                11
            ),
        ])
    func minimumVersion(playlist: MediaPlaylist, expected: Int) {
        #expect(playlist.minimumVersion == expected)
        #expect(playlist.render().contains("#EXT-X-VERSION:\(expected)\n"))
    }

    @Test(
        "EXTINF has exactly three decimals",
        arguments: [
            (2.0, "2.000"), (2.002, "2.002"), (1.9995, "2.000"), (0.0004, "0.000"), (10.01, "10.010"),
            (6.006, "6.006"), (0.5, "0.500"), (3600.0, "3600.000"),
        ])
    func extinfDecimals(duration: Double, expected: String) {
        let text = MediaPlaylist(targetDuration: 2, segments: [MediaSegment(uri: "a.ts", duration: duration)]).render()
        #expect(text.contains("#EXTINF:\(expected),\na.ts\n"))
    }
}

@Suite("Number formatting", .offThePool)
struct NumberFormattingTests {
    @Test(
        "shortest decimal keeps millisecond precision",
        arguments: [
            (30.0, "30"), (30.5, "30.5"), (2.002, "2.002"), (0.25, "0.25"), (0.0, "0"), (-1.5, "-1.5"),
            (59.94, "59.94"), (0.0004, "0"), (0.0005, "0.001"), (1e15, "1000000000000000"), (1.23456, "1.235"),
            (.nan, "0"), (-0.0, "0"),
        ])
    func shortest(value: Double, expected: String) {
        #expect(NumberFormatting.shortest(value) == expected)
    }

    @Test("fixed3", arguments: [(29.97, "29.970"), (25.0, "25.000"), (59.94006, "59.940"), (-0.5, "-0.500")])
    func fixed3(value: Double, expected: String) {
        #expect(NumberFormatting.fixed3(value) == expected)
    }

    @Test("infinite values are clamped, never trap")
    func infinite() {
        #expect(NumberFormatting.shortest(.infinity) == "9000000000000000")
        #expect(NumberFormatting.fixed3(-.infinity) == "-9000000000000000.000")
    }

    @Test("hexadecimal is 0x plus upper case")
    func hexadecimal() {
        #expect(NumberFormatting.hexadecimal([0x00, 0xAB, 0x0F, 0xFC]) == "0x00AB0FFC")
        #expect(NumberFormatting.hexadecimal([]) == "0x")
    }
}
