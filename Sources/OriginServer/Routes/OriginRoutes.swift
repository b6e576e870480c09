import MicroHTTPD
import OriginCore
import SharedBytes

/// The origin's URL grammar (../shared/DESIGN.md), one line per route. A route names its methods, its pattern and
/// what the chain must do before its handler (`RouteNeeds`); its group says what every request under the first
/// segment gets (preflight, access, read-only, audit) and how an unknown path is answered.
extension OriginHTTPHandler {
    static let routes = RouteTable(
        live: RouteGroup(
            name: "live", preflight: "GET, HEAD, OPTIONS", access: .open, readOnly: true, audited: false,
            notFound: { .text(404, "unknown channel or path\n") },
            routes: liveRoutes),
        vod: RouteGroup(
            name: "vod", preflight: "GET, HEAD, OPTIONS", access: .open, readOnly: true, audited: false,
            notFound: { .text(404, "not found: try /vod/{id}/index.m3u8\n") },
            routes: [
                Route("vod.multivariant", [], "/vod/:id/:file", needs: .recording) { $0.vodMultivariant($1) },
                Route("vod.rendition", [], "/vod/:id/:rendition/:file", needs: .recording) {
                    $0.vodRenditionFile($1)
                },
            ]),
        ingest: RouteGroup(
            name: "ingest", preflight: "PUT, POST, DELETE, OPTIONS", access: .ingest, readOnly: false, audited: false,
            notFound: ingestNotFound,
            routes: [
                Route("ingest.multivariantHint", ["PUT", "POST", "DELETE"], "/ingest/:channel/:hint(*.m3u8)") {
                    $0.multivariantHint($1)
                },
                Route("ingest.push", ["PUT", "POST", "DELETE"], "/ingest/:channel/:rendition/:file(name)") {
                    $0.ingestPush($1)
                },
                // Unknown paths that still name a channel (and rendition): access is decided for them first.
                Route("ingest.unknown", [], "/ingest/:channel/:rendition/:file") { _, _ in .respond(ingestNotFound()) },
                Route("ingest.unknown", [], "/ingest/:channel/:name/:file/*more") { _, _ in .respond(ingestNotFound())
                },
                Route("ingest.unknown", [], "/ingest/:channel/:name") { _, _ in .respond(ingestNotFound()) },
            ]),
        admin: RouteGroup(
            name: "admin", preflight: "GET, POST, PATCH, DELETE, OPTIONS", access: .admin, readOnly: false,
            audited: true, notFound: { adminNotFound }, unknownChannel: { unknownAdminChannel($0) },
            routes: adminRoutes),
        status: RouteGroup(
            name: "status", preflight: "GET, HEAD, OPTIONS", access: .admin, readOnly: true, audited: false,
            notFound: { statusNotFound },
            routes: [
                Route("status.page", [], "/status") { _, _ in .respond(statusAsset(.html)) },
                Route("status.page", [], "/status/") { _, _ in .respond(statusAsset(.html)) },
                Route("status.css", [], "/status/status.css") { _, _ in .respond(statusAsset(.css)) },
                Route("status.js", [], "/status/status.js") { _, _ in .respond(statusAsset(.javaScript)) },
                Route("status.timeline", [], "/status/timeline.json") { handler, _ in
                    .respond(handler.timelineAnswer())
                },
            ]),
        peer: RouteGroup(
            name: "peer", preflight: nil, access: .open, readOnly: false, audited: false,
            notFound: { .text(404, "not found\n") },
            routes: [
                Route("peer.opening", [], "/peer/:channel/opening", needs: .reading) {
                    .respond($0.heldOpening(channel: $1["channel"]))
                },
                Route("peer.health", [], "/peer/health", needs: .reading) { handler, _ in
                    .respond(handler.peerHealth())
                },
            ]),
        health: RouteGroup(
            name: "healthz", preflight: nil, access: .open, readOnly: false, audited: false,
            notFound: { .text(404, "not found\n") },
            routes: [Route("healthz", [], "/healthz", needs: .reading) { _, _ in .respond(healthy()) }]),
        metrics: RouteGroup(
            name: "metrics", preflight: nil, access: .open, readOnly: false, audited: false,
            notFound: { .text(404, "not found\n") },
            routes: [
                Route("metrics", [], "/metrics", needs: .reading) { handler, _ in .respond(handler.metricsPage()) }
            ]
        ))

