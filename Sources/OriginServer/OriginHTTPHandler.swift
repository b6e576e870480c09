import Foundation
import HLSPlaylist
import Logging
import MicroHTTPD
import OriginCore
import PeerRepair
import SharedBytes

/// Routes every request of the origin: `/live` (players and CDNs), `/ingest` (encoders), `/admin` and `/status`
/// (operators), `/healthz` and `/metrics`. Every answer, errors included, carries CORS headers; errors carry a short text or JSON
/// body that says what is wrong.
public final class OriginHTTPHandler: HTTPRequestHandler {
    let origin: Origin
    let configuration: ServerConfiguration
    let metrics: RequestMetrics
    let logger: Logger
    /// Distinguishes validators of this process from those of an earlier run.
    let instanceTag: String
    /// Admin calls that wait for the group database, off the libmicrohttpd threads.
    let databaseCalls = DatabaseCalls()
    /// Per-thread prepared answers of plain `/live` GETs (see `handlePlain(_:)`).
    let liveCache = LiveAnswerCache()
    /// Prepared `/live` answers and gzip forms of the published playlist versions and segments, shared by threads.
    let preparedLive = LiveResponseStore()
    /// Prepared Low-Latency playlist forms (delta updates, blocking answers), shared by threads.
    let lowLatencyAnswers = LowLatencyAnswerStore()
    /// Rendered blocks of DVR playlists (`?start=`), shared by threads.
    let dvrBlocks = DVRPlaylistCache()
    /// Gzip forms of recent DVR playlists.
    let dvrGzip = DVRGzipCache()
    /// Refused playback requests by channel and reason.
    let playbackRefusals = PlaybackRefusals()
    /// The tokens in force and what each grants (replaced by a reload).
    let access: AccessControl
    /// Pushes and admin requests refused for their credential or a limit, by route and reason.
    let refusals = RefusalCounts()
    /// Admin actions and refusals, with who and from where: the origin's audit trail (one refusal rate per client
    /// address for the handler's refusals and the core's).
    var audit: AuditLog { origin.audit }

    /// Slot repair from the redundancy group's peers (its statistics are in `/metrics`); nil without peers.
    let peerRepairer: PeerRepairer?
    /// `POST /admin/reload`; nil: the route answers 409.
    let reloader: ConfigurationReloader?

    /// Creates the handler.
    /// - Parameters:
    ///   - access: the tokens in force, shared with the reloader; nil: those of `configuration`, never reloaded.
    public init(
        origin: Origin, configuration: ServerConfiguration, metrics: RequestMetrics, peerRepairer: PeerRepairer? = nil,
        reloader: ConfigurationReloader? = nil, access: AccessControl? = nil, logger: Logger
    ) {
        self.origin = origin
        self.access = access ?? AccessControl(configuration)
        self.peerRepairer = peerRepairer
        self.reloader = reloader
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        self.instanceTag = String(UInt32.random(in: .min ... .max), radix: 36)
    }

    public func handle(_ request: HTTPRequestHead) -> HTTPRequestAction {
        guard let segments = request.decodedPathSegments() else {
            return refuse(
                request,
                .text(
                    400,
                    "malformed request path: invalid percent-encoding, UTF-8, control character or dot segment\n"))
        }
        guard let first = segments.first else {
            return refuse(request, .text(404, "not found: try /live/{channel}/index.m3u8\n"))
        }
        let rest = segments.dropFirst()
        switch first {
        case "live":
            if let refused = onlyReading(request) { return refuse(request, refused) }
            return live(request, rest)
        case "vod":
            if let refused = onlyReading(request) { return refuse(request, refused) }
            return vod(request, rest)
        case "ingest": return ingest(request, Array(rest))
        case "admin": return admin(request, Array(rest))
        case "status": return statusPage(request, Array(rest))
        case "peer" where rest.count == 2 && rest.last == "opening":
            return respond(onlyReading(request) ?? heldOpening(channel: rest.first!))
        case "healthz" where rest.isEmpty:
            return respond(
                onlyReading(request)
                    ?? HTTPResponse(
                        status: 200, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
                        body: .bytes(SharedBytes(string: "{\"status\":\"ok\"}\n"))))
        case "metrics" where rest.isEmpty:
            return respond(
                onlyReading(request)
                    ?? HTTPResponse(
                        status: 200,
                        headers: [
                            "Content-Type": "text/plain; version=0.0.4; charset=utf-8", "Cache-Control": "no-store",
                        ],
                        body: .bytes(
                            SharedBytes(
                                string: MetricsExposition.render(
                                    origin: origin, requests: metrics, playbackRefusals: playbackRefusals,
                                    refusals: refusals, peerRepairer: peerRepairer)
                                    + liveCache.exposition))))
        default:
            return refuse(request, .text(404, "not found\n"))
        }
    }

    /// `GET /peer/{channel}/opening`: the opening the channel holds for its redundancy group's agreement, as peers
    /// ask for it (`PeerRepairer`, docs/redundancy.md); 404 when none is held. Never cached.
    private func heldOpening(channel name: String) -> HTTPResponse {
        guard let channel = origin.channel(named: name) else { return .text(404, "unknown channel '\(name)'\n") }
        guard let held = channel.heldOpening else { return .text(404, "channel '\(name)' holds no opening\n") }
        return HTTPResponse(
            status: 200, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
            body: .bytes(SharedBytes(string: held.candidate.peerAnswer)))
    }

