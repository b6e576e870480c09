import HLSPackaging
import HLSPlaylist
import LiveTimeline
import OriginCore
import SharedBytes
import TestSource
import TestSupport
import Testing

/// Encoders that misbehave. Each case has a defined answer, shows up in the rendition's status, and
/// leaves a playlist that follows RFC 8216: EXT-X-TARGETDURATION never changes and is >= every rounded EXTINF, MSNs
/// are contiguous, PDT advances by EXTINF except at a discontinuity.
@Suite("Misbehaving encoders", .offThePool)
struct MisbehavingEncoderTests {
    /// Checks the rules a misbehaving encoder must not be able to break.
    static func expectValid(_ harness: Harness, _ rendition: String, targetDuration: Int = 2) throws {
        let playlist = try harness.playlist(rendition)
        #expect(playlist.targetDuration == targetDuration, "EXT-X-TARGETDURATION never changes")
        for (offset, segment) in playlist.segments.enumerated() {
            #expect(Int(segment.duration.rounded()) <= playlist.targetDuration, "\(segment.uri)")
            #expect(segment.uri == "\(playlist.mediaSequence + UInt64(offset)).ts", "MSNs are contiguous")
            #expect(segment.programDateTime != nil, "\(segment.uri) has a PDT")
        }
        for (previous, next) in zip(playlist.segments, playlist.segments.dropFirst()) where !next.discontinuity {
            let expected = previous.programDateTime!.millisecondsSince1970 + Int64((previous.duration * 1000).rounded())
            #expect(next.programDateTime!.millisecondsSince1970 == expected, "\(next.uri) continues \(previous.uri)")
        }
    }

    static func status(_ harness: Harness, _ rendition: String) throws -> RenditionStatus {
        try #require(harness.channel.status().renditions.first { $0.name == rendition })
    }

    /// The error a push threw, nil if it was accepted.
    static func refusal(_ body: () throws -> IngestReceipt) -> IngestError? {
        do {
            _ = try body()
            return nil
        } catch let error as IngestError {
            return error
        } catch {
            return IngestError(.unprocessable, "not an IngestError: \(error)")
        }
    }

    @Test func truncatedSegmentIsRefusedAsUnprocessableAndCounted() throws {
        let harness = try Harness(renditions: ["360p"])
        try harness.slot()
        try harness.slot()
        let before = harness.text("360p")
        harness.clock.advance(seconds: 2)
        let truncated = SharedBytes(Array(harness.nextSegment("360p").array.prefix(1000)))
        let error = try #require(Self.refusal { try harness.push("360p", truncated) })
        #expect(error.reason == .unprocessable)
        #expect(error.message.hasPrefix("segment could not be probed: "))
        let status = try Self.status(harness, "360p")
        #expect(status.segmentsRejected == 1)
        #expect(status.lastRejection == error.message)
        #expect(harness.text("360p") == before)
        try Self.expectValid(harness, "360p")
    }

