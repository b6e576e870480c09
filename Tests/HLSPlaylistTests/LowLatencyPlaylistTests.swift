import TestSupport
import Testing

@testable import HLSPlaylist

/// The worked example of docs/design/low-latency-design.md section 2: channel `sport`, rendition `720p`, TD 2, PT 0.4.
enum WorkedExample {
    static let base = ProgramDateTime(iso8601: "2026-11-24T01:00:00.000Z")!

    static func parts(_ msn: Int, count: Int) -> [PartialSegment] {
        (0..<count).map { PartialSegment(duration: 0.4, uri: "\(msn).\($0).ts", independent: $0 == 0) }
    }

    static var playlist: MediaPlaylist {
        var playlist = MediaPlaylist(
            targetDuration: 2, mediaSequence: 1000,
            segments: (0..<8).map {
                MediaSegment(
                    uri: "\(1000 + $0).ts", duration: 2, programDateTime: base.adding(milliseconds: Int64($0) * 2000))
            })
        playlist.segments[2].dateRanges = [
            DateRange(
                id: "ad-7", classAttribute: "com.example.ad", startDate: base.adding(milliseconds: 5000),
                plannedDuration: 30)
        ]
        for index in 5..<8 { playlist.segments[index].parts = parts(1000 + index, count: 5) }
        playlist.serverControl = ServerControl(
            canBlockReload: true, canSkipUntil: 12, canSkipDateRanges: true, holdBack: 6, partHoldBack: 1.2)
        playlist.partTarget = 0.4
        var open = MediaSegment(uri: "", duration: 0, programDateTime: base.adding(milliseconds: 16_000))
        open.parts = parts(1008, count: 2)
        playlist.segmentInProgress = open
        playlist.preloadHints = [PreloadHint(type: .part, uri: "1008.2.ts")]
        playlist.renditionReports = [
            RenditionReport(uri: "../360p/index.m3u8", lastMSN: 1008, lastPart: 0),
            RenditionReport(uri: "../audio/index.m3u8", lastMSN: 1008, lastPart: 1),
        ]
        return playlist
    }

    static let header = """
        #EXTM3U
        #EXT-X-VERSION:{V}
        #EXT-X-TARGETDURATION:2
        #EXT-X-MEDIA-SEQUENCE:1000
        #EXT-X-DISCONTINUITY-SEQUENCE:0
        #EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=12.000,CAN-SKIP-DATERANGES=YES,HOLD-BACK=6.000,PART-HOLD-BACK=1.200
        #EXT-X-PART-INF:PART-TARGET=0.400

        """

    static let skippedLines = """
        #EXT-X-PROGRAM-DATE-TIME:2026-11-24T01:00:00.000Z
        #EXTINF:2.000,
        1000.ts
        #EXT-X-PROGRAM-DATE-TIME:2026-11-24T01:00:02.000Z
        #EXTINF:2.000,
        1001.ts

        """

    // The design writes PLANNED-DURATION=30.000; the existing DATERANGE renderer writes the shortest decimal.
    static let keptLines = """
        #EXT-X-DATERANGE:ID="ad-7",CLASS="com.example.ad",START-DATE="2026-11-24T01:00:05.000Z",PLANNED-DURATION=30
        #EXT-X-PROGRAM-DATE-TIME:2026-11-24T01:00:04.000Z
        #EXTINF:2.000,
        1002.ts
        #EXT-X-PROGRAM-DATE-TIME:2026-11-24T01:00:06.000Z
        #EXTINF:2.000,
        1003.ts
        #EXT-X-PROGRAM-DATE-TIME:2026-11-24T01:00:08.000Z
        #EXTINF:2.000,
        1004.ts
        #EXT-X-PROGRAM-DATE-TIME:2026-11-24T01:00:10.000Z
        #EXT-X-PART:DURATION=0.400,URI="1005.0.ts",INDEPENDENT=YES
        #EXT-X-PART:DURATION=0.400,URI="1005.1.ts"
        #EXT-X-PART:DURATION=0.400,URI="1005.2.ts"
        #EXT-X-PART:DURATION=0.400,URI="1005.3.ts"
        #EXT-X-PART:DURATION=0.400,URI="1005.4.ts"
        #EXTINF:2.000,
        1005.ts
        #EXT-X-PROGRAM-DATE-TIME:2026-11-24T01:00:12.000Z
        #EXT-X-PART:DURATION=0.400,URI="1006.0.ts",INDEPENDENT=YES
        #EXT-X-PART:DURATION=0.400,URI="1006.1.ts"
        #EXT-X-PART:DURATION=0.400,URI="1006.2.ts"
        #EXT-X-PART:DURATION=0.400,URI="1006.3.ts"
        #EXT-X-PART:DURATION=0.400,URI="1006.4.ts"
        #EXTINF:2.000,
        1006.ts
        #EXT-X-PROGRAM-DATE-TIME:2026-11-24T01:00:14.000Z
        #EXT-X-PART:DURATION=0.400,URI="1007.0.ts",INDEPENDENT=YES
        #EXT-X-PART:DURATION=0.400,URI="1007.1.ts"
        #EXT-X-PART:DURATION=0.400,URI="1007.2.ts"
        #EXT-X-PART:DURATION=0.400,URI="1007.3.ts"
        #EXT-X-PART:DURATION=0.400,URI="1007.4.ts"
        #EXTINF:2.000,
        1007.ts
        #EXT-X-PROGRAM-DATE-TIME:2026-11-24T01:00:16.000Z
        #EXT-X-PART:DURATION=0.400,URI="1008.0.ts",INDEPENDENT=YES
        #EXT-X-PART:DURATION=0.400,URI="1008.1.ts"
        #EXT-X-PRELOAD-HINT:TYPE=PART,URI="1008.2.ts"
        #EXT-X-RENDITION-REPORT:URI="../360p/index.m3u8",LAST-MSN=1008,LAST-PART=0
        #EXT-X-RENDITION-REPORT:URI="../audio/index.m3u8",LAST-MSN=1008,LAST-PART=1

        """

