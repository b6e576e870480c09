import Foundation
import HLSPackaging
import HLSPlaylist
import HTTPPushInput
import LiveTimeline
import Logging
import MediaProbe
import OriginCore
import SharedBytes
import TestSource
import TestSupport
import Testing

/// WebVTT subtitle renditions on the slot timeline: paired with their parent's segments, never holding a slot open
/// for long, empty cue segments where media delivered and the cues did not, GAPs only in an outage.
@Suite("Subtitle renditions follow the slot timeline", .offThePool)
struct SubtitleFollowerTests {
    /// A push channel `ch` with the video rendition `180p`; ffmpeg-style WebVTT pushes (`180p/indexN.vtt`) create
    /// `180p-vtt`.
    final class Subtitled {
        let clock = ManualClock()
        var origin: Origin
        let directory: String?
        var generator: TestStreamGenerator
        /// The next file number ffmpeg would give.
        var number = 0
        /// Start PTS of each pushed `180p` segment, by file number.
        var startPTS: [Int: Int64] = [:]

        init(directory: String? = nil, followerWait: Int64? = nil) throws {
            self.directory = directory
            origin = try Self.start(directory: directory, followerWait: followerWait, clock: clock)
            generator = try TestStreamGenerator(profile: TestSourceProfile.named("180p")!, segmentDuration: 2)
        }

        static func start(directory: String?, followerWait: Int64? = nil, clock: ManualClock) throws -> Origin {
            var channel = ChannelConfiguration(name: "ch", renditions: [RenditionConfiguration(name: "180p")])
            channel.window = .segments(6)
            channel.followerWaitMilliseconds = followerWait
            return try Origin(
                configuration: OriginConfiguration(channels: [channel], dataDirectory: directory), clock: clock,
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        }

        /// A new origin process on the same data directory (nothing flushed, as after kill -9).
        func restart() throws {
            origin = try Self.start(directory: directory, clock: clock)
        }

        var channel: Channel { origin.channel(named: "ch")! }

        static func cue(_ number: Int) -> SharedBytes {
            SharedBytes(Array("WEBVTT\n\n00:00:\(10 + number).000 --> 00:00:\(10 + number).500\nCue \(number)\n".utf8))
        }

        /// 2 s pass; the video segment of the next number is pushed (unless `video` is false), then its cue file
        /// (when `cue`), then a tick.
        func slot(video: Bool = true, cue: Bool = true) throws {
            clock.advance(seconds: 2)
            let segment = generator.nextSegment()
            let bytes = SharedBytes(segment.bytes)
            startPTS[number] = try bytes.withUnsafeBytes { try MediaProbe.probeSegment($0) }.startTime.ticks
            if video { _ = try push("index\(number).ts", bytes) }
            if cue { _ = try push("index\(number).vtt", Self.cue(number)) }
            number += 1
            origin.tick()
        }

        @discardableResult
        func push(_ file: String, _ body: SharedBytes) throws(IngestError) -> IngestReceipt {
            try origin.ingest(channel: "ch", rendition: "180p", fileName: file, body: body)
        }

        func entries(_ rendition: String) -> [WindowEntry] {
            channel.snapshot.renditions[rendition]?.entries ?? []
        }

        func playlist(_ rendition: String) throws -> MediaPlaylist {
            let bytes = try #require(channel.snapshot.renditions[rendition]?.playlist)
            return try MediaPlaylist.parse(String(decoding: bytes.array, as: UTF8.self))
        }

        func text(_ rendition: String) -> String? {
            channel.snapshot.renditions[rendition]?.playlist.map { String(decoding: $0.array, as: UTF8.self) }
        }
    }

    static func text(_ bytes: SharedBytes?) -> String? { bytes.map { String(decoding: $0.array, as: UTF8.self) } }

