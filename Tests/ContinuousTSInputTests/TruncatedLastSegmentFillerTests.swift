import ContinuousTSInput
import Foundation
import HLSPackaging
import LiveTimeline
import Logging
import MediaProbe
import OriginCore
import SharedBytes
import TestSource
import TestSupport
import Testing

/// An encoder that dies just after a slot boundary leaves a short last segment with a keyframe but no audio (issue
/// 31; an SRT caller killed 83 ms into a slot left one frame, and hls.js stopped on it): that segment is not listed,
/// its slot is a GAP, and the outage is filled with video and audio continuing the segment before.
@Suite(.offThePool) struct TruncatedLastSegmentFillerTests {
    let support = ContinuousTSIngestTests()

    /// Feeds 5 s of the test source on 1 s slots, then the tables and the first video access unit of the next second
    /// (its keyframe ends the segment before), ends the session as a caller's end does and lets four slots close.
    /// Returns the rendition's entries.
    func endJustAfterAKeyframe(lowLatency: Bool = false) throws -> [WindowEntry] {
        let clock = ManualClock()
        let origin = try support.makeOrigin(clock: clock, lowLatency: lowLatency, segmentDuration: 1)
        let ingest = ContinuousTSIngest(origin: origin, logger: Logger(label: "test"))
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 1)
        let session = try ingest.open(channel: "ch", rendition: "360p", peer: "127.0.0.1:5000")
        support.feed(session, &generator, seconds: 5, clock: clock, origin: origin)
        let last = try TransportStreamReader.tablesAndFirstVideoAccessUnit(of: generator.nextSegment().bytes)
        clock.advance(microseconds: 40_000)
        last.withUnsafeBytes { session.receive($0) }
        session.close(reason: "disconnected")
        for _ in 0..<4 {
            clock.advance(seconds: 1)
            origin.tick()
        }
        #expect(session.status.segmentsRefused == 0, "\(session.status.lastRefusal ?? "")")
        return try #require(origin.channel(named: "ch")?.snapshot.renditions["360p"]?.entries)
    }

    /// The last segment listed is the whole one before the encoder's end (audio and video, a whole slot); the slot
    /// of the one-frame segment after it is a GAP, as every slot after.
    func expectOneFrameSegmentNotListed(_ entries: [WindowEntry]) throws -> WindowEntry {
        let last = try #require(entries.last { !$0.isGap })
        let contents = try TransportStreamContents(try #require(last.bytes).array)
        let audio = try #require(contents.streams.first { $0.streamType == 0x0F }).pid
        #expect(!contents.pesPackets[audio, default: []].isEmpty, "the last listed segment has no audio")
        #expect(last.durationMilliseconds == 1_000, "the last listed segment lasts \(last.durationMilliseconds) ms")
        let after = entries.filter { $0.msn > last.msn }
        #expect(after.count >= 2)
        #expect(after.first?.msn == last.msn + 1)
        #expect(after.allSatisfy { $0.isGap })
        #expect(after.first?.programDateTimeMilliseconds == last.programDateTimeMilliseconds + 1_000)
        return last
    }

    @Test func aLastSegmentOfOneFrameWithoutAudioIsNotListedAndItsSlotIsAGap() throws {
        _ = try expectOneFrameSegmentNotListed(try endJustAfterAKeyframe())
    }

    @Test func onALowLatencyChannelALastSegmentOfOneFrameWithoutAudioIsNotListed() throws {
        _ = try expectOneFrameSegmentNotListed(try endJustAfterAKeyframe(lowLatency: true))
    }

    /// Every GAP entry in `gaps` has a filler with video and audio, each stream carrying PES, and the first filler's
    /// audio starts where the audio of `withAudio` (the segment the filler continues) ended.
    func expectFillers(_ gaps: [WindowEntry], continuingTheAudioOf withAudio: WindowEntry) throws {
        let bytes = try #require(withAudio.bytes).array
        let contents = try TransportStreamContents(bytes)
        let audio = try #require(contents.streams.first { $0.streamType == 0x0F }).pid
        let lastAudio = try #require(contents.pesPackets[audio]?.last)
        let sampleRate = try #require(
            try MediaProbe.probeSegment(bytes).tracks.first { $0.kind == .audio }?.sampleRate)
        let frames = Int64(try TransportStreamReader.adtsFrameLengths(lastAudio.payload).count)
        let audioEnd = try #require(lastAudio.pts) + frames * 1024 * 90_000 / Int64(sampleRate)
        let firstFiller = try TransportStreamContents(try #require(gaps.first?.filler).array)
        #expect(firstFiller.pesPackets[audio]?.first?.pts == audioEnd)
        #expect(gaps.count >= 2)
        for gap in gaps {
            // nil is a 404 for the player.
            let filler = try #require(gap.filler, "GAP msn \(gap.msn) has no filler").array
            let fillerContents = try TransportStreamContents(filler)
            let info = try MediaProbe.probeSegment(filler)
            #expect(info.tracks.map(\.kind) == [.video, .audio])
            for stream in fillerContents.streams {
                #expect(!(fillerContents.pesPackets[stream.pid] ?? []).isEmpty, "GAP msn \(gap.msn) PID \(stream.pid)")
            }
        }
    }

    @Test func theOutageAfterALastSegmentWithoutAudioIsFilledWithVideoAndAudio() throws {
        let entries = try endJustAfterAKeyframe()
        let lastSegment = try expectOneFrameSegmentNotListed(entries)
        #expect(!lastSegment.discontinuity)
        try expectFillers(entries.filter { $0.isGap && $0.msn > lastSegment.msn }, continuingTheAudioOf: lastSegment)
    }

    /// A pushed segment was acknowledged (201): a last one without audio stays listed, as it came. A stream without
    /// samples is no format change, so it starts no discontinuity, and the filler is read from it joined to the
    /// segment before: video and audio, each continuing its stream.
    @Test func aPushedLastSegmentWithoutAudioStaysListedAndTheOutageIsFilledContinuingEachStream() throws {
        let clock = ManualClock()
        let origin = try support.makeOrigin(clock: clock, segmentDuration: 1)
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 1)
        func push(_ bytes: [UInt8]) throws {
            _ = try origin.ingest(
                MediaPush(channel: "ch", rendition: "360p", kind: .media, body: SharedBytes(bytes), label: "push"))
        }
        for _ in 0..<5 {
            clock.advance(seconds: 1)
            try push(generator.nextSegment().bytes)
            origin.tick()
        }
        clock.advance(microseconds: 40_000)
        try push(try TransportStreamReader.tablesAndFirstVideoAccessUnit(of: generator.nextSegment().bytes))
        for _ in 0..<4 {
            clock.advance(seconds: 1)
            origin.tick()
        }
        let entries = try #require(origin.channel(named: "ch")?.snapshot.renditions["360p"]?.entries)
        let last = try #require(entries.last { !$0.isGap })
        let contents = try TransportStreamContents(try #require(last.bytes).array)
        let audio = try #require(contents.streams.first { $0.streamType == 0x0F }).pid
        #expect(contents.pesPackets[audio, default: []].isEmpty)
        #expect(last.durationMilliseconds == 40)
        #expect(!last.discontinuity)
        let before = try #require(entries.last { !$0.isGap && $0.msn < last.msn })
        try expectFillers(entries.filter { $0.isGap && $0.msn > last.msn }, continuingTheAudioOf: before)
    }
}