    static func header(version: Int) -> String {
        header.replacingOccurrences(of: "{V}", with: "\(version)")
    }
}

extension String {
    fileprivate func replacingOccurrences(of target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}

@Suite("Low-Latency playlists: rendering, delta updates, version", .offThePool)
struct LowLatencyPlaylistTests {
    @Test func workedExampleRendersByteForByte() {
        let expected = WorkedExample.header(version: 3) + WorkedExample.skippedLines + WorkedExample.keptLines
        #expect(WorkedExample.playlist.render() == expected)
    }

    @Test func skipYESDeltaRendersByteForByte() throws {
        let delta = try #require(WorkedExample.playlist.deltaUpdate(.segments))
        #expect(delta.skip == Skip(skippedSegments: 2))
        let expected =
            WorkedExample.header(version: 9) + "#EXT-X-SKIP:SKIPPED-SEGMENTS=2\n" + WorkedExample.keptLines
        #expect(delta.render() == expected)
    }

    @Test func skipV2DeltaRendersRemovedDateRangesAndVersion10() throws {
        let delta = try #require(
            WorkedExample.playlist.deltaUpdate(.segmentsAndDateRanges, recentlyRemovedDateRanges: ["id1", "id2"]))
        let expected =
            WorkedExample.header(version: 10)
            + "#EXT-X-SKIP:SKIPPED-SEGMENTS=2,RECENTLY-REMOVED-DATERANGES=\"id1\tid2\"\n" + WorkedExample.keptLines
        #expect(delta.render() == expected)
    }

    @Test func replacingTheSkipLineByTheSkippedLinesGivesTheFullPlaylist() throws {
        let full = WorkedExample.playlist.render()
        let delta = try #require(WorkedExample.playlist.deltaUpdate(.segments)).render()
        let rebuilt =
            delta
            .replacingOccurrences(of: "#EXT-X-SKIP:SKIPPED-SEGMENTS=2\n", with: WorkedExample.skippedLines)
            .replacingOccurrences(of: "#EXT-X-VERSION:9\n", with: "#EXT-X-VERSION:3\n")
        #expect(rebuilt == full)
    }

    @Test func v2DeltaWithNothingRemovedStillRendersTheAttribute() throws {
        let delta = try #require(WorkedExample.playlist.deltaUpdate(.segmentsAndDateRanges))
        #expect(delta.render().contains("#EXT-X-SKIP:SKIPPED-SEGMENTS=2,RECENTLY-REMOVED-DATERANGES=\"\"\n"))
        #expect(delta.minimumVersion == 10)
        #expect(try MediaPlaylist.parse(delta.render()) == delta)
    }

    @Test func skipYESKeepsTheSkippedDateRangesAndV2DropsThem() throws {
        var playlist = WorkedExample.playlist
        let early = DateRange(id: "early", startDate: WorkedExample.base)
        playlist.segments[0].dateRanges = [early]
        let yes = try #require(playlist.deltaUpdate(.segments))
        #expect(yes.segments[0].uri == "1002.ts")
        #expect(yes.segments[0].dateRanges.map(\.id) == ["early", "ad-7"])
        let v2 = try #require(playlist.deltaUpdate(.segmentsAndDateRanges))
        #expect(v2.segments[0].dateRanges.map(\.id) == ["ad-7"])
        #expect(!v2.render().contains("early"))
    }