    /// The two playlists agree MSN for MSN: PDT, EXTINF, GAP, discontinuity, and the sequence numbers.
    static func expectAligned(_ a: MediaPlaylist, _ b: MediaPlaylist, sourceLocation: SourceLocation = #_sourceLocation)
    {
        #expect(a.mediaSequence == b.mediaSequence, sourceLocation: sourceLocation)
        #expect(a.discontinuitySequence == b.discontinuitySequence, sourceLocation: sourceLocation)
        #expect(a.segments.count == b.segments.count, sourceLocation: sourceLocation)
        for (x, y) in zip(a.segments, b.segments) {
            #expect(x.programDateTime == y.programDateTime, sourceLocation: sourceLocation)
            #expect(x.duration == y.duration, sourceLocation: sourceLocation)
            #expect(x.gap == y.gap, "GAP differs at \(y.uri)", sourceLocation: sourceLocation)
            #expect(
                x.discontinuity == y.discontinuity, "discontinuity differs at \(y.uri)", sourceLocation: sourceLocation)
        }
    }

    @Test func webVTTPairsWithTheVideoSegmentOfTheSameFileNumberAndGetsTheMap() throws {
        let stream = try Subtitled()
        for _ in 0..<8 { try stream.slot() }
        let video = try stream.playlist("180p")
        let subtitles = try stream.playlist("180p-vtt")
        #expect(subtitles.segments.count >= 6)
        Self.expectAligned(video, subtitles)
        #expect(subtitles.segments.allSatisfy { !$0.gap && $0.uri.hasSuffix(".vtt") })
        // Cue n is listed at the MSN of video segment n, the origin's map inserted after the signature.
        let first = try #require(stream.entries("180p").first).msn
        let firstNumber = 8 - stream.entries("180p").count
        for entry in stream.entries("180p-vtt") {
            let number = firstNumber + Int(entry.msn - first)
            #expect(
                Self.text(entry.bytes)
                    == "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:126000,LOCAL:00:00:00.000\n\n00:00:\(10 + number).000 --> "
                    + "00:00:\(10 + number).500\nCue \(number)\n")
        }
    }

    @Test func eachCueLandsInTheSlotOfItsVideoSegment() throws {
        let stream = try Subtitled()
        for _ in 0..<6 { try stream.slot() }
        // Cue 6 comes before its video segment, then cue 7 after video 7: each pairs with its own number.
        stream.clock.advance(seconds: 2)
        let segment6 = SharedBytes(stream.generator.nextSegment().bytes)
        let cue6 = try stream.push("index6.vtt", Subtitled.cue(6))
        let video6 = try stream.push("index6.ts", segment6)
        stream.origin.tick()
        stream.clock.advance(seconds: 2)
        let video7 = try stream.push("index7.ts", SharedBytes(stream.generator.nextSegment().bytes))
        let cue7 = try stream.push("index7.vtt", Subtitled.cue(7))
        stream.origin.tick()
        #expect(cue6.msn == video6.msn)
        #expect(cue7.msn == video7.msn)
        let entry = try #require(stream.entries("180p-vtt").first { $0.msn == video7.msn! })
        #expect(Self.text(entry.bytes)!.hasSuffix("Cue 7\n"))
    }

    @Test func aLateCueGoesToTheNextOpenSlotNeverIntoThePast() throws {
        let stream = try Subtitled(followerWait: 500)
        for _ in 0..<5 { try stream.slot() }
        try stream.slot(cue: false)  // number 5: no cue in time
        stream.clock.advance(seconds: 0.6)
        stream.origin.tick()
        let closed = try #require(stream.entries("180p").last)
        let empty = try #require(stream.entries("180p-vtt").last)
        #expect(empty.msn == closed.msn, "the slot closed after the follower wait")
        #expect(Self.text(empty.bytes) == "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:126000,LOCAL:00:00:00.000\n\n")
        #expect(!empty.isGap)
        let late = try stream.push("index5.vtt", Subtitled.cue(5))
        #expect(late.msn == closed.msn + 1, "a cue for a closed slot goes to the next open one")
        try stream.slot(cue: false)  // number 6 sends no cue: the late one is listed in its slot
        stream.clock.advance(seconds: 0.6)
        stream.origin.tick()
        let cues = stream.entries("180p-vtt")
        #expect(Self.text(cues.first { $0.msn == closed.msn + 1 }?.bytes)?.hasSuffix("Cue 5\n") == true)
        #expect(Self.text(cues.first { $0.msn == closed.msn }?.bytes)?.contains("Cue") == false)
    }