    /// `/live/{channel}/...`: every route but the media and I-frame playlists passes the playback gate; the rest of
    /// the live checks run in the chain's order (time-shift, catching up, rendition).
    static let liveRoutes: [Route] = [
        Route(
            "live.multivariant", ["GET", "HEAD"], "/live/:channel/index.m3u8",
            needs: [.channel, .playbackGate, .viewerToken, .timeShift, .caughtUp]
        ) { $0.multivariant($1) },
        Route("live.key", ["GET", "HEAD"], "/live/:channel/:file(key-*)", needs: [.channel, .playbackGate, .caughtUp]) {
            $0.keyFile($1.request, channel: $1.channel, file: $1["file"])
        },
        // Content Steering's manifest: the group's health, no media, so no playback gate (docs/content-steering.md).
        Route("live.steering", ["GET", "HEAD"], "/live/:channel/steering.json", needs: [.channel]) {
            .respond($0.steeringManifest($1))
        },
        Route("live.unknown", ["GET", "HEAD"], "/live/:channel/:file", needs: [.channel, .playbackGate, .caughtUp]) {
            _, context in .respond(.text(404, "unknown path in channel '\(context.channel.name)'\n"))
        },
        Route(
            "live.mediaPlaylist", ["GET", "HEAD"], "/live/:channel/:rendition/index.m3u8",
            needs: [.channel, .timeShift, .caughtUp, .rendition], cachedAs: .renditionVersion
        ) { $0.mediaPlaylist($1) },
        Route(
            "live.iFramePlaylist", ["GET", "HEAD"], "/live/:channel/:rendition/iframes.m3u8",
            needs: [.channel, .caughtUp, .rendition], cachedAs: .renditionVersion
        ) { $0.iFramePlaylist($1.request, channel: $1.channel, rendition: $1.rendition) },
        Route(
            "live.iFrame", ["GET", "HEAD"], "/live/:channel/:rendition/:file(iframe-*)",
            needs: [.channel, .playbackGate, .caughtUp, .rendition]
        ) { handler, context in
            handler.encryptedIFrame(
                context.request, context.snapshot, context.channel, context.rendition, context["file"])
                ?? handler.liveMedia(context)
        },
        Route(
            "live.initSection", ["GET", "HEAD"], "/live/:channel/:rendition/:file(init-*)",
            needs: [.channel, .playbackGate, .caughtUp, .rendition]
        ) { $0.initSection($1) ?? $0.liveMedia($1) },
        Route(
            "live.media", ["GET", "HEAD"], "/live/:channel/:rendition/:file",
            needs: [.channel, .playbackGate, .caughtUp, .rendition], cachedAs: .renditionMedia
        ) { $0.liveMedia($1) },
    ]

    /// `/admin/...`: the admin API (access and audit are the group's).
    static let adminRoutes: [Route] = [
        Route("admin.reload", ["POST"], "/admin/reload", wrongMethod: .json) { .respond($0.reload($1.request)) },
        // The description of this API (Sources/OriginServer/OpenAPI/admin.json), behind the same access as the API it
        // describes.
        Route("admin.openapi", ["GET", "HEAD"], "/admin/openapi.json", wrongMethod: .json) { _, _ in
            .respond(openAPIAnswer(AdminOpenAPIDocument.loaded))
        },
        Route("admin.channels", ["GET", "HEAD"], "/admin/channels", wrongMethod: .json) { handler, _ in
            .respond(handler.json(200, handler.origin.allChannels.map(handler.adminStatus)))
        },
        Route("admin.channel", ["GET", "HEAD"], "/admin/channels/:channel", wrongMethod: .json) {
            .respond($0.adminChannelStatus($1["channel"]))
        },
        Route("admin.tokens", ["POST"], "/admin/channels/:channel/tokens", wrongMethod: .json) { handler, context in
            let name = context["channel"]
            return .receiveBody(limit: adminBodyLimit) { body in handler.issuePlaybackToken(name, body) }
        },
        Route("admin.outage", ["POST"], "/admin/channels/:channel/outage", wrongMethod: .json) { handler, context in
            let name = context["channel"]
            return .receiveBody(limit: adminBodyLimit) { body in handler.outage(name, body) }
        },
        Route("admin.key", ["GET", "HEAD"], "/admin/channels/:channel/keys/:period", wrongMethod: .json) {
            .respond($0.adminPeriodKey(channel: $1["channel"], period: $1["period"]))
        },
        Route(
            "admin.markers", ["GET", "HEAD", "POST"], "/admin/channels/:channel/dateranges", needs: adminChannel,
            wrongMethod: .json
        ) { $0.markers($1) },
        Route(
            "admin.marker", ["GET", "HEAD", "PATCH"], "/admin/channels/:channel/dateranges/:id", needs: adminChannel,
            wrongMethod: .json
        ) { $0.marker($1) },
        Route(
            "admin.recordings", ["GET", "HEAD", "POST"], "/admin/channels/:channel/recordings", needs: adminChannel,
            wrongMethod: .json
        ) { $0.recordings($1) },
        Route(
            "admin.recording", ["GET", "HEAD", "DELETE"], "/admin/channels/:channel/recordings/:id",
            needs: adminChannel,
            wrongMethod: .json
        ) { $0.recording($1) },
    ]

    /// Markers and recordings: the channel first, then the method; changes wait for the group database off thread.
    static let adminChannel: RouteNeeds = [.channel, .database]

    static func ingestNotFound() -> HTTPResponse { .text(404, "ingest path is /ingest/{channel}/{rendition}/{file}\n") }

    /// `GET /admin/openapi.json`: the admin API's OpenAPI 3.1 description (docs/admin-api.md); 500 saying which file
    /// is missing when its resource bundle is not beside the binary.
    static func openAPIAnswer(_ document: Result<SharedBytes, AdminOpenAPIDocumentMissing>) -> HTTPResponse {
        switch document {
        case .success(let bytes):
            HTTPResponse(
                status: 200, headers: ["Content-Type": "application/json", "Cache-Control": "no-cache"],
                body: .bytes(bytes))
        case .failure(let missing): jsonAnswer(500, ["error": missing.description])
        }
    }

    static var adminNotFound: HTTPResponse { jsonAnswer(404, ["error": "unknown admin path"]) }

    static func unknownAdminChannel(_ name: String) -> HTTPResponse {
        jsonAnswer(404, ["error": "unknown channel '\(name)'"])
    }

    static var statusNotFound: HTTPResponse {
        jsonAnswer(404, ["error": "unknown status path: try /status or /status/timeline.json"])
    }

    static func healthy() -> HTTPResponse {
        HTTPResponse(
            status: 200, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
            body: .bytes(SharedBytes(string: "{\"status\":\"ok\"}\n")))
    }
}
