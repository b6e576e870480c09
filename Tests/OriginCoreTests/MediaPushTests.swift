import HTTPPushInput
import LiveTimeline
import MediaProbe
import OriginCore
import SharedBytes
import TestSource
import TestSupport
import Testing

/// The core's one entry point for inputs takes media-level pushes: no file name reaches it; an input's naming rules
/// (ffmpeg's, in `HTTPPushInput`) become the push's rendition, kind and sequence number.
@Suite("Inputs hand the core media-level pushes", .offThePool)
struct MediaPushTests {
    typealias Subtitled = SubtitleFollowerTests.Subtitled

    @Test func aCuePairsWithItsVideoSegmentBySequenceNumberWithoutAnyFileName() throws {
        let stream = try Subtitled()
        for _ in 0..<4 { try stream.slot() }
        func push(_ rendition: String, _ body: SharedBytes, number: Int?) throws(IngestError) -> IngestReceipt {
            try stream.origin.ingest(
                MediaPush(
                    channel: "ch", rendition: rendition, kind: .media, body: body, sequenceNumber: number,
                    label: "\(rendition) \(number ?? -1)"))
        }
        // Videos 4, 5 and 6 arrive, cues 4 and 5 never do: only the number puts cue 6 in video 6's slot rather than
        // in the next slot the subtitle rendition has not filled.
        stream.clock.advance(seconds: 2)
        var videos: [IngestReceipt] = []
        for number in 4...6 {
            videos.append(try push("180p", SharedBytes(stream.generator.nextSegment().bytes), number: number))
        }
        let cue6 = try push("180p-vtt", Subtitled.cue(6), number: 6)
        #expect(videos.map(\.msn) == [4, 5, 6])
        #expect(cue6.msn == videos[2].msn, "\(cue6.message)")
    }

    @Test func anIgnoredPushIsAnsweredAndCreatesNothing() throws {
        let stream = try Subtitled()
        let receipt = try stream.origin.ingest(
            MediaPush(
                channel: "elsewhere", rendition: "v", kind: .ignored(message: "not for the origin"),
                body: SharedBytes([1, 2, 3]), label: "x"))
        #expect(receipt.kind == .ignored)
        #expect(receipt.message == "not for the origin")
        #expect(stream.origin.channel(named: "elsewhere") == nil)
    }

    @Test func aRefusalQuotesTheInputsLabel() throws {
        let stream = try Subtitled()
        let error = #expect(throws: IngestError.self) {
            try stream.origin.ingest(
                MediaPush(
                    channel: "ch", rendition: "180p", kind: .media, body: SharedBytes([0x00, 0x01, 0x02, 0x03]),
                    label: "camera 1, frame 9"))
        }
        #expect(error?.message.contains("'camera 1, frame 9' is not MPEG-TS") == true)
    }

    @Test func ffmpegFileNamesBecomeRenditionKindAndNumber() {
        let cue = FFmpegPushNaming.push(channel: "c", rendition: "lo", fileName: "index3.vtt", body: SharedBytes([]))
        #expect(cue.rendition == "lo-vtt")
        #expect(cue.kind == .media)
        #expect(cue.sequenceNumber == 3)
        #expect(cue.label == "index3.vtt")
        let hint = FFmpegPushNaming.push(
            channel: "c", rendition: "lo", fileName: "index_vtt.m3u8", body: SharedBytes([]))
        #expect(hint.rendition == "lo-vtt")
        #expect(hint.kind == .playlistHint)
        #expect(FFmpegPushNaming.kind(ofFile: "index.m3u8") == .playlistHint)
        #expect(FFmpegPushNaming.kind(ofFile: "out.mpd") == .ignored(message: "out.mpd: DASH manifest ignored"))
        #expect(FFmpegPushNaming.rendition("lo-vtt", forFile: "index3.vtt") == "lo-vtt")
        #expect(FFmpegPushNaming.announcedContainer(ofFile: "init.mp4") == .fragmentedMP4Segment)
        #expect(FFmpegPushNaming.announcedContainer(ofFile: "index3.vtt") == nil)
        #expect(FFmpegPushNaming.streamedContainer(ofFile: "7.ts") == .mpegTS)
        #expect(FFmpegPushNaming.streamedContainer(ofFile: "c-0-1.m4s") == .fragmentedMP4Segment)
        #expect(FFmpegPushNaming.streamedContainer(ofFile: "init.mp4") == nil)
    }
}