    @Test func theCueOfASlotSupersedesALateCueHeldThere() throws {
        let stream = try Subtitled(followerWait: 500)
        for _ in 0..<5 { try stream.slot() }
        try stream.slot(cue: false)  // number 5
        stream.clock.advance(seconds: 0.6)
        stream.origin.tick()
        let superseded = try #require(stream.channel.status().renditions.first { $0.name == "180p-vtt" })
            .lateCuesSuperseded  // 1: cue 0 came after its slot closed, when 180p-vtt did not exist yet
        let late = try stream.push("index5.vtt", Subtitled.cue(5))
        // Number 6 arrives with its cue: the cue of the slot wins, so later cues are not pushed one slot late.
        try stream.slot()
        try stream.slot()
        let cues = stream.entries("180p-vtt")
        #expect(Self.text(cues.first { $0.msn == late.msn! }?.bytes)?.hasSuffix("Cue 6\n") == true)
        #expect(Self.text(cues.first { $0.msn == late.msn! + 1 }?.bytes)?.hasSuffix("Cue 7\n") == true)
        #expect(!cues.contains { Self.text($0.bytes)?.hasSuffix("Cue 5\n") == true })
        let status = try #require(stream.channel.status().renditions.first { $0.name == "180p-vtt" })
        #expect(status.lateCuesSuperseded == superseded + 1)
    }

    @Test func sparseCuesNeverHoldTheWindowAndListEmptyCueSegments() throws {
        let stream = try Subtitled()
        for n in 0..<20 { try stream.slot(cue: n % 5 == 0) }
        let video = try stream.playlist("180p")
        let subtitles = try stream.playlist("180p-vtt")
        Self.expectAligned(video, subtitles)
        #expect(subtitles.segments.allSatisfy { !$0.gap }, "empty cue segments are normal entries")
        let texts = stream.entries("180p-vtt").map { Self.text($0.bytes) ?? "" }
        #expect(texts.contains { $0.contains("Cue") })
        #expect(texts.contains { $0 == "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:126000,LOCAL:00:00:00.000\n\n" })
        let status = try #require(stream.channel.status().renditions.first { $0.name == "180p-vtt" })
        #expect(status.role == "subtitles")
        #expect(status.emptyCueSegments >= 14, "four of every five slots had no cue file")
        #expect(status.gapsWritten == 0)
        // The newest slot with video closes one follower wait (1 s) after its media, not at its deadline.
        stream.clock.advance(seconds: 2)
        let receipt = try stream.push("index99.ts", SharedBytes(stream.generator.nextSegment().bytes))
        stream.origin.tick()
        #expect(stream.entries("180p").last?.msn != receipt.msn)
        stream.clock.advance(seconds: 1)
        stream.origin.tick()
        #expect(stream.entries("180p").last?.msn == receipt.msn)
        #expect(stream.entries("180p-vtt").last?.msn == receipt.msn)
    }

    @Test func aPushedTimestampMapPlacesTheCueAndIsKept() throws {
        let stream = try Subtitled()
        for n in 0..<5 { try stream.slot(cue: n == 0) }
        stream.clock.advance(seconds: 2)
        let video = try stream.push("index5.ts", SharedBytes(stream.generator.nextSegment().bytes))
        let pts = try #require(stream.startPTS[4]).advanced(by: 180_000)
        let body = SharedBytes(
            Array("WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:\(pts),LOCAL:00:00:00.000\n\n00:00.100 --> 00:00.900\nHi\n".utf8))
        let cue = try stream.push("cues.vtt", body)
        #expect(cue.msn == video.msn)
        stream.origin.tick()
        let entry = try #require(stream.entries("180p-vtt").first { $0.msn == video.msn! })
        #expect(entry.bytes == body, "a pushed map is served unchanged")
    }