    @Test func firstKeptSegmentCarriesTheKeyInForceAndADerivedDate() throws {
        var playlist = WorkedExample.playlist
        playlist.segments[0].key = .aes128(uri: "k0.key")
        playlist.segments[1].key = .aes128(uri: "k1.key")
        playlist.segments[2].programDateTime = nil
        let delta = try #require(playlist.deltaUpdate(.segments))
        #expect(delta.segments[0].key == .aes128(uri: "k1.key"))
        #expect(delta.segments[0].programDateTime == WorkedExample.base.adding(milliseconds: 4000))
        #expect(delta.mediaSequence == 1000)
        #expect(delta.discontinuitySequence == playlist.discontinuitySequence)
    }

    @Test func boundaryCountsTheInProgressParts() throws {
        var playlist = WorkedExample.playlist
        // Without the 0.8 s of open parts the end is 16 s and the boundary 4 s: 1001 ends at 4 s, not before it.
        playlist.segmentInProgress = nil
        #expect(try #require(playlist.deltaUpdate(.segments)).skip?.skippedSegments == 1)
        playlist.segmentInProgress = WorkedExample.playlist.segmentInProgress
        #expect(try #require(playlist.deltaUpdate(.segments)).skip?.skippedSegments == 2)
    }

    @Test func noDeltaWhenNotOfferedOrNothingToSkip() {
        var playlist = WorkedExample.playlist
        playlist.serverControl?.canSkipDateRanges = false
        #expect(playlist.deltaUpdate(.segmentsAndDateRanges) == nil)
        #expect(playlist.deltaUpdate(.segments) != nil)
        playlist.serverControl?.canSkipUntil = nil
        #expect(playlist.deltaUpdate(.segments) == nil)
        playlist.serverControl?.canSkipUntil = 30
        #expect(playlist.deltaUpdate(.segments) == nil)
        #expect(WorkedExample.playlist.deltaUpdate(.segments)?.deltaUpdate(.segments) == nil)
    }

    @Test func versionRules() {
        var playlist = MediaPlaylist(targetDuration: 2, segments: [MediaSegment(uri: "0.ts", duration: 2)])
        playlist.serverControl = ServerControl(canBlockReload: true, partHoldBack: 1)
        playlist.partTarget = 0.4
        playlist.segments[0].parts = [PartialSegment(duration: 0.4, uri: "0.0.ts", gap: true)]
        playlist.preloadHints = [PreloadHint(type: .part, uri: "1.0.ts")]
        #expect(playlist.minimumVersion == 3)
        playlist.skip = Skip(skippedSegments: 1)
        #expect(playlist.minimumVersion == 9)
        playlist.skip = Skip(skippedSegments: 1, recentlyRemovedDateRanges: [])
        #expect(playlist.minimumVersion == 10)
        playlist.skip = nil
        var open = MediaSegment(uri: "", duration: 0, map: MediaInitializationSection(uri: "init-1.mp4"))
        open.parts = [PartialSegment(duration: 0.4, uri: "1.0.m4s")]
        playlist.segmentInProgress = open
        #expect(playlist.minimumVersion == 6)
    }

    @Test func partAttributesRenderInOrder() {
        var segment = MediaSegment(uri: "5.ts", duration: 1, gap: true)
        segment.parts = [
            PartialSegment(
                duration: 0.5, uri: "5.0.ts", independent: true, gap: true,
                byteRange: ByteRange(length: 10, offset: 0)),
            PartialSegment(duration: 0.5, uri: "5.1.ts", byteRange: ByteRange(length: 20)),
        ]
        var playlist = MediaPlaylist(targetDuration: 1, mediaSequence: 5, segments: [segment])
        playlist.renditionReports = [RenditionReport(uri: "../subs/index.m3u8", lastMSN: 5)]
        playlist.preloadHints = [
            PreloadHint(type: .map, uri: "init-2.mp4", byteRangeStart: 0, byteRangeLength: 700)
        ]
        let expected = """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:1
            #EXT-X-MEDIA-SEQUENCE:5
            #EXT-X-DISCONTINUITY-SEQUENCE:0
            #EXT-X-GAP
            #EXT-X-PART:DURATION=0.500,URI="5.0.ts",INDEPENDENT=YES,GAP=YES,BYTERANGE="10@0"
            #EXT-X-PART:DURATION=0.500,URI="5.1.ts",BYTERANGE="20"
            #EXTINF:1.000,
            5.ts
            #EXT-X-PRELOAD-HINT:TYPE=MAP,URI="init-2.mp4",BYTERANGE-START=0,BYTERANGE-LENGTH=700
            #EXT-X-RENDITION-REPORT:URI="../subs/index.m3u8",LAST-MSN=5

            """
        #expect(playlist.render() == expected)
    }
}