    /// The fast path of players and CDNs: a plain GET or HEAD under `/live` is answered from this thread's cache of
    /// prepared answers while the channel has not published since; otherwise it takes the normal route (with the
    /// request head rebuilt from what a plain request has) and a prepared answer is kept for the next time.
    public func handlePlain(_ request: PlainRequest) -> HTTPRequestAction? {
        guard request.path.starts(with: "/live/".utf8) else { return nil }
        let gzip = request.acceptEncoding.map(ContentCoding.acceptsGzip(value:)) ?? false
        if let cached = liveCache.lookup(request, gzip: gzip) { return respond(cached) }
        let head = request.makeHead()
        guard let segments = head.decodedPathSegments(), segments.first == "live" else { return nil }
        // Read before the route reads the snapshot: if a newer one is published meanwhile, the entry is only
        // taken for stale at its first use.
        let channel = segments.count > 1 ? origin.channel(named: segments[1]) : nil
        // A protected channel's answers depend on the token in the query: only its media and I-frame playlists
        // (the same for every viewer) may be answered and kept here; the rest is refused by the normal route.
        if let channel, channel.configuration.playback != nil, !Self.isOpenPlaylist(segments.dropFirst(2)) {
            return nil
        }
        let validity = channel.map { Self.answerValidity(of: segments, channel: $0) }
        let action = live(head, segments.dropFirst())
        if case .respondPrepared(let shared) = action, let validity {
            return .respondPrepared(liveCache.store(request, gzip: gzip, validity: validity, shared: shared))
        }
        return action
    }

    /// How long the answer to `/live/{channel}/...` (`segments`, from "live") holds, read before the route reads
    /// the snapshot: media playlists per rendition version, segments `{msn}.{ext}` and parts `{msn}.{part}.{ext}`
    /// while their MSN is retained, everything else per channel snapshot version.
    static func answerValidity(of segments: [String], channel: Channel) -> LiveAnswerCache.Validity {
        let snapshotVersion = LiveAnswerCache.Validity.snapshot(channel, channel.publishedVersion)
        guard segments.count == 4, let versions = channel.versions(ofRendition: segments[2]) else {
            return snapshotVersion
        }
        let file = segments[3]
        if file == "index.m3u8" || file == "iframes.m3u8" { return .playlist(versions, versions.version) }
        if let (msn, _) = segmentName(file) { return .segment(versions, msn: msn) }
        if let (position, _) = partName(file) { return .part(versions, msn: position.msn) }
        return snapshotVersion
    }

    /// Prunes the prepared `/live` answers to the channels' latest snapshots every `interval` until the task is
    /// cancelled, so a segment's prepared answer goes soon after the segment leaves retention even if no one asks.
    func prunePreparedAnswers(every interval: Duration = .seconds(1)) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            for channel in origin.allChannels { preparedLive.prune(to: channel.snapshot) }
        }
    }

    /// Answers a refused request at once. Its body, if any, is never read: MicroHTTPD sends the answer before it
    /// with `Connection: close` and closes the connection, so a client without a token cannot hold a connection by
    /// trickling a body it was refused (an encoder sees the 4xx if it reads the answer before it has sent its
    /// whole body, as it does when it waits for `100 Continue` or its body fits the socket buffers).
    func refuse(_ request: HTTPRequestHead, _ response: HTTPResponse) -> HTTPRequestAction {
        respond(response)
    }

    /// Headers on every answer, also those MicroHTTPD builds itself (configure `HTTPServerConfiguration.standardHeaders`).
    public static let standardHeaders: HTTPHeaders = [
        "Access-Control-Allow-Origin": "*",
        "Access-Control-Expose-Headers": "Content-Length, Content-Range, ETag, Age, Date",
    ]

    /// Adds the headers every answer carries and counts it.
    func finish(_ response: HTTPResponse) -> HTTPResponse {
        let response = Self.completed(response)
        metrics.count(status: response.status)
        return response
    }

    /// `response` with the headers every answer carries (what `finish` sends, without counting it).
    static func completed(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        for (name, value) in Self.standardHeaders where !response.headers.contains(name) {
            response.headers.append(name: name, value: value)
        }
        if response.status >= 400, !response.headers.contains("Cache-Control") {
            response.headers.append(name: "Cache-Control", value: "no-store")
        }
        return response
    }

    /// Sends a response prepared earlier (its headers already complete) and counts it.
    func respond(_ prepared: PreparedResponse) -> HTTPRequestAction {
        metrics.count(status: prepared.status)
        return .respondPrepared(prepared)
    }

    func respond(_ response: HTTPResponse) -> HTTPRequestAction { .respond(finish(response)) }

    /// 405 unless GET/HEAD; OPTIONS answers a CORS preflight.
    func onlyReading(_ request: HTTPRequestHead) -> HTTPResponse? {
        switch request.method {
        case "GET", "HEAD": return nil
        case "OPTIONS": return preflight(methods: "GET, HEAD, OPTIONS")
        default: return methodNotAllowed(request, allowed: "GET, HEAD, OPTIONS")
        }
    }

    func preflight(methods: String) -> HTTPResponse {
        HTTPResponse(
            status: 204,
            headers: [
                "Access-Control-Allow-Methods": methods,
                "Access-Control-Allow-Headers": "Range, Authorization, Content-Type, If-None-Match, If-Modified-Since",
                "Access-Control-Max-Age": "86400", "Allow": methods, "Cache-Control": "public, max-age=86400",
            ])
    }

    func methodNotAllowed(_ request: HTTPRequestHead, allowed: String) -> HTTPResponse {
        var response = HTTPResponse.text(405, "method \(request.method) not allowed here; allowed: \(allowed)\n")
        response.headers.append(name: "Allow", value: allowed)
        return response
    }

    static func unauthorized(_ message: String) -> HTTPResponse {
        var response = HTTPResponse.text(401, message + "\n")
        response.headers.append(name: "WWW-Authenticate", value: "Bearer realm=\"hlsorigin\"")
        return response
    }
}