    @Test func aPushedTimestampMapFarFromTheMediaIsRefused() throws {
        let stream = try Subtitled()
        for n in 0..<5 { try stream.slot(cue: n == 0) }
        let before = stream.text("180p-vtt")
        let pts = try #require(stream.startPTS[4]) + 90_000 * 60
        let body = SharedBytes(Array("WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:\(pts),LOCAL:00:00:00.000\n\n".utf8))
        do {
            try stream.push("index5.vtt", body)
            Issue.record("a map a minute away was accepted")
        } catch {
            #expect(error.reason == .outOfRange)
        }
        #expect(stream.text("180p-vtt") == before, "nothing stored")
    }

    @Test func mediaPushedToASubtitleRenditionIsRefused() throws {
        let stream = try Subtitled()
        for _ in 0..<3 { try stream.slot() }
        let segment = SharedBytes(stream.generator.nextSegment().bytes)
        do {
            _ = try stream.origin.ingest(channel: "ch", rendition: "180p-vtt", fileName: "x.ts", body: segment)
            Issue.record("video was accepted by a subtitle rendition")
        } catch {
            #expect(error.reason == .roleMismatch)
            #expect(error.message == "rendition 180p-vtt takes subtitles, got video")
        }
        do {
            _ = try stream.push("cues.webvtt", Subtitled.cue(1))
            Issue.record("subtitles were accepted by a video rendition")
        } catch {
            #expect(error.reason == .roleMismatch)
            #expect(error.message == "rendition 180p takes media, got subtitles")
        }
    }

    @Test func anOutageKeepsMSNPDTDiscontinuityAndGapEqualAcrossRenditions() throws {
        let stream = try Subtitled()
        for _ in 0..<6 { try stream.slot() }
        for _ in 0..<4 { try stream.slot(video: false, cue: false) }
        for _ in 0..<4 { try stream.slot() }
        let video = try stream.playlist("180p")
        let subtitles = try stream.playlist("180p-vtt")
        #expect(video.segments.contains { $0.gap })
        #expect(video.segments.contains { $0.discontinuity })
        Self.expectAligned(video, subtitles)
        // The subtitle GAP URLs answer the empty cue file.
        let gap = try #require(stream.entries("180p-vtt").first { $0.isGap })
        #expect(Self.text(gap.filler) == "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:126000,LOCAL:00:00:00.000\n\n")
    }

    @Test func aRestartRestoresTheSubtitleRenditionWithIdenticalBytes() throws {
        let stream = try Subtitled(directory: try TemporaryDirectory.make("subtitles").path)
        for n in 0..<10 { try stream.slot(cue: n % 3 == 0) }
        let textBefore = stream.text("180p-vtt")
        let videoBefore = stream.text("180p")
        let before = stream.entries("180p-vtt")
        #expect(before.contains { Self.text($0.bytes)?.contains("Cue") == false }, "empty cue segments were stored")
        try stream.restart()
        #expect(stream.text("180p-vtt") == textBefore)
        #expect(stream.text("180p") == videoBefore)
        let after = try #require(stream.channel.snapshot.renditions["180p-vtt"])
        for entry in before {
            let restored = try #require(after.entry(msn: entry.msn))
            #expect(restored.bytes == entry.bytes, "msn \(entry.msn): bytes differ")
            #expect(restored.isGap == entry.isGap)
        }
    }