@Suite("Low-Latency playlists: parsing", .offThePool)
struct LowLatencyParsingTests {
    @Test func workedExampleAndItsDeltasRoundTrip() throws {
        let full = WorkedExample.playlist
        #expect(try MediaPlaylist.parse(full.render()) == full)
        let yes = try #require(full.deltaUpdate(.segments))
        #expect(try MediaPlaylist.parse(yes.render()) == yes)
        let v2 = try #require(full.deltaUpdate(.segmentsAndDateRanges, recentlyRemovedDateRanges: ["a", "b"]))
        #expect(try MediaPlaylist.parse(v2.render()) == v2)
    }

    @Test(arguments: 0..<200)
    func generatedPlaylistsRoundTrip(seed: Int) throws {
        // The seed spread over the state as before the generator was shared, so each seed gives the same playlist.
        var random = SplitMix64(seed: UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 &+ 1)
        let playlist = Self.generated(&random)
        let text = playlist.render()
        let parsed = try MediaPlaylist.parse(text)
        #expect(parsed == playlist, "seed \(seed):\n\(text)")
    }

    @Test(arguments: [
        #"#EXT-X-PART:URI="1.0.ts""#,
        #"#EXT-X-PART:DURATION=0.4"#,
        #"#EXT-X-PART:DURATION=0.4,URI="1.0.ts",INDEPENDENT=NO"#,
        #"#EXT-X-PART:DURATION=0.4,URI="1.0.ts",GAP=yes"#,
        #"#EXT-X-PART:DURATION=0.4,URI="1.0.ts",BYTERANGE="x""#,
        #"#EXT-X-PART:DURATION=-1,URI="1.0.ts""#,
        #"#EXT-X-PART-INF:PART-TARGET=abc"#,
        "#EXT-X-PART-INF:X=1",
        "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=NO",
        "#EXT-X-SERVER-CONTROL:CAN-SKIP-UNTIL=x",
        "#EXT-X-SERVER-CONTROL:CAN-SKIP-DATERANGES=YES",
        "#EXT-X-SKIP:RECENTLY-REMOVED-DATERANGES=\"a\"",
        "#EXT-X-SKIP:SKIPPED-SEGMENTS=-2",
        #"#EXT-X-PRELOAD-HINT:TYPE=SEGMENT,URI="2.0.ts""#,
        #"#EXT-X-PRELOAD-HINT:TYPE=PART"#,
        #"#EXT-X-PRELOAD-HINT:TYPE=PART,URI="2.0.ts",BYTERANGE-START=x"#,
        #"#EXT-X-RENDITION-REPORT:URI="../a/index.m3u8""#,
        #"#EXT-X-RENDITION-REPORT:URI="../a/index.m3u8",LAST-MSN=1,LAST-PART=p"#,
        #"#EXT-X-RENDITION-REPORT:LAST-MSN=1"#,
    ])
    func malformedLowLatencyTagsAreRefused(line: String) {
        let text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n\(line)\n#EXTINF:2,\n1.ts\n"
        #expect(throws: PlaylistParseError.self) { try MediaPlaylist.parse(text) }
    }

    @Test func lowLatencyTagsMayOnlyAppearOnce() {
        for tag in [
            "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES", "#EXT-X-PART-INF:PART-TARGET=1",
            "#EXT-X-SKIP:SKIPPED-SEGMENTS=1",
        ] {
            let text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n\(tag)\n\(tag)\n#EXTINF:2,\n1.ts\n"
            #expect(throws: PlaylistParseError.self) { try MediaPlaylist.parse(text) }
        }
    }