    @Test func notMediaIsRefusedAndCountedInTheRenditionStatus() throws {
        let harness = try Harness(renditions: ["360p"])
        try harness.slot()
        let error = try #require(
            Self.refusal { try harness.push("360p", SharedBytes(string: "<html>oops</html>"), file: "seg1.ts") })
        #expect(error.reason == .notMedia)
        #expect(
            error.message
                == "not a media segment: 'seg1.ts' is not MPEG-TS, fMP4, ADTS AAC or an .m3u8 playlist "
                + "(first bytes: 3c 68 74 6d 6c 3e 6f 6f)")
        let empty = try #require(Self.refusal { try harness.push("360p", SharedBytes([])) })
        #expect(empty.reason == .notMedia)
        let status = try Self.status(harness, "360p")
        #expect(status.segmentsRejected == 2)
        #expect(status.lastRejection == "not a media segment: empty body")
        try Self.expectValid(harness, "360p")
    }

    @Test func segmentLongerThanTheTargetDurationIsRefusedAndTheTargetDurationStays() throws {
        let harness = try Harness(renditions: ["360p"])
        for _ in 0..<3 { try harness.slot() }
        var long = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 4)
        harness.clock.advance(seconds: 4)
        let error = try #require(Self.refusal { try harness.push("360p", SharedBytes(long.nextSegment().bytes)) })
        #expect(error.reason == .unprocessable)
        #expect(
            error.message
                == "segment lasts 4.0 s, but EXT-X-TARGETDURATION of channel 'ch' is 2 s and may never change: "
                + "cut segments of at most 2.5 s")
        let status = try Self.status(harness, "360p")
        #expect(status.segmentsRejected == 1)
        #expect(status.lastRejection == error.message)
        // The slot it would have filled becomes a GAP; the playlist keeps TD 2.
        harness.origin.tick()
        try Self.expectValid(harness, "360p")
        #expect(try harness.playlist("360p").segments.last?.gap == true)
    }

    @Test func timestampsJumpingBackStartADiscontinuity() throws {
        let harness = try Harness(renditions: ["360p"])
        for _ in 0..<3 { try harness.slot() }
        harness.generators["360p"]!.restartTimestamps(startPTS: 0)
        let receipts = try harness.slot()
        #expect(receipts[0].message.hasSuffix(", discontinuity"))
        try harness.slot()
        let playlist = try harness.playlist("360p")
        #expect(playlist.segments.map(\.discontinuity) == [false, false, false, true, false])
        let status = try Self.status(harness, "360p")
        #expect(status.discontinuities == 1)
        #expect(status.segmentsRejected == 0)
        try Self.expectValid(harness, "360p")
    }

    @Test func aFeedFasterThanRealTimeIsHeldToOneTargetDurationAhead() throws {
        let harness = try Harness(renditions: ["360p"])
        for _ in 0..<3 { try harness.slot() }
        // Ten segments at once, no time passing: the origin takes those that start at most one target duration
        // ahead of the clock (the timeline trails the clock by half a second after the anchor), refuses the rest.
        var refusals: [IngestError.Reason?] = []
        for _ in 0..<10 {
            let segment = harness.nextSegment("360p")
            refusals.append(Self.refusal { try harness.push("360p", segment) }?.reason)
        }
        #expect(refusals == [nil, nil] + [IngestError.Reason?](repeating: .aheadOfClock, count: 8))
        let status = try Self.status(harness, "360p")
        #expect(status.segmentsRejected == 8)
        #expect(
            status.lastRejection?.hasSuffix("more than one target duration ahead of the clock: push in real time")
                == true)
        let playlist = try harness.playlist("360p")
        let newest = try #require(playlist.segments.last?.programDateTime)
        #expect(newest.millisecondsSince1970 - harness.clock.nowMilliseconds() <= 2000)
        try Self.expectValid(harness, "360p")
    }

    /// Two encoders push two different timelines to the same rendition every 2 s, the second `delay` seconds after
    /// the first. Returns why each encoder's pushes of the last `slots` slots were refused (nil: accepted).
    static func twoEncoders(
        delay: Double, slots: Int
    ) throws
        -> (Harness, first: [IngestError.Reason?], second: [IngestError.Reason?])
    {
        let harness = try Harness(renditions: ["360p"])
        var second = try TestStreamGenerator(
            profile: TestSourceProfile.named("360p")!, segmentDuration: 2, startPTS: 50_000_000)
        for _ in 0..<2 { try harness.slot() }
        var firstRefusals: [IngestError.Reason?] = []
        var secondRefusals: [IngestError.Reason?] = []
        for _ in 0..<slots {
            harness.clock.advance(seconds: delay)
            let theirs = SharedBytes(second.nextSegment().bytes)
            secondRefusals.append(Self.refusal { try harness.push("360p", theirs) }?.reason)
            harness.origin.tick()
            harness.clock.advance(seconds: 2 - delay)
            let ours = harness.nextSegment("360p")
            firstRefusals.append(Self.refusal { try harness.push("360p", ours) }?.reason)
            harness.origin.tick()
        }
        return (harness, firstRefusals, secondRefusals)
    }

    @Test func aSecondEncoderCloseBehindTheFirstIsRefusedAsATimelineConflict() throws {
        let (harness, first, second) = try Self.twoEncoders(delay: 0.3, slots: 6)
        #expect(first == Array(repeating: nil, count: 6))
        #expect(second == Array(repeating: .timelineConflict, count: 6))
        let status = try Self.status(harness, "360p")
        #expect(status.timelineConflicts == 6)
        #expect(status.segmentsRejected == 6)
        #expect(status.discontinuities == 0)
        #expect(
            status.lastRejection?.hasPrefix("segment does not continue the media timeline of rendition '360p'")
                == true)
        #expect(status.lastRejection?.contains("another encoder is pushing to this rendition") == true)
        let playlist = try harness.playlist("360p")
        #expect(playlist.segments.allSatisfy { !$0.discontinuity && !$0.gap })
        #expect(playlist.segments.last?.uri == "7.ts")
        try Self.expectValid(harness, "360p")
    }

    @Test func aSecondEncoderFarBehindTakesOverOnceAndKeepsTheRendition() throws {
        let (harness, first, second) = try Self.twoEncoders(delay: 1.5, slots: 6)
        // The second encoder's first segment lands in real time and takes the rendition (one discontinuity); from
        // then on the first encoder's segments would run ahead of the clock and are refused.
        #expect(second == Array(repeating: nil, count: 6))
        #expect(first == Array(repeating: .timelineConflict, count: 6))
        let status = try Self.status(harness, "360p")
        #expect(status.discontinuities == 1)
        #expect(status.timelineConflicts == 6)
        let playlist = try harness.playlist("360p")
        #expect(playlist.segments.filter(\.discontinuity).count == 1)
        #expect(playlist.segments.allSatisfy { !$0.gap })
        try Self.expectValid(harness, "360p")
    }

    @Test func aBackupEncoderTakesOverAfterAnOutage() throws {
        let harness = try Harness(renditions: ["360p"])
        for _ in 0..<3 { try harness.slot() }
        // The main encoder stops; GAP entries follow; the backup (another timeline) joins in real time.
        try harness.slot(dropping: ["360p"])
        harness.clock.advance(seconds: 1)
        harness.origin.tick()
        var backup = try TestStreamGenerator(
            profile: TestSourceProfile.named("360p")!, segmentDuration: 2, startPTS: 70_000_000)
        harness.clock.advance(seconds: 1)
        let receipt = try harness.push("360p", SharedBytes(backup.nextSegment().bytes))
        #expect(receipt.message.hasSuffix(", discontinuity"))
        let status = try Self.status(harness, "360p")
        #expect(status.timelineConflicts == 0)
        #expect(status.gapsWritten == 1)
        try Self.expectValid(harness, "360p")
    }

    @Test func playlistHintsAreCountedAndHugeOnesRefusedUnread() throws {
        let harness = try Harness(renditions: ["360p"])
        try harness.slot()
        let before = harness.text("360p")
        let hint = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\nseg0.ts\n"
        #expect(try harness.push("360p", SharedBytes(string: hint), file: "index.m3u8").kind == .hintRead)
        var huge = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n"
        while huge.utf8.count <= Origin.maxHintBytes { huge += "#EXTINF:2.000,\nsegment-with-a-long-name.ts\n" }
        let error = try #require(
            Self.refusal { try harness.push("360p", SharedBytes(string: huge), file: "index.m3u8") })
        #expect(error.reason == .hintTooLarge)
        #expect(
            error.message
                == "playlist hint of \(huge.utf8.count) bytes is larger than 1048576 bytes and was not read: "
                + "keep the encoder's playlist bounded")
        let broken = try #require(
            Self.refusal { try harness.push("360p", SharedBytes(string: "#EXTM3U\n#EXTINF:zz\n"), file: "a.m3u8") })
        #expect(broken.reason == .invalidHint)
        let status = try Self.status(harness, "360p")
        #expect(status.hintsRead == 1)
        #expect(status.hintsRefused == 2)
        #expect(status.segmentsRejected == 0)
        #expect(status.lastRejection == broken.message)
        #expect(harness.text("360p") == before)
    }
}

