import HLSPackaging
import HLSPlaylist
import HTTPPushInput
import LiveTimeline
import OriginCore
import SharedBytes
import TestSource
import TestSupport
import Testing

@Suite("Channel ingest loop", .offThePool)
struct ChannelIngestTests {
    @Test func segmentsGetConsecutiveMSNsAndExactPlaylistText() throws {
        let harness = try Harness(renditions: ["360p"])
        let start = harness.clock.nowMilliseconds()
        for _ in 0..<3 { try harness.slot() }
        let pdt = { (offset: Int64) in ProgramDateTime(millisecondsSince1970: start + offset).formatted }
        #expect(
            harness.text("360p") == """
                #EXTM3U
                #EXT-X-VERSION:3
                #EXT-X-TARGETDURATION:2
                #EXT-X-MEDIA-SEQUENCE:0
                #EXT-X-DISCONTINUITY-SEQUENCE:0
                #EXT-X-INDEPENDENT-SEGMENTS
                #EXT-X-PROGRAM-DATE-TIME:\(pdt(0))
                #EXTINF:2.000,
                0.ts
                #EXT-X-PROGRAM-DATE-TIME:\(pdt(2000))
                #EXTINF:2.000,
                1.ts
                #EXT-X-PROGRAM-DATE-TIME:\(pdt(4000))
                #EXTINF:2.000,
                2.ts

                """)
    }

    @Test func windowSlidesAndRemovedSegmentsStayDownloadable() throws {
        let harness = try Harness(renditions: ["360p"])
        for _ in 0..<10 { try harness.slot() }
        let playlist = try harness.playlist("360p")
        #expect(playlist.mediaSequence == 4)
        #expect(playlist.segments.map(\.uri) == ["4.ts", "5.ts", "6.ts", "7.ts", "8.ts", "9.ts"])
        let snapshot = try #require(harness.channel.snapshot.renditions["360p"])
        // msn 3 left the window at the last push; it stays for its 2 s + the window's 12 s.
        #expect(snapshot.entry(msn: 3)?.bytes != nil)
        harness.clock.advance(seconds: 13.9)
        harness.origin.tick()
        #expect(harness.channel.snapshot.renditions["360p"]?.entry(msn: 3) != nil)
        harness.clock.advance(seconds: 0.2)
        harness.origin.tick()
        #expect(harness.channel.snapshot.renditions["360p"]?.entry(msn: 3) == nil)
    }

    @Test func programDateTimeAdvancesByExtinfAndMatchesAcrossRenditions() throws {
        let harness = try Harness()
        for _ in 0..<8 { try harness.slot() }
        let a = try harness.playlist("360p")
        let b = try harness.playlist("180p")
        #expect(a.mediaSequence == b.mediaSequence)
        for (x, y) in zip(a.segments, b.segments) {
            #expect(x.uri == y.uri)
            #expect(x.programDateTime == y.programDateTime)
        }
        for (previous, next) in zip(a.segments, a.segments.dropFirst()) {
            let expected = previous.programDateTime!.millisecondsSince1970 + Int64((previous.duration * 1000).rounded())
            #expect(next.programDateTime!.millisecondsSince1970 == expected)
        }
        // The live edge is within one target duration of the clock.
        let last = try #require(a.segments.last)
        let end = last.programDateTime!.millisecondsSince1970 + Int64(last.duration * 1000)
        #expect(abs(harness.clock.nowMilliseconds() - end) <= 2000)
    }

    @Test func encoderRestartGetsADiscontinuity() throws {
        let harness = try Harness(renditions: ["360p"])
        for _ in 0..<3 { try harness.slot() }
        harness.generators["360p"]!.restartTimestamps(startPTS: 900_000)
        for _ in 0..<2 { try harness.slot() }
        let playlist = try harness.playlist("360p")
        #expect(playlist.segments.map(\.discontinuity) == [false, false, false, true, false])
        #expect(playlist.mediaSequence == 0)
        // Slide the discontinuity out: the sequence counts it.
        for _ in 0..<5 { try harness.slot() }
        #expect(try harness.playlist("360p").discontinuitySequence == 1)
        #expect(harness.channel.status().renditions[0].discontinuities == 1)
    }

    @Test func oneRenditionRestartingPutsTheDiscontinuityAtTheSameMSNInAll() throws {
        let harness = try Harness(window: .segments(20))
        for _ in 0..<3 { try harness.slot() }
        harness.generators["180p"]!.restartTimestamps(startPTS: 900_000)
        for _ in 0..<3 { try harness.slot() }
        let restarted = try harness.playlist("180p")
        let other = try harness.playlist("360p")
        #expect(restarted.segments.map(\.discontinuity) == [false, false, false, true, false, false])
        #expect(other.segments.map(\.discontinuity) == restarted.segments.map(\.discontinuity))
        #expect(other.segments.map(\.programDateTime) == restarted.segments.map(\.programDateTime))
    }

    @Test func renditionsOfAnAutoCreatedChannelStartingAMomentApartShareTheirFirstMSN() throws {
        let harness = try Harness()
        func push(_ rendition: String) throws -> UInt64? {
            try harness.origin.ingest(
                channel: "pushed", rendition: rendition, fileName: "s.ts", body: harness.nextSegment(rendition)
            ).msn
        }
        for _ in 0..<4 {
            harness.clock.advance(seconds: 1.7)
            let first = try push("360p")
            harness.clock.advance(seconds: 0.3)  // the second encoder output finishes its segment 300 ms later
            let second = try push("180p")
            #expect(first == second)
            harness.origin.tick()
        }
        harness.clock.advance(seconds: 1.1)
        harness.origin.tick()
        let channel = try #require(harness.origin.channel(named: "pushed"))
        let a = try #require(channel.snapshot.renditions["360p"]?.playlist)
        let b = try #require(channel.snapshot.renditions["180p"]?.playlist)
        let pa = try MediaPlaylist.parse(String(decoding: a.array, as: UTF8.self))
        let pb = try MediaPlaylist.parse(String(decoding: b.array, as: UTF8.self))
        #expect(pa.segments.map(\.uri) == ["0.ts", "1.ts", "2.ts", "3.ts"])
        #expect(pa.segments.map(\.uri) == pb.segments.map(\.uri))
        #expect(pa.segments.map(\.programDateTime) == pb.segments.map(\.programDateTime))
    }

    @Test func aSlotIsPublishedOnceEveryStartedRenditionFilledIt() throws {
        let harness = try Harness()
        for _ in 0..<4 { try harness.slot() }
        harness.clock.advance(seconds: 2)
        _ = try harness.push("360p", harness.nextSegment("360p"))
        #expect(try harness.playlist("360p").segments.last?.uri == "3.ts")
        _ = try harness.push("180p", harness.nextSegment("180p"))
        #expect(try harness.playlist("360p").segments.last?.uri == "4.ts")
        #expect(try harness.playlist("180p").segments.last?.uri == "4.ts")
    }

    @Test func timestampsGoingBackAlsoGetADiscontinuity() throws {
        let harness = try Harness(renditions: ["360p"])
        for _ in 0..<3 { try harness.slot() }
        harness.generators["360p"]!.restartTimestamps(startPTS: 0)
        try harness.slot()
        #expect(try harness.playlist("360p").segments.last?.discontinuity == true)
    }

    @Test func targetDurationIsNeverBelowARoundedExtinf() throws {
        let harness = try Harness(renditions: ["360p"], targetDuration: 1)
        harness.clock.advance(seconds: 2)
        let before = harness.channel.snapshot.renditions["360p"]?.playlist
        #expect(throws: IngestError.self) { try harness.push("360p", harness.nextSegment("360p")) }
        do {
            _ = try harness.push("360p", harness.nextSegment("360p"))
        } catch {
            #expect(error.reason == .unprocessable)
            #expect(error.message.contains("EXT-X-TARGETDURATION"))
        }
        #expect(harness.channel.snapshot.renditions["360p"]?.playlist == before)
        #expect(harness.channel.status().renditions[0].segmentsRejected == 2)
    }

    @Test func rejectedInputLeavesTheWindowAlone() throws {
        let harness = try Harness(renditions: ["360p"])
        for _ in 0..<3 { try harness.slot() }
        let before = harness.text("360p")
        let bad: [(SharedBytes, IngestError.Reason)] = [
            (SharedBytes(string: "hello, not media"), .notMedia),
            (SharedBytes([UInt8](repeating: 0x47, count: 188 * 3)), .unprocessable),
            (SharedBytes([]), .notMedia),
        ]
        for (body, reason) in bad {
            do {
                _ = try harness.push("360p", body)
                Issue.record("accepted bad input")
            } catch {
                #expect(error.reason == reason, "\(error)")
            }
        }
        #expect(harness.text("360p") == before)
        try harness.slot()
        #expect(try harness.playlist("360p").segments.last?.uri == "3.ts")
        #expect(try harness.playlist("360p").segments.last?.discontinuity == false)
    }

    @Test func autoCreateOffRefusesUnknownChannelsAndRenditions() throws {
        let harness = try Harness(renditions: ["360p"], autoCreate: false)
        #expect(throws: IngestError.self) {
            try harness.origin.ingest(
                channel: "other", rendition: "360p", fileName: "0.ts", body: harness.nextSegment("360p"))
        }
        do {
            _ = try harness.origin.ingest(
                channel: "ch", rendition: "1080p", fileName: "0.ts", body: harness.nextSegment("360p"))
        } catch {
            #expect(error.reason == .unknownRendition)
            #expect(error.message.contains("1080p"))
        }
        #expect(harness.origin.channel(named: "other") == nil)
    }

    @Test func autoCreateMakesChannelAndRenditionOnFirstPush() throws {
        let harness = try Harness(renditions: ["360p"])
        harness.clock.advance(seconds: 2)
        let receipt = try harness.origin.ingest(
            channel: "newchannel", rendition: "360p", fileName: "a.ts", body: harness.nextSegment("360p"))
        #expect(receipt.kind == .segment)
        #expect(receipt.msn == 0)
        #expect(harness.origin.channel(named: "newchannel")?.renditionNames == ["360p"])
    }

    @Test func invalidNamesAreRefused() throws {
        let harness = try Harness(renditions: ["360p"])
        for name in ["", "a b", "../x", String(repeating: "a", count: 65), "é"] {
            #expect(throws: IngestError.self) {
                try harness.origin.ingest(channel: name, rendition: "360p", fileName: "0.ts", body: SharedBytes([1]))
            }
        }
    }

    @Test func pushingFasterThanRealTimeIsRefused() throws {
        let harness = try Harness(renditions: ["360p"])
        try harness.slot()
        var refused: IngestError?
        for _ in 0..<4 {
            do { _ = try harness.push("360p", harness.nextSegment("360p")) } catch { refused = error; break }
        }
        #expect(refused?.reason == .aheadOfClock)
    }

    @Test func playlistHintsAreParsedButNotTrusted() throws {
        let harness = try Harness(renditions: ["360p"])
        let hint = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.000000,\nseg0.ts\n"
        let receipt = try harness.push("360p", SharedBytes(string: hint), file: "index.m3u8")
        #expect(receipt.kind == .hintRead)
        #expect(harness.channel.snapshot.renditions["360p"]?.playlist == nil)
        do {
            _ = try harness.push("360p", SharedBytes(string: "garbage"), file: "index.m3u8")
            Issue.record("accepted a bad hint")
        } catch {
            #expect(error.reason == .invalidHint)
        }
    }

    @Test func multivariantListsMeasuredBandwidthCodecsAndResolution() throws {
        let harness = try Harness()
        for _ in 0..<4 { try harness.slot() }
        let bytes = try #require(harness.channel.snapshot.multivariantPlaylist)
        let playlist = try MultivariantPlaylist.parse(String(decoding: bytes.array, as: UTF8.self))
        #expect(playlist.variants.map(\.uri) == ["360p/index.m3u8", "180p/index.m3u8"])
        let status = harness.channel.status()
        for (variant, rendition) in zip(playlist.variants, status.renditions) {
            #expect(variant.bandwidth == rendition.peakBitrate)
            #expect(variant.averageBandwidth == rendition.averageBitrate)
            #expect(variant.bandwidth >= variant.averageBandwidth!)
            #expect(variant.codecs.count == 2)
            #expect(variant.codecs.contains("mp4a.40.2"))
            #expect(variant.frameRate == 25)
        }
        #expect(playlist.variants[0].resolution == Resolution(width: 640, height: 360))
        #expect(playlist.variants[1].resolution == Resolution(width: 320, height: 180))
        #expect(playlist.independentSegments)
    }
}
