import LiveTimeline
import SharedBytes
import TestSupport
import Testing

/// The X-TIMESTAMP-MAP every served WebVTT segment carries, and the empty cue segment.
@Suite("WebVTT segments as served", .offThePool)
struct WebVTTSegmentTests {
    static func text(_ bytes: SharedBytes) -> String { String(decoding: bytes.array, as: UTF8.self) }

    @Test func aMissingMapIsInsertedRightAfterTheSignatureLine() {
        let pushed = SharedBytes(Array("WEBVTT - ffmpeg\n\n00:02.022 --> 00:02.821\nHello\n".utf8))
        #expect(
            Self.text(WebVTTSegment.withTimestampMap(pushed, mpegts: 126_000))
                == "WEBVTT - ffmpeg\nX-TIMESTAMP-MAP=MPEGTS:126000,LOCAL:00:00:00.000\n\n"
                + "00:02.022 --> 00:02.821\nHello\n")
        let crlf = SharedBytes(Array("\u{FEFF}WEBVTT\r\n\r\n00:01.000 --> 00:02.000\r\nHi\r\n".utf8))
        #expect(
            Self.text(WebVTTSegment.withTimestampMap(crlf, mpegts: 0))
                == "\u{FEFF}WEBVTT\r\nX-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00.000\r\n\r\n"
                + "00:01.000 --> 00:02.000\r\nHi\r\n")
        #expect(
            Self.text(WebVTTSegment.withTimestampMap(SharedBytes(Array("WEBVTT".utf8)), mpegts: 5))
                == "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:5,LOCAL:00:00:00.000\n")
    }

    @Test func aPushedMapIsKeptAndAMapInACueIsNotAHeader() {
        let mapped = SharedBytes(
            Array("WEBVTT\nX-TIMESTAMP-MAP=LOCAL:00:00:01.000,MPEGTS:900000\n\n00:01.000 --> 00:02.000\nA\n".utf8))
        #expect(WebVTTSegment.hasTimestampMap(mapped))
        #expect(WebVTTSegment.withTimestampMap(mapped, mpegts: 126_000) == mapped)
        let inCue = SharedBytes(Array("WEBVTT\n\n00:01.000 --> 00:02.000\nX-TIMESTAMP-MAP=MPEGTS:1\n".utf8))
        #expect(!WebVTTSegment.hasTimestampMap(inCue))
    }

    @Test func theEmptyCueSegmentHasOnlyTheHeader() {
        #expect(
            Self.text(WebVTTSegment.empty(mpegts: 126_000))
                == "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:126000,LOCAL:00:00:00.000\n\n")
        // CRC-32 as zlib computes it ("123456789" -> 0xCBF43926).
        #expect(WebVTTSegment.crc32(SharedBytes(Array("123456789".utf8))) == 0xCBF4_3926)
    }

    @Test func fileNumbersAreTheDigitsBeforeTheExtension() {
        #expect(WebVTTSegment.fileNumber("index7.ts") == 7)
        #expect(WebVTTSegment.fileNumber("index_vtt12.vtt") == 12)
        #expect(WebVTTSegment.fileNumber("index.m3u8") == nil)
        #expect(WebVTTSegment.fileNumber("init_0.mp4") == 0)
    }
}
