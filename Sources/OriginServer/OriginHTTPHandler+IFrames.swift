import HLSPackaging
import LiveTimeline
import MicroHTTPD
import OriginCore

/// `/live/{channel}/{rendition}/iframes.m3u8`: the I-frame playlist of a video rendition (EXT-X-I-FRAMES-ONLY),
/// published with its media playlist.
extension OriginHTTPHandler {
    /// The I-frame playlist, with the caching rules of the media playlist (`index.m3u8`) and an ETag of its own;
    /// 404 with the reason when the rendition has none.
    func iFramePlaylist(
        _ request: HTTPRequestHead, channel: Channel, rendition: RenditionSnapshot
    ) -> HTTPRequestAction {
        guard let playlist = rendition.iFramePlaylist else {
            let reason =
                if !channel.configuration.iFramePlaylists {
                    "channel '\(channel.name)' has I-frame playlists turned off"
                } else if rendition.playlist == nil {
                    "rendition '\(rendition.name)' has no media yet"
                } else {
                    "rendition '\(rendition.name)' has no video: no I-frame playlist"
                }
            return .respond(.text(404, reason + "\n"))
        }
        return servePlaylist(
            request,
            responses: live.prepared.iFramePlaylist(channel: channel.name, of: rendition, bytes: playlist),
            modifiedMilliseconds: rendition.modifiedMilliseconds, maxAge: rendition.targetDuration / 2,
            cmsd: cmsd?.staticValue(.manifest, .live)  // what the chain chooses for this route
        ) { "\"\(instanceTag)-i\(rendition.version)\"" }
    }
}
