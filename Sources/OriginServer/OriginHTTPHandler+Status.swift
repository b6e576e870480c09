import MicroHTTPD
import OriginCore
import SharedBytes

/// `/status`: the operator's status page (HTML, CSS, JavaScript served from `StatusPageAssets`) and the JSON it
/// polls (`/status/timeline.json`, `StatusTimeline`), under the admin API's authorization (`adminRefusal`).
extension OriginHTTPHandler {
    func statusPage(_ request: HTTPRequestHead, _ path: [String]) -> HTTPRequestAction {
        if request.method == "OPTIONS" { return respond(preflight(methods: "GET, HEAD, OPTIONS")) }
        if let refusal = adminRefusal(request) { return refuse(request, refusal) }
        if let refused = onlyReading(request) { return refuse(request, refused) }
        switch path {
        case [], [""]:
            return respond(Self.asset(StatusPageAssets.html, type: "text/html; charset=utf-8"))
        case ["status.css"]:
            return respond(Self.asset(StatusPageAssets.css, type: "text/css; charset=utf-8"))
        case ["status.js"]:
            return respond(Self.asset(StatusPageAssets.javaScript, type: "text/javascript; charset=utf-8"))
        case ["timeline.json"]:
            return respond(
                HTTPResponse(
                    status: 200, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
                    body: .bytes(SharedBytes(string: timelineJSON()))))
        default:
            return respond(json(404, ["error": "unknown status path: try /status or /status/timeline.json"]))
        }
    }

    /// Every channel's timeline now (`StatusTimeline`): one document for the page's one request per poll.
    func timelineJSON() -> String {
        let channels = origin.allChannels.map {
            StatusTimeline.ChannelView(snapshot: $0.snapshot, markers: $0.allMarkers)
        }
        return StatusTimeline.json(nowMilliseconds: origin.clock.nowMilliseconds(), channels: channels)
    }

    /// A page asset: revalidated on every load (the page changes with the binary), never stored by a shared cache.
    private static func asset(_ text: SharedBytes, type: String) -> HTTPResponse {
        HTTPResponse(
            status: 200, headers: ["Content-Type": type, "Cache-Control": "private, no-cache"], body: .bytes(text))
    }
}
