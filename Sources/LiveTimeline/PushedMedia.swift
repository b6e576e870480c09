package import MediaProbe
package import SharedBytes

/// A pushed media file after the probe: what the ingest loop takes. Every push is probed exactly once, before any
/// lock is taken.
package enum PushedMedia: Sendable {
    /// An fMP4 initialization section.
    case initSection(SharedBytes, InitSectionInfo)
    /// A media segment (MPEG-TS, fMP4, ADTS, WebVTT).
    case segment(SharedBytes, SegmentInfo)

    /// Probes a push that is not a playlist hint.
    /// - Parameter label: how the refusal names the push (its file name).
    /// - Parameter initSection: the rendition's current initialization section (fMP4 segments need it); nil for a
    ///   rendition that has none (or does not exist yet).
    package static func probe(
        label: String, body: SharedBytes, initSection: InitSectionInfo?
    )
        -> Result<PushedMedia, IngestError>
    {
        guard body.count > 0 else { return .failure(.notMedia("empty body")) }
        let container = body.withUnsafeBytes { MediaProbe.detectContainer($0) }
        switch container {
        case .fragmentedMP4Init: return probeInitSection(body)
        case .mpegTS, .fragmentedMP4Segment, .adts: return probeSegment(body, initSection: initSection)
        case .webVTT:
            // The probe refuses text that is not UTF-8, lacks the signature, is over 1 MiB or has a bad map.
            return probeSegment(body, initSection: nil)
        case nil:
            return .failure(
                .notMedia(
                    "'\(label)' is not MPEG-TS, fMP4, ADTS AAC or an .m3u8 playlist (first bytes: "
                        + body.withUnsafeBytes { $0.prefix(8).map { String($0, radix: 16) }.joined(separator: " ") }
                        + ")"))
        }
    }

    /// Probes bytes that must be an fMP4 initialization section.
    package static func probeInitSection(_ body: SharedBytes) -> Result<PushedMedia, IngestError> {
        let probed = body.withUnsafeBytes { raw in
            Result { () throws(ProbeError) in try MediaProbe.probeInitSection(raw) }
        }
        return probed.map { .initSection(body, $0) }.mapError {
            .unprocessable("invalid fMP4 initialization section: \($0)")
        }
    }

    /// A WebVTT segment as the origin serves it: with `X-TIMESTAMP-MAP=MPEGTS:{mpegts},LOCAL:00:00:00.000` inserted
    /// when its header has no map (see `WebVTTSegment.withTimestampMap`). A pushed map is kept and reported in
    /// `webVTTTimestampMap`; other media is returned unchanged.
    package func withWebVTTTimestampMap(mpegts: Int64) -> PushedMedia {
        guard case .segment(let bytes, var info) = self, info.container == .webVTT else { return self }
        guard info.webVTTTimestampMap == nil else { return self }
        let served = WebVTTSegment.withTimestampMap(bytes, mpegts: mpegts)
        info.byteCount = served.count
        info.webVTTTimestampMap = nil
        return .segment(served, info)
    }

    /// Probes bytes that must be a media segment.
    package static func probeSegment(
        _ body: SharedBytes, initSection: InitSectionInfo?
    )
        -> Result<PushedMedia, IngestError>
    {
        let probed = body.withUnsafeBytes { raw in
            Result { () throws(ProbeError) in try MediaProbe.probeSegment(raw, initSection: initSection) }
        }
        return probed.map { .segment(body, $0) }.mapError { .probeFailed("segment could not be probed", $0) }
    }
}