@Suite("Misbehaving encoders: a short last segment", .offThePool)
struct ShortLastSegmentTests {
    /// The first `packets` TS packets of a segment: a valid, shorter segment (what an encoder stopped with SIGTERM
    /// flushes as its last one).
    static func shortSegment(_ harness: Harness, packets: Int) -> SharedBytes {
        SharedBytes(Array(harness.nextSegment("360p").array.prefix(188 * packets)))
    }

    @Test func anOutageAfterAShortSegmentWritesGapsOfTheNominalDuration() throws {
        let harness = try Harness(renditions: ["360p"])
        for _ in 0..<3 { try harness.slot() }
        harness.clock.advance(seconds: 0.3)
        let short = try harness.push("360p", Self.shortSegment(harness, packets: 60))
        #expect(short.kind == .segment, "\(short.message)")
        // 12 s without the encoder: one GAP per nominal 2 s slot, not one per short segment's duration.
        for _ in 0..<24 {
            harness.clock.advance(seconds: 0.5)
            harness.origin.tick()
        }
        let status = try MisbehavingEncoderTests.status(harness, "360p")
        #expect(status.gapsWritten <= 7, "\(status.gapsWritten) GAP entries for a 12 s outage")
        let playlist = try harness.playlist("360p")
        #expect(playlist.segments.filter(\.gap).allSatisfy { $0.duration == 2 })
        try MisbehavingEncoderTests.expectValid(harness, "360p")
    }
}
