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

/// IMSC1 subtitles (fMP4 `stpp.ttml.im1t`, the committed fixture of scripts/make-imsc-fixture.py) pushed beside
/// test-source video: their own SUBTITLES group, EXT-X-MAP, the slots of the video, GAPs where a fragment is missing.
@Suite("IMSC1 subtitle renditions", .offThePool)
struct IMSCSubtitleTests {
    static func fixture(_ name: String) throws -> SharedBytes {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let path = root.appendingPathComponent("MediaProbeTests/Fixtures/\(name)").path
        return SharedBytes(try #require(FileManager.default.contents(atPath: path).map { [UInt8]($0) }, "\(path)"))
    }

    /// A push channel `ch` with the video rendition `180p`; the `imsc` rendition is created by its init push.
    final class Stream {
        let clock = ManualClock()
        var origin: Origin
        let directory: String?
        var generator: TestStreamGenerator
        /// The next slot's number: video segment `n` and IMSC fragment `imsc-n.m4s` (the fixture has 0..<4).
        var number = 0

        init(directory: String? = nil, followerWait: Int64? = nil) throws {
            self.directory = directory
            origin = try Self.start(directory: directory, followerWait: followerWait, clock: clock)
            generator = try TestStreamGenerator(profile: TestSourceProfile.named("180p")!, segmentDuration: 2)
            _ = try origin.ingest(
                channel: "ch", rendition: "imsc", fileName: "init.mp4", body: IMSCSubtitleTests.fixture("imsc-init.mp4")
            )
        }

        static func start(directory: String?, followerWait: Int64? = nil, clock: ManualClock) throws -> Origin {
            var channel = ChannelConfiguration(name: "ch", renditions: [RenditionConfiguration(name: "180p")])
            channel.window = .segments(6)
            channel.followerWaitMilliseconds = followerWait
            return try Origin(
                configuration: OriginConfiguration(channels: [channel], dataDirectory: directory), clock: clock,
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        }

        func restart() throws {
            origin = try Self.start(directory: directory, clock: clock)
        }

        var channel: Channel { origin.channel(named: "ch")! }

        /// 2 s pass; the next video segment is pushed, then (when `subtitles`) the IMSC fragment of the same
        /// number, then a tick. Returns the receipts' MSNs.
        @discardableResult
        func slot(subtitles: Bool = true) throws -> (video: UInt64?, imsc: UInt64?) {
            clock.advance(seconds: 2)
            let video = try origin.ingest(
                channel: "ch", rendition: "180p", fileName: "seg\(number).ts",
                body: SharedBytes(generator.nextSegment().bytes))
            var imsc: UInt64?
            if subtitles {
                imsc =
                    try origin.ingest(
                        channel: "ch", rendition: "imsc", fileName: "imsc-\(number).m4s",
                        body: IMSCSubtitleTests.fixture("imsc-\(number).m4s")
                    ).msn
            }
            number += 1
            origin.tick()
            return (video.msn, imsc)
        }

        func entries(_ rendition: String) -> [WindowEntry] {
            channel.snapshot.renditions[rendition]?.entries ?? []
        }

        func text(_ rendition: String) -> String? {
            channel.snapshot.renditions[rendition]?.playlist.map { String(decoding: $0.array, as: UTF8.self) }
        }

        func playlist(_ rendition: String) throws -> MediaPlaylist {
            try MediaPlaylist.parse(try #require(text(rendition)))
        }
    }

    @Test func theMultivariantOffersTheIMSCGroupAndNamesItsCodec() throws {
        let stream = try Stream()
        for _ in 0..<4 { try stream.slot() }
        let bytes = try #require(stream.channel.snapshot.multivariantPlaylist)
        let text = String(decoding: bytes.array, as: UTF8.self)
        #expect(
            text.contains(
                "#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"subs-imsc\",NAME=\"imsc\",DEFAULT=NO,AUTOSELECT=YES,"
                    + "FORCED=NO,URI=\"imsc/index.m3u8\"\n"), "\(text)")
        #expect(text.contains("SUBTITLES=\"subs-imsc\""), "\(text)")
        #expect(text.contains(",stpp.ttml.im1t\""), "\(text)")
        #expect(!text.contains("\nimsc/index.m3u8"), "subtitles are never a variant")
        let multivariant = try MultivariantPlaylist.parse(text)
        #expect(multivariant.validate().isEmpty, "\(multivariant.validate())")
    }

    @Test func fragmentsTakeTheSlotsOfTheVideoWithTheirInitSection() throws {
        let stream = try Stream()
        for _ in 0..<4 {
            let receipts = try stream.slot()
            #expect(receipts.imsc == receipts.video)
        }
        let video = try stream.playlist("180p")
        let subtitles = try stream.playlist("imsc")
        #expect(subtitles.segments.count == 4)
        SubtitleFollowerTests.expectAligned(video, subtitles)
        #expect(subtitles.segments.allSatisfy { !$0.gap && $0.uri.hasSuffix(".m4s") })
        let text = try #require(stream.text("imsc"))
        #expect(text.contains("#EXT-X-MAP:URI=\"init-0.mp4\"\n"), "\(text)")
        let status = try #require(stream.channel.status().renditions.first { $0.name == "imsc" })
        #expect(status.role == "subtitles")
        #expect(status.emptyCueSegments == 0, "never WebVTT filler for IMSC")
        for (number, entry) in stream.entries("imsc").enumerated() {
            #expect(entry.bytes == (try Self.fixture("imsc-\(number).m4s")), "served as pushed")
        }
    }

    @Test func aMissingFragmentIsAGapAfterTheFollowerWaitWhileVideoContinues() throws {
        let stream = try Stream(followerWait: 500)
        try stream.slot()
        try stream.slot()
        let missed = try stream.slot(subtitles: false)
        stream.clock.advance(seconds: 0.6)
        stream.origin.tick()
        #expect(stream.entries("180p").last?.msn == missed.video, "video did not wait for more than the follower wait")
        let gap = try #require(stream.entries("imsc").first { $0.msn == missed.video })
        #expect(gap.isGap)
        #expect(gap.filler == nil, "no IMSC filler: the GAP URL answers 404")
        let next = try stream.slot()
        #expect(next.imsc == next.video, "the fragment after the hole keeps to its own slot")
        let video = try stream.playlist("180p")
        let subtitles = try stream.playlist("imsc")
        #expect(subtitles.mediaSequence == video.mediaSequence)
        #expect(subtitles.segments.map(\.programDateTime) == video.segments.map(\.programDateTime))
        #expect(subtitles.segments.map(\.gap) == [false, false, true, false])
        #expect(video.segments.allSatisfy { !$0.gap })
        // The subtitle timeline resumes where the slots say: a hole in the subtitles is no discontinuity, which
        // every rendition would have to take at the same MSN (video included).
        #expect(video.segments.allSatisfy { !$0.discontinuity }, "\(stream.text("180p") ?? "")")
        #expect(subtitles.segments.allSatisfy { !$0.discontinuity }, "\(stream.text("imsc") ?? "")")
    }

    @Test func anOutageKeepsGapsAndTheDiscontinuityOnTheSameMSNsAsVideo() throws {
        let stream = try Stream()
        try stream.slot()
        try stream.slot()
        stream.clock.advance(seconds: 6)  // the encoder is away: video and subtitles miss three slots
        stream.origin.tick()
        try stream.slot()
        try stream.slot()
        let video = try stream.playlist("180p")
        let subtitles = try stream.playlist("imsc")
        #expect(video.segments.contains { $0.gap })
        #expect(video.segments.filter(\.discontinuity).count == 1, "\(stream.text("180p") ?? "")")
        SubtitleFollowerTests.expectAligned(video, subtitles)
    }

    @Test func aRestartRestoresTheIMSCRendition() throws {
        let stream = try Stream(directory: try TemporaryDirectory.make("imsc").path)
        for _ in 0..<4 { try stream.slot() }
        let before = stream.text("imsc")
        let entries = stream.entries("imsc")
        try stream.restart()
        #expect(stream.text("imsc") == before)
        let after = try #require(stream.channel.snapshot.renditions["imsc"])
        for entry in entries {
            #expect(after.entry(msn: entry.msn)?.bytes == entry.bytes, "msn \(entry.msn): bytes differ")
        }
        let multivariant = try #require(stream.channel.snapshot.multivariantPlaylist)
        #expect(String(decoding: multivariant.array, as: UTF8.self).contains("GROUP-ID=\"subs-imsc\""))
    }
}
