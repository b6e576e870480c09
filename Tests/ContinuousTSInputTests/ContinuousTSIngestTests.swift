import ContinuousTSInput
import Foundation
import HLSPackaging
import HLSPlaylist
import LiveTimeline
import Logging
import MediaProbe
import OriginCore
import SharedBytes
import TSSegmenter
import TestSource
import TestSupport
import Testing

/// A continuous stream fed through `ContinuousTSIngest` into a real origin (store on disk), on the manual clock.
@Suite struct ContinuousTSIngestTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("continuous-\(UUID().uuidString)").path

    func makeOrigin(clock: ManualClock, lowLatency: Bool = false, segmentDuration: Double = 2) throws -> Origin {
        var channel = ChannelConfiguration(
            name: "ch", renditions: [.init(name: "360p")], segmentDuration: segmentDuration)
        if lowLatency { channel.lowLatency = LowLatencyConfiguration(partTarget: 0.5) }
        return try Origin(
            configuration: OriginConfiguration(channels: [channel], dataDirectory: directory), clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    func playlist(_ origin: Origin) throws -> MediaPlaylist {
        let bytes = try #require(origin.channel(named: "ch")?.snapshot.renditions["360p"]?.playlist)
        return try MediaPlaylist.parse(String(decoding: bytes.array, as: UTF8.self))
    }

    /// Feeds `seconds` of the test source, 1316 bytes (an SRT payload) at a time, the clock following the media.
    func feed(
        _ session: ContinuousTSSession, _ generator: inout TestStreamGenerator, seconds: Int, clock: ManualClock,
        origin: Origin
    ) {
        for _ in 0..<seconds {
            let bytes = generator.nextSegment().bytes
            let chunks = stride(from: 0, to: bytes.count, by: 1316).map { Array(bytes[$0..<min($0 + 1316, bytes.count)]) }
            for chunk in chunks {
                clock.advance(microseconds: 1_000_000 / Int64(chunks.count))
                chunk.withUnsafeBytes { session.receive($0) }
            }
            origin.tick()
        }
    }

    @Test func aContinuousStreamIsListedAsSegmentsCutOnTheChannelsClock() throws {
        let clock = ManualClock()
        let origin = try makeOrigin(clock: clock)
        let ingest = ContinuousTSIngest(origin: origin, logger: Logger(label: "test"))
        let session = try ingest.open(channel: "ch", rendition: "360p", peer: "127.0.0.1:5000")
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 1)
        feed(session, &generator, seconds: 12, clock: clock, origin: origin)
        let status = session.status
        #expect(status.segmentsRefused == 0, "\(status.lastRefusal ?? "")")
        #expect(status.segmentsAccepted >= 4)
        let list = try playlist(origin)
        #expect(list.segments.count >= 4)
        // Whole segments are 2 s (the first may be shorter: it starts at the stream's first keyframe).
        #expect(list.segments.dropFirst().allSatisfy { abs($0.duration - 2) < 0.01 })
        #expect(!list.segments.contains { $0.discontinuity })
        #expect(ingest.sessions(channel: "ch")["360p"]?.segmentsAccepted == status.segmentsAccepted)
        session.close(reason: "disconnected")
        #expect(ingest.sessions(channel: "ch").isEmpty)
    }

    @Test func aKeyframeIntervalLongerThanTheSegmentsShowsInTheSessionStatus() throws {
        let clock = ManualClock()
        // 0.5 s segments against the test source's 1 s GOP.
        let origin = try makeOrigin(clock: clock, segmentDuration: 0.5)
        let ingest = ContinuousTSIngest(origin: origin, logger: Logger(label: "test"))
        let session = try ingest.open(channel: "ch", rendition: "360p", peer: "127.0.0.1:5000")
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 1)
        feed(session, &generator, seconds: 4, clock: clock, origin: origin)
        let warning = try #require(ingest.sessions(channel: "ch")["360p"]?.segmenter.keyframeWarning)
        #expect(warning.contains("-g 12"))
    }

    @Test func aSecondSessionAfterACloseResumesWithADiscontinuity() throws {
        let clock = ManualClock()
        let origin = try makeOrigin(clock: clock)
        let ingest = ContinuousTSIngest(origin: origin, logger: Logger(label: "test"))
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 1)
        let first = try ingest.open(channel: "ch", rendition: "360p", peer: "127.0.0.1:5000")
        feed(first, &generator, seconds: 7, clock: clock, origin: origin)
        first.close(reason: "disconnected")
        // The encoder comes back a second later on a new timeline.
        clock.advance(seconds: 1)
        generator.restartTimestamps(startPTS: 900_000)
        let second = try ingest.open(channel: "ch", rendition: "360p", peer: "127.0.0.1:5001")
        feed(second, &generator, seconds: 7, clock: clock, origin: origin)
        let list = try playlist(origin)
        #expect(list.segments.filter(\.discontinuity).count == 1)
        #expect(second.status.segmentsRefused == 0, "\(second.status.lastRefusal ?? "")")
    }

    @Test func aSecondSessionStartsADiscontinuityEvenWhenItsTimestampsContinue() throws {
        let clock = ManualClock()
        let origin = try makeOrigin(clock: clock)
        let ingest = ContinuousTSIngest(origin: origin, logger: Logger(label: "test"))
        // PTS from 0: keyframes on the 2 s slot boundaries, so the second session's first segment starts exactly
        // where the first session's last one ended (6 s): nothing in the timestamps says the stream broke.
        var generator = try TestStreamGenerator(
            profile: TestSourceProfile.named("360p")!, segmentDuration: 1, startPTS: 0)
        let first = try ingest.open(channel: "ch", rendition: "360p", peer: "127.0.0.1:5000")
        feed(first, &generator, seconds: 6, clock: clock, origin: origin)
        first.close(reason: "disconnected")
        let second = try ingest.open(channel: "ch", rendition: "360p", peer: "127.0.0.1:5001")
        feed(second, &generator, seconds: 5, clock: clock, origin: origin)
        let list = try playlist(origin)
        let index = try #require(list.segments.firstIndex { $0.discontinuity })
        #expect(list.segments.filter(\.discontinuity).count == 1)
        // The segment after the break continues the timestamps: only the session says it is a discontinuity.
        #expect(index >= 3)
        #expect(list.segments.allSatisfy { abs($0.duration - 2) < 0.01 })
        #expect(second.status.segmentsRefused == 0, "\(second.status.lastRefusal ?? "")")
    }

    @Test func aLowLatencyChannelListsPartsAsTheBytesArrive() throws {
        let clock = ManualClock()
        let origin = try makeOrigin(clock: clock, lowLatency: true)
        let ingest = ContinuousTSIngest(origin: origin, logger: Logger(label: "test"))
        let session = try ingest.open(channel: "ch", rendition: "360p", peer: "127.0.0.1:5000")
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 1)
        feed(session, &generator, seconds: 7, clock: clock, origin: origin)
        #expect(session.status.segmentsRefused == 0, "\(session.status.lastRefusal ?? "")")
        let text = try String(
            decoding: #require(origin.channel(named: "ch")?.snapshot.renditions["360p"]?.playlist).array, as: UTF8.self)
        #expect(text.contains("#EXT-X-PART:"))
        #expect(text.contains("#EXT-X-PRELOAD-HINT:TYPE=PART"))
        #expect(try playlist(origin).segments.count >= 2)
    }
}