    @Test func afterARestartBothRenditionsResumeWithTheSameDiscontinuity() throws {
        let stream = try Subtitled(directory: try TemporaryDirectory.make("subtitles").path)
        for _ in 0..<8 { try stream.slot() }
        stream.clock.advance(seconds: 6)
        try stream.restart()
        for _ in 0..<4 { try stream.slot() }
        let video = try stream.playlist("180p")
        let subtitles = try stream.playlist("180p-vtt")
        #expect(video.segments.contains { $0.gap }, "the downtime is listed as GAP entries")
        #expect(video.segments.contains { $0.discontinuity })
        Self.expectAligned(video, subtitles)
    }

    @Test func ffmpegSubtitlePlaylistAndCuesUnderTheVideoPathGoToTheSubtitleRendition() throws {
        let stream = try Subtitled()
        try stream.slot(cue: false)
        let cue = try stream.push("index3.vtt", Subtitled.cue(3))
        #expect(cue.message.hasPrefix("180p-vtt:"))
        let hint = try stream.push(
            "index_vtt.m3u8",
            SharedBytes(Array("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\nindex3.vtt\n".utf8)))
        #expect(hint.message.hasPrefix("180p-vtt:"))
        #expect(stream.channel.renditionNames == ["180p", "180p-vtt"])
    }

    @Test func theMultivariantOffersTheSubtitleRenditionToTheVideo() throws {
        let stream = try Subtitled()
        for n in 0..<4 { try stream.slot(cue: n % 2 == 0) }
        let bytes = try #require(stream.channel.snapshot.multivariantPlaylist)
        let text = String(decoding: bytes.array, as: UTF8.self)
        #expect(
            text.contains(
                "#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"subs\",NAME=\"180p-vtt\",DEFAULT=NO,AUTOSELECT=YES,FORCED=NO,"
                    + "URI=\"180p-vtt/index.m3u8\"\n"), "\(text)")
        #expect(text.contains("SUBTITLES=\"subs\""), "\(text)")
        #expect(!text.contains("\n180p-vtt/index.m3u8"), "subtitles are never a variant")
    }

    /// ffmpeg streams each `.ts` body for the whole segment; the small `.vtt` of the same segment can complete
    /// first, before the parent rendition (or the channel) exists. The parent's announced push still decides the map.
    @Test(arguments: [true, false])
    func aCueFileBeforeItsParentsFirstSegmentGetsTheOffsetTheParentsPushAnnounced(announced: Bool) throws {
        let clock = ManualClock(microseconds: 1_700_000_000_000_000)
        let origin = try Origin(
            configuration: OriginConfiguration(channels: []), clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("180p")!, segmentDuration: 2)
        if announced { origin.announcePush(channel: "auto", rendition: "lo", fileName: "index0.ts") }
        _ = try origin.ingest(channel: "auto", rendition: "lo", fileName: "index0.vtt", body: Subtitled.cue(0))
        let segment = SharedBytes(generator.nextSegment().bytes)
        _ = try origin.ingest(channel: "auto", rendition: "lo", fileName: "index0.ts", body: segment)
        clock.advance(seconds: 2)
        origin.tick()
        let channel = try #require(origin.channel(named: "auto"))
        let cue = try #require(channel.snapshot.renditions["lo-vtt"]?.entries.first)
        let map = announced ? "MPEGTS:126000" : "MPEGTS:0,"
        #expect(Self.text(cue.bytes)?.contains("X-TIMESTAMP-MAP=\(map)") == true, "\(Self.text(cue.bytes) ?? "")")
    }

    @Test func nonUTF8WebVTTIsRefused() throws {
        let stream = try Subtitled()
        try stream.slot(cue: false)
        do {
            try stream.push(
                "index1.vtt", SharedBytes(Array("WEBVTT\n\n00:01.000 --> 00:02.000\n".utf8) + [0xFF, 0xFE]))
            Issue.record("non-UTF-8 WebVTT was accepted")
        } catch {
            #expect(error.reason == .unprocessable)
        }
    }
}
