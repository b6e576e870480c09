import HLSPackaging
import LiveTimeline
public import MicroHTTPD
import OriginCore
import Persistence

/// What a route's handler is given: the request, its captures, and what the chain resolved for the route's needs.
struct RouteContext: Sendable {
    let request: HTTPRequestHead
    let captures: RouteCaptures
    /// Who the group's access check let in (nil for open groups).
    let requester: Requester?
    /// Set for routes that need `.channel`.
    fileprivate(set) var resolvedChannel: Channel?
    /// The snapshot the live routes answer from, read once after the gate (routes that need `.caughtUp`).
    fileprivate(set) var resolvedSnapshot: ChannelSnapshot?
    /// Set for routes that need `.rendition`.
    fileprivate(set) var resolvedRendition: RenditionSnapshot?
    /// The answer's `CMSD-Static` value, chosen by the chain (nil: CMSD off); handlers put it into the answers they
    /// prepare, the chain adds it to the others.
    fileprivate(set) var cmsd: String?
    /// Set for routes that need `.recording`: the finished recording `:id` names and its channel, or why none.
    fileprivate(set) var resolvedRecording: Result<(RecordingManifest, Channel), RecordingError>?
    /// Set for routes that need `.timeShift`, when the request has a query: its `start`/`end`, read once for the
    /// DVR answer and the CMSD (`.success(nil)`: neither argument).
    fileprivate(set) var timeShiftQuery: Result<DVRQuery?, DVRQueryError>?

    /// The channel of a route that needs `.channel`.
    var channel: Channel { resolvedChannel! }
    /// The snapshot of a route that needs `.caughtUp`.
    var snapshot: ChannelSnapshot { resolvedSnapshot! }
    /// The rendition of a route that needs `.rendition`.
    var rendition: RenditionSnapshot { resolvedRendition! }
    /// The recording lookup of a route that needs `.recording`.
    var recording: Result<(RecordingManifest, Channel), RecordingError> { resolvedRecording! }

    /// The capture `name` of the route's pattern ("" if the pattern has none: a table mistake tests catch).
    subscript(_ name: String) -> String { captures[name] ?? "" }
}

/// The middleware chain: every request goes through `dispatch`, which applies in one place what each route and its
/// group declare (preflight, access, methods, channel, playback gate, time-shift, catching up, rendition), runs the
/// handler, and then adds CORS headers and counts the answer (`finish`), records admin changes in the audit log and
/// moves database work off the libmicrohttpd thread. Handlers only choose their answer.
extension OriginHTTPHandler {
    public func handle(_ request: HTTPRequestHead) -> HTTPRequestAction {
        guard let segments = request.decodedPathSegments() else {
            let reason = "malformed request path: invalid percent-encoding, UTF-8, control character or dot segment"
            // The admin API answers JSON, also for a path it cannot read (its OpenAPI description, docs/admin-api.md).
            if request.path.hasPrefix("/admin/") { return finished(Self.jsonAnswer(400, ["error": reason])) }
            return finished(.text(400, reason + "\n"))
        }
        guard !segments.isEmpty else { return finished(.text(404, "not found: try /live/{channel}/index.m3u8\n")) }
        return dispatch(request, Self.routes.resolve(method: request.method, segments))
    }

    /// Runs the chain for a resolved request. `channel`: already looked up by the caller (the fast path).
    func dispatch(
        _ request: HTTPRequestHead, _ resolution: RouteResolution, channel: Channel? = nil
    ) -> HTTPRequestAction {
        let group: RouteGroup
        switch resolution {
        case .unknownGroup: return finished(.text(404, "not found\n"))
        case .unknownPath(let known), .route(let known, _, _, _): group = known
        }
        if request.method == "OPTIONS", let methods = group.preflight {
            // A route that names its methods allows those (`Allow` says what the target takes, RFC 9110 10.2.1).
            if case .route(_, let route, _, _) = resolution, !route.methods.isEmpty {
                return finished(preflight(methods: route.allowed))
            }
            return finished(preflight(methods: methods))
        }
        var requester: Requester?
        switch group.access {
        case .open: break
        case .admin:
            switch adminAuthorization(request) {
            case .failure(let refusal): return refuse(request, refusal.response)
            case .success(let who): requester = who
            }
        case .ingest:
            var captures: RouteCaptures?
            if case .route(_, _, let matched, _) = resolution { captures = matched }
            switch ingestAuthorization(request, channel: captures?.channel, rendition: captures?.rendition) {
            case .failure(let refusal): return refuse(request, refusal.response)
            case .success(let who): requester = who
            }
        }
        if group.readOnly, let refused = onlyReading(request) { return refuse(request, refused) }
        var action: HTTPRequestAction
        var needs: RouteNeeds = []
        switch resolution {
        case .unknownGroup, .unknownPath:
            action = .respond(group.notFound())
            action = Self.withCMSD(
                action,
                cmsdStatic(group: group, captures: nil, rendition: nil, timeShift: nil, recordingChannel: nil))
        case .route(_, let route, let captures, let methodAllowed):
            needs = route.needs
            var context = RouteContext(
                request: request, captures: captures, requester: requester, resolvedChannel: channel)
            let early = prepare(route, group, methodAllowed: methodAllowed, &context)
            // CMCD counts only requests past the playback gate: a client without a valid token moves no figures.
            if let channel = context.resolvedChannel, early?.isGateRefusal != true { noteCMCD(request, channel: channel) }
            context.cmsd = cmsdStatic(
                group: group, captures: captures, rendition: context.resolvedRendition,
                timeShift: (try? context.timeShiftQuery?.get()) ?? nil,
                recordingChannel: try? context.resolvedRecording?.get().1)
            switch early {
            case .gateRefused(let refusal): return .respond(Self.withCMSD(refusal, context.cmsd))
            case .answer(let answer): action = answer
            case nil: action = route.handler(self, context)
            }
            action = Self.withCMSD(action, context.cmsd)
        }
        action = finish(action)
        if group.audited, let requester, request.method != "GET", request.method != "HEAD" {
            action = audited(action, "\(request.method) \(request.path)", by: requester)
        }
        if needs.contains(.database), configuration.databaseURL != nil { action = offThread(action) }
        return action
    }

