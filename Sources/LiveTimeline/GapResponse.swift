/// What the origin answers for the URL of an EXT-X-GAP entry. The playlist says EXT-X-GAP either way; this is for
/// clients that ignore the tag and fetch the segment anyway (ffmpeg 5.1, streamlink).
public enum GapResponse: String, Sendable, Hashable, CaseIterable {
    /// A filler segment that plays through: the test source's slate, or for pushed media the rendition's last
    /// keyframe and AAC silence, with timestamps continuing the rendition's timeline (MPEG-TS with H.264 or HEVC;
    /// fMP4 with H.264 or HEVC, decodable with the rendition's init section). Renditions whose media cannot be
    /// filled (other codecs, IMSC1 subtitles) answer 404.
    case filler
    /// A plain 404, as the HLS specification allows.
    case notFound
}
