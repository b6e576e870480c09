import Foundation
import HLSPackaging
import HTTPPushInput
import Logging
import MediaProbe
import SharedBytes
import TestSupport
import Testing

@testable import LiveTimeline
@testable import OriginCore

/// The origin's first filler after an encoder stopped mid-segment: the short last segment ffmpeg flushes on SIGTERM
/// (its audio ends ~0.6 s before its video) is pushed, the slots after it pass unfilled, and the GAP entries' fillers
/// continue each track from that track's own end (see GapFillerTests.EncoderStopJoinTests for the filler alone).
@Suite("Filler after a short last segment, through the channel", .offThePool)
struct EncoderStopFillerTests {
    @Test func theFirstGapFillerContinuesTheAudioWhereTheShortSegmentsAudioEnded() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("MediaProbeTests/Fixtures/ts-h264-aac-sigterm-last.ts")
        let segment = [UInt8](try Data(contentsOf: url))
        let clock = ManualClock()
        let origin = try Origin(
            configuration: OriginConfiguration(channels: [
                ChannelConfiguration(
                    name: "ch", renditions: [RenditionConfiguration(name: "hi")], targetDuration: 2,
                    window: .segments(20),
                    gapResponse: .filler)
            ]), clock: clock, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        clock.advance(seconds: 1)
        _ = try origin.ingest(channel: "ch", rendition: "hi", fileName: "s.ts", body: SharedBytes(segment))
        origin.tick()
        for _ in 0..<4 {
            clock.advance(seconds: 2)
            origin.tick()
        }
        let entries = try #require(origin.channel(named: "ch")?.snapshot.renditions["hi"]?.entries)
        #expect(entries.count >= 3 && !entries[0].isGap && entries.dropFirst().allSatisfy(\.isGap))
        guard entries.count >= 3 else { return }
        // The slot after the segment starts where it ends on the PDT timeline and lasts a nominal segment.
        #expect(entries[1].programDateTimeMilliseconds == entries[0].programDateTimeMilliseconds + 900)
        #expect(entries[1].durationMilliseconds == 2000)

        // The segment: video to PTS 573,000, audio to 519,840 (1920 ticks a frame).
        let first = try #require(entries[1].filler).array
        let contents = try TransportStreamContents(first)
        let video = (contents.pesPackets[0x100] ?? []).compactMap(\.pts)
        let audio = (contents.pesPackets[0x101] ?? []).compactMap(\.pts)
        #expect(video.first == 573_000)
        #expect(audio.first == 519_840)
        // The filler reaches its slot's end in both tracks: MediaProbe reads it ending there.
        let info = try MediaProbe.probeSegment(first)
        #expect(info.startTime.ticks + info.duration.ticks == 573_000 + entries[1].durationMilliseconds * 90)

        // The second filler continues the first in both tracks.
        let second = try TransportStreamContents(try #require(entries[2].filler).array)
        #expect((second.pesPackets[0x100] ?? []).first?.pts == 573_000 + entries[1].durationMilliseconds * 90)
        let secondAudio = try #require((second.pesPackets[0x101] ?? []).first?.pts)
        #expect(secondAudio >= 573_000 + entries[1].durationMilliseconds * 90)
        #expect((secondAudio - 519_840) % 1920 == 0)
    }
}