    @Test func partsAttachToTheNextURIAndTrailingPartsMakeTheSegmentInProgress() throws {
        let text = """
            #EXTM3U
            #EXT-X-TARGETDURATION:2
            #EXT-X-PART-INF:PART-TARGET=1
            #EXT-X-PART:DURATION=1,URI="0.0.ts",INDEPENDENT=YES
            #EXT-X-PART:DURATION=1,URI="0.1.ts"
            #EXTINF:2,
            0.ts
            #EXT-X-DISCONTINUITY
            #EXT-X-PART:DURATION=1,URI="1.0.ts",GAP=YES

            """
        let playlist = try MediaPlaylist.parse(text)
        #expect(playlist.segments.count == 1)
        #expect(playlist.segments[0].parts.map(\.uri) == ["0.0.ts", "0.1.ts"])
        let open = try #require(playlist.segmentInProgress)
        #expect(open.discontinuity)
        #expect(open.parts == [PartialSegment(duration: 1, uri: "1.0.ts", gap: true)])
    }

    // MARK: - Generator

    static func generated(_ random: inout SplitMix64) -> MediaPlaylist {
        let base = ProgramDateTime(millisecondsSince1970: 1_795_000_000_000 + Int64(random.below(1_000_000)))
        let partTarget = [0.2, 0.333, 0.5, 1.0][random.below(4)]
        let ext = random.below(2) == 0 ? "ts" : "m4s"
        let map = ext == "m4s" ? MediaInitializationSection(uri: "init-\(random.below(3)).mp4") : nil
        let firstMSN = UInt64(random.below(5000))
        var playlist = MediaPlaylist(
            targetDuration: 1 + random.below(6), mediaSequence: firstMSN,
            discontinuitySequence: UInt64(random.below(4)), independentSegments: random.below(2) == 0)
        if random.below(3) > 0 {
            playlist.serverControl = ServerControl(
                canBlockReload: random.below(2) == 0, canSkipUntil: random.below(2) == 0 ? 12 : nil,
                holdBack: random.below(2) == 0 ? 6 : nil,
                partHoldBack: random.below(2) == 0 ? [0.6, 1.0, 1.5][random.below(3)] : nil)
            if playlist.serverControl?.canSkipUntil != nil {
                playlist.serverControl?.canSkipDateRanges = random.below(2) == 0
            }
        }
        if random.below(4) > 0 { playlist.partTarget = partTarget }
        if random.below(4) == 0 {
            playlist.skip = Skip(
                skippedSegments: 1 + random.below(5),
                recentlyRemovedDateRanges: random.below(2) == 0 ? nil : (0..<random.below(3)).map { "gone-\($0)" })
        }
        let first = firstMSN + UInt64(playlist.skip?.skippedSegments ?? 0)
        func parts(_ msn: UInt64, _ random: inout SplitMix64) -> [PartialSegment] {
            (0..<(1 + random.below(5))).map {
                PartialSegment(
                    duration: partTarget, uri: "\(msn).\($0).\(ext)", independent: random.below(3) == 0,
                    gap: random.below(6) == 0,
                    byteRange: random.below(6) == 0 ? ByteRange(length: 188 * (1 + random.below(9))) : nil)
            }
        }
        func segment(_ msn: UInt64, _ random: inout SplitMix64) -> MediaSegment {
            var segment = MediaSegment(
                uri: "\(msn).\(ext)", duration: Double(1000 + random.below(1000)) / 1000,
                discontinuity: random.below(8) == 0, gap: random.below(8) == 0,
                programDateTime: random.below(2) == 0 ? base.adding(milliseconds: Int64(msn) * 1000) : nil, map: map)
            if random.below(8) == 0 {
                segment.dateRanges = [DateRange(id: "d\(msn)", startDate: base, plannedDuration: 15)]
            }
            if random.below(10) == 0 { segment.key = .aes128(uri: "k\(msn).key") }
            if random.below(2) == 0 { segment.parts = parts(msn, &random) }
            return segment
        }
        let count = random.below(8)
        for offset in 0..<count { playlist.segments.append(segment(first + UInt64(offset), &random)) }
        let next = first + UInt64(count)
        if random.below(2) == 0 {
            var open = segment(next, &random)
            open.uri = ""
            open.duration = 0
            open.gap = false
            open.byteRange = nil
            open.parts = parts(next, &random)
            playlist.segmentInProgress = open
        }
        if random.below(2) == 0 {
            playlist.preloadHints = [PreloadHint(type: .part, uri: "\(next).9.\(ext)")]
            if random.below(3) == 0 {
                playlist.preloadHints.append(
                    PreloadHint(type: .map, uri: "init-9.mp4", byteRangeStart: random.below(9), byteRangeLength: 700))
            }
        }
        for index in 0..<random.below(3) {
            playlist.renditionReports.append(
                RenditionReport(
                    uri: "../r\(index)/index.m3u8", lastMSN: next,
                    lastPart: random.below(3) == 0 ? nil : random.below(5))
            )
        }
        return playlist
    }
}
