/// Probes a WebVTT segment: checks that it is UTF-8 text of at most ``maximumByteCount`` bytes starting with the
/// `WEBVTT` signature, and reads the header's `X-TIMESTAMP-MAP` (RFC 8216 3.5) into `webVTTTimestampMap`.
/// `startTime` is the map's MPEGTS value (90 kHz) when there is a map, else 0; the duration is not derived from cues
/// and is reported as 0.
enum WebVTTProbe {
    /// The largest WebVTT segment accepted: 1 MiB (a segment's cues are a few kilobytes).
    static let maximumByteCount = 1 << 20

    static func probe(_ bytes: UnsafeRawBufferPointer) throws(ProbeError) -> SegmentInfo {
        guard bytes.count <= maximumByteCount else {
            throw ProbeError(
                "WebVTT: \(bytes.count) bytes is more than the \(maximumByteCount) bytes a segment may have")
        }
        if let offset = firstInvalidUTF8Offset(bytes) {
            throw ProbeError("WebVTT: not UTF-8 text (invalid byte sequence at byte \(offset))")
        }
        let text = String(decoding: bytes, as: UTF8.self)
        let body = text.hasPrefix("\u{FEFF}") ? text.dropFirst() : Substring(text)
        guard body.hasPrefix("WEBVTT"),
            body.dropFirst(6).first.map({ [" ", "\t", "\n", "\r", "\r\n"].contains($0) }) ?? true
        else {
            throw ProbeError("WebVTT: the file does not start with the WEBVTT signature")
        }
        var map: WebVTTTimestampMap?
        // The header: the lines after the signature line up to the first blank line.
        for line in body.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).dropFirst() {
            if line.isEmpty { break }
            guard line.hasPrefix("X-TIMESTAMP-MAP=") else { continue }
            map = try timestampMap(line.dropFirst("X-TIMESTAMP-MAP=".count))
        }
        var info = SegmentInfo(
            container: .webVTT, tracks: [TrackInfo(kind: .subtitles, codec: "wvtt", trackID: 1, timescale: 90000)],
            startTime: MediaTime(ticks: map?.mpegts ?? 0, timescale: 90000),
            duration: MediaTime(ticks: 0, timescale: 90000), startsWithKeyframe: true, byteCount: bytes.count)
        info.webVTTTimestampMap = map
        return info
    }

    /// `MPEGTS:<90 kHz time>,LOCAL:<cue time>` in either order, both required.
    static func timestampMap(_ value: Substring) throws(ProbeError) -> WebVTTTimestampMap {
        var mpegts: Int64?
        var local: Int64?
        for field in value.split(separator: ",") {
            let field = field.drop { $0 == " " }
            if field.hasPrefix("MPEGTS:") {
                guard let parsed = Int64(field.dropFirst("MPEGTS:".count)), parsed >= 0,
                    parsed < MPEGTimestamp.modulus
                else {
                    throw ProbeError(
                        "WebVTT: X-TIMESTAMP-MAP has an invalid MPEGTS value '\(field.dropFirst(7))' "
                            + "(a 33-bit count of 90 kHz ticks)")
                }
                mpegts = parsed
            } else if field.hasPrefix("LOCAL:") {
                guard let parsed = cueTimeMilliseconds(field.dropFirst("LOCAL:".count)) else {
                    throw ProbeError(
                        "WebVTT: X-TIMESTAMP-MAP has an invalid LOCAL time '\(field.dropFirst(6))' "
                            + "(hh:mm:ss.mmm or mm:ss.mmm)")
                }
                local = parsed
            }
        }
        guard let mpegts, let local else {
            throw ProbeError(
                "WebVTT: X-TIMESTAMP-MAP needs both MPEGTS and LOCAL, e.g. MPEGTS:126000,LOCAL:00:00:00.000")
        }
        return WebVTTTimestampMap(mpegts: mpegts, localMilliseconds: local)
    }

    /// A WebVTT timestamp: `hh:mm:ss.ttt` (two or more hour digits) or `mm:ss.ttt`, minutes and seconds below 60.
    static func cueTimeMilliseconds(_ text: Substring) -> Int64? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(parts.count), let secondsPart = parts.last else { return nil }
        let secondsFields = secondsPart.split(separator: ".", omittingEmptySubsequences: false)
        func number(_ digits: Substring, count: ClosedRange<Int>) -> Int64? {
            guard count.contains(digits.count), digits.allSatisfy({ ("0"..."9").contains($0) }) else { return nil }
            return Int64(digits)
        }
        guard secondsFields.count == 2, let seconds = number(secondsFields[0], count: 2...2), seconds < 60,
            let milliseconds = number(secondsFields[1], count: 3...3),
            let minutes = number(parts[parts.count - 2], count: 2...2), minutes < 60
        else { return nil }
        var hours: Int64 = 0
        if parts.count == 3 {
            guard let parsed = number(parts[0], count: 2...10) else { return nil }
            hours = parsed
        }
        return ((hours * 60 + minutes) * 60 + seconds) * 1000 + milliseconds
    }

    /// The offset of the first byte that is not part of a well-formed UTF-8 sequence, nil when all are.
    static func firstInvalidUTF8Offset(_ bytes: UnsafeRawBufferPointer) -> Int? {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let scalar): offset += scalar.count
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }
}
