import GapFiller
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

@testable import MPEGTSWriter

/// A demuxed audio rendition pushed as MPEG-TS without video (ffmpeg's `a:0,agroup:aud`) gets silent AAC at its GAP
/// URLs, continuing its timeline, while the video rendition keeps its own filler.
@Suite("Filler for an audio-only MPEG-TS rendition", .offThePool)
struct AudioOnlyFillerTests {
    /// 2 s of silent mono AAC at 48 kHz as MPEG-TS with only an audio stream (PCR on the audio PID).
    struct AudioOnlyStream {
        var muxer = TransportStreamMuxer(
            layout: TransportStreamMuxer.Layout(
                patSection: ProgramSection.programAssociation(programNumber: 1, pmtPID: 0x1000), pmtPID: 0x1000,
                pmtSection: ProgramSection.programMap(programNumber: 1, pcrPID: 0x0101, streams: [(0x0F, 0x0101)]),
                videoPID: 0x0100, audioPID: 0x0101, pcrPID: 0x0101))
        let silence = try! SilentAACFrame(audioObjectType: 2, samplingFrequencyIndex: 3, channelConfiguration: 1)
        var nextPTS: Int64 = 126_000

        mutating func nextSegment() -> SharedBytes {
            var bytes: [UInt8] = []
            muxer.writeProgramTables(into: &bytes)
            muxer.writePCR(nextPTS - 9_000, into: &bytes)
            for _ in 0..<12 {  // 12 x 8 frames of 1024 samples: 2.048 s
                muxer.writeAudio(Array(repeating: silence.bytes, count: 8), pts: nextPTS, into: &bytes)
                nextPTS += 8 * 1920
            }
            return SharedBytes(bytes)
        }
    }

    @Test func gapURLsOfAnAudioOnlyRenditionAnswerSilenceContinuingItsTimeline() throws {
        let clock = ManualClock()
        let channel = ChannelConfiguration(
            name: "ch", renditions: [RenditionConfiguration(name: "180p"), RenditionConfiguration(name: "en")],
            window: .segments(100))
        let origin = try Origin(
            configuration: OriginConfiguration(channels: [channel]), clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        var video = try TestStreamGenerator(profile: try #require(TestSourceProfile.named("180p")), segmentDuration: 2)
        var audio = AudioOnlyStream()
        for n in 0..<8 {
            clock.advance(seconds: 2)
            _ = try origin.ingest(
                channel: "ch", rendition: "180p", fileName: "v\(n).ts", body: SharedBytes(video.nextSegment().bytes))
            let segment = audio.nextSegment()
            if n < 4 { _ = try origin.ingest(channel: "ch", rendition: "en", fileName: "a\(n).ts", body: segment) }
            origin.tick()
        }
        let entries = try #require(origin.channel(named: "ch")?.snapshot.renditions["en"]?.entries)
        let lastReal = try #require(entries.last { !$0.isGap })
        let gaps = entries.filter(\.isGap)
        #expect(gaps.count >= 3)
        let lastBytes = try #require(lastReal.bytes)
        let lastInfo = try lastBytes.withUnsafeBytes { try MediaProbe.probeSegment($0) }
        let lastEnd = lastInfo.startTime.ticks + lastInfo.duration.ticks * 90_000 / lastInfo.duration.timescale
        let filler = try #require(gaps.first?.filler, "an audio-only TS rendition gets a filler")
        let info = try filler.withUnsafeBytes { try MediaProbe.probeSegment($0) }
        #expect(info.tracks.map(\.kind) == [.audio])
        #expect(info.tracks.first?.codec == "mp4a.40.2")
        #expect(abs(info.startTime.ticks - lastEnd) <= 1920, "the silence continues the audio timeline")
        #expect(abs(info.duration.seconds - 2) < 0.05)
    }
}
