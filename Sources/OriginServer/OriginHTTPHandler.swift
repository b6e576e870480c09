public import ContinuousTSInput
import Foundation
import HLSPlaylist
import LiveTimeline
public import Logging
public import MicroHTTPD
public import OriginCore
public import PeerRepair
public import SRTInput
import SharedBytes
public import TestSourceInput

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
    /// The caches of the live and playback routes (the fast path's among them).
    let live = LiveRouteCaches()
    /// The caches of the time-shift routes (DVR, VOD).
    let timeShift = TimeShiftRouteCaches()
    /// Refused playback requests by channel and reason.
    let playbackRefusals = PlaybackRefusals()
    /// The tokens in force and what each grants (replaced by a reload).
    let access: AccessControl
    /// Pushes and admin requests refused for their credential or a limit, by route and reason.
    let refusals = RefusalCounts()
    /// The CMSD values this origin sends (nil: `delivery.cmsd: false`).
    let cmsd: CMSDHeaders?
    /// CMCD read from players' requests, per channel.
    let cmcd = CMCDStatistics()
    /// Admin actions and refusals, with who and from where: the origin's audit trail (one refusal rate per client
    /// address for the handler's refusals and the core's).
    var audit: AuditLog { origin.audit }

    /// Content Steering's view of the group's health (`steering:`); its monitor is nil without steering.
    public let steering = SteeringMonitorSlot()
    /// Slot repair from the redundancy group's peers (its statistics are in `/metrics`); nil without peers.
    let peerRepairer: PeerRepairer?
    /// The built-in test source (`POST /admin/channels/{channel}/outage` reaches its feeds); nil: none runs.
    let testSource: TestSourceInput?
    /// `POST /admin/reload`; nil: the route answers 409.
    let reloader: ConfigurationReloader?
    /// The SRT input (`ingest.srt`): its callers are in the channel status and `/metrics`; nil: none.
    let srt: SRTListener?
    /// The segmenter the SRT input feeds: its sessions (by rendition) are in the channel status; nil: no SRT input.
    let srtStreams: ContinuousTSIngest?

    /// Creates the handler.
    /// - Parameters:
    ///   - access: the tokens in force, shared with the reloader; nil: those of `configuration`, never reloaded.
    public init(
        origin: Origin, configuration: ServerConfiguration, metrics: RequestMetrics, peerRepairer: PeerRepairer? = nil,
        testSource: TestSourceInput? = nil, reloader: ConfigurationReloader? = nil, access: AccessControl? = nil,
        srt: SRTListener? = nil, srtStreams: ContinuousTSIngest? = nil, logger: Logger
    ) {
        self.srt = srt
        self.srtStreams = srtStreams
        self.origin = origin
        self.access = access ?? AccessControl(configuration)
        self.peerRepairer = peerRepairer
        self.testSource = testSource
        self.reloader = reloader
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        self.instanceTag = String(UInt32.random(in: .min ... .max), radix: 36)
        self.cmsd = configuration.delivery.cmsd ? CMSDHeaders(originID: configuration.delivery.originID) : nil
    }

    /// The `/metrics` page: request counts, refusals, repairs and the fast path's cache counts.
    func metricsPage() -> HTTPResponse {
        HTTPResponse(
            status: 200,
            headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8", "Cache-Control": "no-store"],
            body: .bytes(
                SharedBytes(
                    string: MetricsExposition.render(
                        origin: origin, requests: metrics, playbackRefusals: playbackRefusals, refusals: refusals,
                        peerRepairer: peerRepairer) + live.answers.exposition
                        + (srt.map(MetricsExposition.render(srt:)) ?? "")
                        + MetricsExposition.render(steering: steering, origin: origin)
                        + cmcd.exposition(
                            channels: origin.allChannels.map(\.name), now: origin.clock.nowMilliseconds()))))
    }

    /// `GET /peer/{channel}/opening`: the opening the channel holds for its redundancy group's agreement, as peers
    /// ask for it (`PeerRepairer`, docs/redundancy.md); 404 when none is held. Never cached.
    func heldOpening(channel name: String) -> HTTPResponse {
        guard let channel = origin.channel(named: name) else { return .text(404, "unknown channel '\(name)'\n") }
        guard let held = channel.heldOpening else { return .text(404, "channel '\(name)' holds no opening\n") }
        return HTTPResponse(
            status: 200, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
            body: .bytes(SharedBytes(string: held.candidate.peerAnswer)))
    }

    /// CMCD headers take a request off the fast path only when something reads them (`delivery.cmcd.metrics` or
    /// `delivery.cmcd.log`).
    public var readsCMCDHeaders: Bool { configuration.delivery.cmcdMetrics || configuration.delivery.cmcdLog }

    /// The fast path of players and CDNs: a plain GET or HEAD under `/live` is answered from this thread's cache of
    /// prepared answers while the channel has not published since; otherwise it takes the normal route (with the
    /// request head rebuilt from what a plain request has) and a prepared answer is kept for the next time.
    public func handlePlain(_ request: PlainRequest) -> HTTPRequestAction? {
        guard request.path.starts(with: "/live/".utf8) else { return nil }
        let gzip = request.acceptEncoding.map(ContentCoding.acceptsGzip(value:)) ?? false
        if let cached = live.answers.lookup(request, gzip: gzip) {
            metrics.count(status: cached.status)
            return .respondPrepared(cached)
        }
        let head = request.makeHead()
        guard let segments = head.decodedPathSegments(), segments.first == "live" else { return nil }
        let resolution = Self.routes.resolve(method: head.method, segments)
        guard case .route(_, let route, let captures, _) = resolution,
            let channel = captures.channel.flatMap({ origin.channel(named: $0) })
        else { return dispatch(head, resolution) }
        // A protected channel's answers depend on the token in the query: only its media and I-frame playlists
        // (the same for every viewer) may be answered and kept here; the rest is refused by the normal route.
        if channel.configuration.playback != nil, route.needs.contains(.playbackGate) { return nil }
        // Read before the route reads the snapshot: if a newer one is published meanwhile, the entry is only
        // taken for stale at its first use.
        let validity = Self.answerValidity(route.cachedAs, captures, channel: channel)
        let action = dispatch(head, resolution, channel: channel)
        if case .respondPrepared(let shared) = action {
            return .respondPrepared(live.answers.store(request, gzip: gzip, validity: validity, shared: shared))
        }
        return action
    }

    /// How long the answer of a `/live` route holds, read before the route reads the snapshot: media playlists per
    /// rendition version, segments `{msn}.{ext}` and parts `{msn}.{part}.{ext}` while their MSN is retained,
    /// everything else per channel snapshot version.
    static func answerValidity(
        _ cachedAs: CachedAs, _ captures: RouteCaptures, channel: Channel
    ) -> LiveAnswerCache.Validity {
        let snapshotVersion = LiveAnswerCache.Validity.snapshot(channel, channel.publishedVersion)
        guard cachedAs != .channelVersion, let rendition = captures.rendition,
            let versions = channel.versions(ofRendition: rendition)
        else { return snapshotVersion }
        if cachedAs == .renditionVersion { return .playlist(versions, versions.version) }
        let file = captures.file ?? ""
        if let (msn, _) = segmentName(file) { return .segment(versions, msn: msn) }
        if let (position, _) = partName(file) { return .part(versions, msn: position.msn) }
        return snapshotVersion
    }

    /// Prunes the prepared `/live` answers to the channels' latest snapshots every `interval` until the task is
    /// cancelled, so a segment's prepared answer goes soon after the segment leaves retention even if no one asks.
    func prunePreparedAnswers(every interval: Duration = .seconds(1)) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            for channel in origin.allChannels { live.prepared.prune(to: channel.snapshot) }
        }
    }

    /// Answers a refused request at once. Its body, if any, is never read: MicroHTTPD sends the answer before it
    /// with `Connection: close` and closes the connection, so a client without a token cannot hold a connection by
    /// trickling a body it was refused (an encoder sees the 4xx if it reads the answer before it has sent its
    /// whole body, as it does when it waits for `100 Continue` or its body fits the socket buffers).
    func refuse(_ request: HTTPRequestHead, _ response: HTTPResponse) -> HTTPRequestAction {
        finished(response)
    }

    /// Headers on every answer, also those MicroHTTPD builds itself (configure `HTTPServerConfiguration.standardHeaders`).
    public static let standardHeaders: HTTPHeaders = [
        "Access-Control-Allow-Origin": "*",
        // CMSD (CTA-5006) is for players too: a cross-origin player reads only the headers listed here.
        "Access-Control-Expose-Headers": "Content-Length, Content-Range, ETag, Age, Date, CMSD-Static, CMSD-Dynamic",
    ]

    /// Adds the headers every answer carries (CMSD-Static `ot=o` unless the chain or the handler gave a more
    /// precise one) and counts it (the chain does for the answers handlers return;
    /// answers given later through a responder call it themselves).
    func finish(_ response: HTTPResponse) -> HTTPResponse {
        let response = Self.completed(Self.withCMSD(response, cmsd?.staticValue(.other, nil)))
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
                // CMCD-*: a player sending CMCD (CTA-5004) as headers, cross-origin, asks first.
                "Access-Control-Allow-Headers":
                    "Range, Authorization, Content-Type, If-None-Match, If-Modified-Since, "
                    + "CMCD-Request, CMCD-Object, CMCD-Status, CMCD-Session",
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
