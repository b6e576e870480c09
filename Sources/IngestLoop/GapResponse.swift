/// What the origin answers for the URL of an EXT-X-GAP entry. The playlist says EXT-X-GAP either way; this is for
/// clients that ignore the tag and fetch the segment anyway (ffmpeg 5.1, streamlink).
public enum GapResponse: String, Sendable, Hashable, CaseIterable {
    /// A filler segment that plays through: the test source's slate, or for pushed H.264/AAC MPEG-TS the rendition's
    /// last keyframe and silence, with timestamps continuing the rendition's timeline. Renditions whose media
    /// cannot be filled (fMP4, other codecs) answer 404.
    case filler
    /// A plain 404, as the HLS specification allows.
    case notFound
}
