import ContinuousTSInput
import MicroHTTPD
import OriginCore
import SRTInput
import SharedBytes

/// `/status`: the operator's status page (HTML, CSS, JavaScript served from `StatusPageAssets`) and the JSON it
/// polls (`/status/timeline.json`, `StatusTimeline`), under the admin API's authorization (the group's, `OriginRoutes`).
extension OriginHTTPHandler {
    /// The page's assets.
    enum StatusAsset {
        case html, css, javaScript
    }

    /// `/status`, `/status/status.css`, `/status/status.js`.
    static func statusAsset(_ asset: StatusAsset) -> HTTPResponse {
        switch asset {
        case .html: Self.asset(StatusPageAssets.html, type: "text/html; charset=utf-8")
        case .css: Self.asset(StatusPageAssets.css, type: "text/css; charset=utf-8")
        case .javaScript: Self.asset(StatusPageAssets.javaScript, type: "text/javascript; charset=utf-8")
        }
    }

    /// `/status/timeline.json`.
    func timelineAnswer() -> HTTPResponse {
        HTTPResponse(
            status: 200, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
            body: .bytes(SharedBytes(string: timelineJSON())))
    }

    /// Every channel's timeline now (`StatusTimeline`): one document for the page's one request per poll.
    func timelineJSON() -> String {
        let callers = srt?.callers ?? []
        let segmenter = srtStreams
        let channels = origin.allChannels.map { channel in
            StatusTimeline.ChannelView(
                snapshot: channel.snapshot, markers: channel.allMarkers,
                srtCallers: callers.filter { $0.channel == channel.name },
                srtStreams: segmenter?.sessions(channel: channel.name) ?? [:])
        }
        return StatusTimeline.json(nowMilliseconds: origin.clock.nowMilliseconds(), channels: channels)
    }

    /// A page asset: revalidated on every load (the page changes with the binary), never stored by a shared cache.
    private static func asset(_ text: SharedBytes, type: String) -> HTTPResponse {
        HTTPResponse(
            status: 200, headers: ["Content-Type": type, "Cache-Control": "private, no-cache"], body: .bytes(text))
    }
}
