/// Probes a WebVTT segment: only the header is read. `startTime` is the MPEGTS value of `X-TIMESTAMP-MAP` (90 kHz)
/// when present, else 0; the duration is not derived from cues and is reported as 0.
enum WebVTTProbe {
    static func probe(_ bytes: UnsafeRawBufferPointer) throws(ProbeError) -> SegmentInfo {
        let headerBytes = UnsafeRawBufferPointer(rebasing: bytes[0..<min(bytes.count, 4096)])
        let text = String(decoding: headerBytes, as: UTF8.self)
        var start: Int64 = 0
        for line in text.split(whereSeparator: \.isNewline).prefix(20) where line.hasPrefix("X-TIMESTAMP-MAP=") {
            for field in line.dropFirst("X-TIMESTAMP-MAP=".count).split(separator: ",")
            where field.hasPrefix("MPEGTS:") {
                guard let value = Int64(field.dropFirst("MPEGTS:".count)), value >= 0, value < MPEGTimestamp.modulus
                else {
                    throw ProbeError("WebVTT: X-TIMESTAMP-MAP has an invalid MPEGTS value")
                }
                start = value
            }
        }
        return SegmentInfo(
            container: .webVTT, tracks: [TrackInfo(kind: .subtitles, codec: "wvtt", trackID: 1, timescale: 90000)],
            startTime: MediaTime(ticks: start, timescale: 90000), duration: MediaTime(ticks: 0, timescale: 90000),
            startsWithKeyframe: true, byteCount: bytes.count)
    }
}
