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
/// 31): that segment is no format change, and the outage after it is filled with video and audio continuing it.
@Suite(.offThePool) struct TruncatedLastSegmentFillerTests {
    let support = ContinuousTSIngestTests()

    /// The PAT, the PMT and the packets of the first video access unit of a test source segment (no audio).
    static func tablesAndFirstVideoAccessUnit(of bytes: [UInt8]) throws -> [UInt8] {
        let contents = try TransportStreamContents(bytes)
        let video = try #require(contents.streams.first { $0.streamType == 0x1B }).pid
        let packets = try TransportStreamReader.packets(bytes)
        var result = ContinuousTSFeedStateTests.tables(of: bytes)
        var starts = 0
        for packet in packets where Int(packet.pid) == video {
            if packet.payloadUnitStart { starts += 1 }
            if starts > 1 { break }
            result += bytes[packet.index * 188..<(packet.index + 1) * 188]
        }
        return result
    }

    @Test func theOutageAfterALastSegmentWithoutAudioIsFilledWithVideoAndAudio() throws {
        let clock = ManualClock()
        let origin = try support.makeOrigin(clock: clock, segmentDuration: 1)
        let ingest = ContinuousTSIngest(origin: origin, logger: Logger(label: "test"))
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 1)
        let session = try ingest.open(channel: "ch", rendition: "360p", peer: "127.0.0.1:5000")
        support.feed(session, &generator, seconds: 5, clock: clock, origin: origin)
        // The encoder dies: its last bytes are the tables and the first video access unit, then the caller is gone.
        let last = try Self.tablesAndFirstVideoAccessUnit(of: generator.nextSegment().bytes)
        clock.advance(microseconds: 40_000)
        last.withUnsafeBytes { session.receive($0) }
        session.close(reason: "disconnected")
        for _ in 0..<4 {
            clock.advance(seconds: 1)
            origin.tick()
        }
        let entries = try #require(origin.channel(named: "ch")?.snapshot.renditions["360p"]?.entries)
        let lastSegment = try #require(entries.last { !$0.isGap })
        let lastContents = try TransportStreamContents(try #require(lastSegment.bytes).array)
        let audio = try #require(lastContents.streams.first { $0.streamType == 0x0F }).pid
        #expect(lastContents.pesPackets[audio, default: []].isEmpty)
        // A track missing from a truncated segment is no format change: no discontinuity.
        #expect(!lastSegment.discontinuity)
        let gaps = entries.filter { $0.isGap && $0.msn > lastSegment.msn }
        #expect(gaps.count >= 2)
        // The first filler's audio starts where the audio of the segment before ended (the truncated one has none).
        let before = try #require(entries.last { !$0.isGap && $0.msn < lastSegment.msn })
        let beforeBytes = try #require(before.bytes).array
        let lastAudio = try #require(try TransportStreamContents(beforeBytes).pesPackets[audio]?.last)
        let sampleRate = try #require(
            try MediaProbe.probeSegment(beforeBytes).tracks.first { $0.kind == .audio }?.sampleRate)
        let frames = Int64(try TransportStreamReader.adtsFrameLengths(lastAudio.payload).count)
        let audioEnd = try #require(lastAudio.pts) + frames * 1024 * 90_000 / Int64(sampleRate)
        let firstFiller = try TransportStreamContents(try #require(gaps.first?.filler).array)
        #expect(firstFiller.pesPackets[audio]?.first?.pts == audioEnd)
        for gap in gaps {
            // nil is a 404 for the player.
            let filler = try #require(gap.filler, "GAP msn \(gap.msn) has no filler").array
            let contents = try TransportStreamContents(filler)
            let info = try MediaProbe.probeSegment(filler)
            #expect(info.tracks.map(\.kind) == [.video, .audio])
            for stream in contents.streams {
                #expect(!(contents.pesPackets[stream.pid] ?? []).isEmpty, "GAP msn \(gap.msn) PID \(stream.pid)")
            }
        }
    }
}
