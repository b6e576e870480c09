import TestSupport
import Testing

@testable import MediaProbe

@Suite("WebVTT segments", .offThePool)
struct WebVTTProbeTests {
    static func probe(_ text: String) throws(ProbeError) -> SegmentInfo {
        try MediaProbe.probeSegment(Array(text.utf8))
    }

    static func refusal(_ bytes: [UInt8]) -> String? {
        do {
            _ = try MediaProbe.probeSegment(bytes)
            return nil
        } catch {
            return error.message
        }
    }

    @Test(arguments: [
        ("X-TIMESTAMP-MAP=MPEGTS:126000,LOCAL:00:00:00.000", 126_000, 0),
        ("X-TIMESTAMP-MAP=LOCAL:00:00:01.500,MPEGTS:900000", 900_000, 1500),
        ("X-TIMESTAMP-MAP=MPEGTS:8589934591,LOCAL:01:02.003", 8_589_934_591, 62_003),
        ("X-TIMESTAMP-MAP=MPEGTS:0, LOCAL:100:00:00.000", 0, 360_000_000),
    ])
    func readsTheTimestampMap(line: String, mpegts: Int64, local: Int64) throws {
        let info = try Self.probe("WEBVTT\n\(line)\n\n00:00.000 --> 00:02.000\nHello\n")
        #expect(info.webVTTTimestampMap == WebVTTTimestampMap(mpegts: mpegts, localMilliseconds: local))
        #expect(info.startTime == MediaTime(ticks: mpegts, timescale: 90000))
        #expect(info.container == .webVTT)
    }

    @Test func withoutAMapStartsAtZeroAndHasNoMap() throws {
        for text in [
            "WEBVTT\n\n00:00.000 --> 00:02.000\nHello\n", "\u{FEFF}WEBVTT - ffmpeg\r\n\r\n", "WEBVTT",
            // A map line after the header (in a cue) is cue text, not a map.
            "WEBVTT\n\n00:00.000 --> 00:02.000\nX-TIMESTAMP-MAP=MPEGTS:5,LOCAL:00:00.000\n",
        ] {
            let info = try Self.probe(text)
            #expect(info.webVTTTimestampMap == nil)
            #expect(info.startTime == MediaTime(ticks: 0, timescale: 90000))
        }
    }

    @Test func refusesBytesThatAreNotUTF8() {
        let bytes = Array("WEBVTT\n\n00:00.000 --> 00:02.000\nCaf".utf8) + [0xE9, 0x0A]
        #expect(Self.refusal(bytes) == "WebVTT: not UTF-8 text (invalid byte sequence at byte 35)")
    }

    @Test func refusesABodyOverOneMebibyte() {
        let cue = "00:00.000 --> 00:02.000\n" + String(repeating: "a", count: 1000) + "\n\n"
        let text = "WEBVTT\n\n" + String(repeating: cue, count: 1100)
        #expect(Self.refusal(Array(text.utf8))?.hasPrefix("WebVTT: \(text.utf8.count) bytes is more than") == true)
        #expect(Self.refusal(Array(("WEBVTT\n\n" + String(repeating: cue, count: 1000)).utf8)) == nil)
    }

    @Test func refusesAMissingSignature() {
        #expect(WebVTTProbeTests.signatureRefusal("WEBVT\n\n") != nil)
        #expect(
            WebVTTProbeTests.signatureRefusal("WEBVTTX\n")
                == "WebVTT: the file does not start with the WEBVTT signature")
        #expect(WebVTTProbeTests.signatureRefusal("WEBVTT\n") == nil)
    }

    /// The probe's own check (detection already sends text without the signature elsewhere).
    static func signatureRefusal(_ text: String) -> String? {
        let bytes = Array(text.utf8)
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(ProbeError) in try WebVTTProbe.probe(buffer) }
        }
        guard case .failure(let error) = result else { return nil }
        return error.message
    }

    @Test(arguments: [
        ("MPEGTS:8589934592,LOCAL:00:00:00.000", "invalid MPEGTS value '8589934592'"),
        ("MPEGTS:-1,LOCAL:00:00:00.000", "invalid MPEGTS value '-1'"),
        ("MPEGTS:12x,LOCAL:00:00:00.000", "invalid MPEGTS value '12x'"),
        ("MPEGTS:0,LOCAL:00:00:00", "invalid LOCAL time '00:00:00'"),
        ("MPEGTS:0,LOCAL:0:00:00.000", "invalid LOCAL time '0:00:00.000'"),
        ("MPEGTS:0,LOCAL:00:60:00.000", "invalid LOCAL time '00:60:00.000'"),
        ("MPEGTS:0,LOCAL:00:00.5000", "invalid LOCAL time '00:00.5000'"),
        ("MPEGTS:0,LOCAL:00:00:00.00a", "invalid LOCAL time '00:00:00.00a'"),
        ("MPEGTS:0", "needs both MPEGTS and LOCAL"),
        ("LOCAL:00:00.000", "needs both MPEGTS and LOCAL"),
    ])
    func refusesAMalformedMap(value: String, reason: String) {
        let message = Self.refusal(Array("WEBVTT\nX-TIMESTAMP-MAP=\(value)\n\n".utf8))
        #expect(message?.contains(reason) == true, "got \(message ?? "no refusal")")
    }
}