    /// Why the chain answers before the handler.
    private enum EarlyAnswer {
        /// A refused playback token: its 403, already complete and counted only as a playback refusal.
        case gateRefused(HTTPResponse)
        case answer(HTTPRequestAction)

        var isGateRefusal: Bool {
            if case .gateRefused = self { return true }
            return false
        }
    }

    /// The route's needs, in order; nil when the handler is to answer (`context` filled in).
    private func prepare(
        _ route: Route, _ group: RouteGroup, methodAllowed: Bool, _ context: inout RouteContext
    ) -> EarlyAnswer? {
        let request = context.request
        if route.needs.contains(.recording) {
            let id = context["id"]
            context.resolvedRecording = Result { () throws(RecordingError) in try origin.finishedRecording(id: id) }
        }
        if route.needs.contains(.timeShift), !request.query.isEmpty {
            context.timeShiftQuery = Result { () throws(DVRQueryError) in try DVRQuery.parse(request.query) }
        }
        if route.needs.contains(.channel), context.resolvedChannel == nil {
            let name = context.captures.channel ?? ""
            guard let channel = origin.channel(named: name) else {
                return .answer(.respond(group.unknownChannel(name)))
            }
            context.resolvedChannel = channel
        }
        if route.needs.contains(.reading) {
            if let refused = onlyReading(request) { return .answer(.respond(refused)) }
        } else if !methodAllowed {
            switch route.wrongMethod {
            case .text: return .answer(.respond(methodNotAllowed(request, allowed: route.allowed)))
            case .json:
                var response = json(
                    405, ["error": "method \(request.method) not allowed on this admin path; allowed: \(route.allowed)"]
                )
                response.headers.append(name: "Allow", value: route.allowed)
                return .answer(.respond(response))
            }
        }
        if route.needs.contains(.playbackGate), let channel = context.resolvedChannel {
            switch playbackGate(request, channel: channel, viewerToken: route.needs.contains(.viewerToken)) {
            case .pass: break
            case .refused(let refusal): return .gateRefused(refusal)
            case .answer(let answer): return .answer(.respond(answer))
            }
        }
        if route.needs.contains(.timeShift), let query = context.timeShiftQuery, let channel = context.resolvedChannel,
            let answer = dvr(request, query: query, channel: channel, rendition: context.captures.rendition)
        {
            return .answer(answer)
        }
        if route.needs.contains(.caughtUp), let channel = context.resolvedChannel {
            let snapshot = channel.snapshot
            if snapshot.catchingUp, context.captures.segments.last?.hasSuffix(".m3u8") == true {
                // Its playlists still show the window of before the restart: a player must ask a peer (a CDN tier
                // passes the request on, as for any 503), or again in a second.
                return .answer(
                    .respond(
                        Self.retryLater(
                            "channel '\(channel.name)' is catching up with its peers after a restart: try again in a second"
                        )))
            }
            context.resolvedSnapshot = snapshot
        }
        if route.needs.contains(.rendition), let channel = context.resolvedChannel {
            let name = context.captures.rendition ?? ""
            guard let rendition = (context.resolvedSnapshot ?? channel.snapshot).renditions[name] else {
                return .answer(.respond(.text(404, "unknown rendition '\(name)' of channel '\(channel.name)'\n")))
            }
            context.resolvedRendition = rendition
        }
        return nil
    }

    /// `action` with the headers every answer carries and counted in `hlsorigin_http_responses_total`: answers now,
    /// and answers once a body is in. Suspended and streamed requests finish their answers where they are given.
    func finish(_ action: HTTPRequestAction) -> HTTPRequestAction {
        switch action {
        case .respond(let response): return .respond(finish(response))
        case .respondPrepared(let prepared):
            metrics.count(status: prepared.status)
            return action
        case .receiveBody(let limit, let complete):
            return .receiveBody(limit: limit) { [self] body in finish(complete(body)) }
        case .suspend, .streamBody, .receiveBodyThenSuspend: return action
        }
    }

    /// `action` with `CMSD-Static: value` if it answers now and carries none (prepared answers carry theirs).
    static func withCMSD(_ action: HTTPRequestAction, _ value: String?) -> HTTPRequestAction {
        guard let value, case .respond(let response) = action else { return action }
        return .respond(withCMSD(response, value))
    }

    /// A response answered at once, finished (CORS, counted).
    func finished(_ response: HTTPResponse) -> HTTPRequestAction { .respond(finish(response)) }
}
