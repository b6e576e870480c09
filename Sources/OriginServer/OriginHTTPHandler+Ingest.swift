import HTTPPushInput
import LiveTimeline
import Logging
import MicroHTTPD
import OriginCore
import SharedBytes

/// `/ingest/{channel}/{rendition}/{file}`: what `ffmpeg -f hls -method PUT` sends, and the streamed POSTs of
/// `ffmpeg -f segment` and PUTs of `ffmpeg -f dash -streaming 1` (docs/low-latency.md); `.mpd` manifests are
/// answered 204 and ignored.
///
/// Every push is authorized first (`AccessPolicy`, docs/security.md): with no token granting the channel, loopback
/// clients only; else a token that grants the channel (or the rendition, or every channel), from loopback too.
extension OriginHTTPHandler {
    /// The ingest group's access (`RouteGroup.Access.ingest`): the tokens that grant pushes into `channel` (and
    /// `rendition`) as the path names them; a refusal is counted and recorded in the audit log.
    func ingestAuthorization(
        _ request: HTTPRequestHead, channel: String?, rendition: String?
    ) -> Result<Requester, EarlyResponse> {
        let policy = access.policy
        switch policy.decide(request, granted: policy.ingestGrants(channel: channel, rendition: rendition)) {
        case .allowed(let who): return .success(who)
        case .refused(let reason, let who):
            return .failure(
                EarlyResponse(
                    response: accessRefusal(
                        reason, who, route: "ingest", request: request,
                        scope: Self.pushScope(channel: channel, rendition: rendition))))
        }
    }

    /// `/ingest/{channel}/{rendition}/{file}`: a segment, init section or playlist of the encoder's.
    func ingestPush(_ route: RouteContext) -> HTTPRequestAction {
        let (request, requester) = (route.request, route.requester!)
        let (channel, rendition, file) = (route["channel"], route["rendition"], route["file"])
        let context = PushContext(requester: requester, channel: channel, rendition: rendition)
        if request.method == "PUT" || request.method == "POST" {
            origin.announcePush(channel: channel, rendition: rendition, fileName: file)
            // A media segment for a Low-Latency channel is cut into parts while its body arrives.
            let limit = configuration.origin.ingest.maxSegmentBytes
            do throws(IngestError) {
                if let push = try origin.beginStreamingPush(
                    channel: channel, rendition: rendition, fileName: file, requester: requester)
                {
                    return .streamBody(
                        limit: limit, receiver: StreamingIngest(push: push, context: context, handler: self))
                }
            } catch  where error.reason == .concurrentPush {
                // The previous push may only not have been read to its end yet: wait for it (StreamingIngest).
                let waiting = StreamingIngest(fileName: file, refusal: error, context: context, handler: self)
                return .streamBody(limit: limit, receiver: waiting)
            } catch {
                return .streamBody(
                    limit: limit, receiver: StreamingIngest(refusal: error, context: context, handler: self))
            }
        }
        return push(request, context: context) { [self] body throws(IngestError) in
            try origin.ingest(channel: channel, rendition: rendition, fileName: file, body: body, requester: requester)
        }
    }

    /// `/ingest/{channel}/{name}.m3u8`: the encoder's multivariant playlist, a hint of the channel's groups.
    func multivariantHint(_ route: RouteContext) -> HTTPRequestAction {
        let context = PushContext(requester: route.requester!, channel: route["channel"], rendition: nil)
        // Read up to the segment limit, so a hint over `MultivariantHint.maxBytes` gets a 400 saying so.
        return push(route.request, context: context) { [self] body throws(IngestError) in
            try origin.ingestMultivariantHint(channel: context.channel, body: body, requester: context.requester)
        }
    }

    /// "channel 'c' rendition 'r'" for refusals.
    static func pushScope(channel: String?, rendition: String?) -> String {
        guard let channel else { return "this ingest path" }
        return "channel '\(channel)'" + (rendition.map { " rendition '\($0)'" } ?? "")
    }

    /// The answer to a request refused for its credential, counted (`hlsorigin_refusals_total`) and recorded in the
    /// audit log with who and from where. The body says why and what to configure, never a secret.
    func accessRefusal(
        _ reason: RefusalReason, _ requester: Requester, route: String, request: HTTPRequestHead, scope: String
    ) -> HTTPResponse {
        refusals.record(route: route, reason)
        audit.record(
            "\(request.method) \(request.path)", by: requester, outcome: reason.rawValue, refused: true,
            details: ["audit.route": "\(route)"])
        let admin = route == "admin"
        let what = admin ? "the admin API" : "pushes into \(scope)"
        let (status, message): (Int, String)
        switch reason {
        case .forbiddenRemote:
            let configure =
                admin
                ? "configure admin.token (or HLSORIGIN_ADMIN_TOKEN) or admin.tokens"
                : "configure ingest.token (or HLSORIGIN_INGEST_TOKEN), ingest.tokens or the channel's ingest.tokens"
            (status, message) = (
                403,
                "\(requester.address) is not a loopback client and no token grants \(what), which therefore answers "
                    + "loopback clients only: \(configure) and send Authorization: Bearer (docs/security.md)"
            )
        case .wrongToken:
            (status, message) = (403, "token '\(requester.credential)' does not grant \(what) (docs/security.md)")
        default:
            let needs =
                admin
                ? "the admin API needs a bearer token that opens it"
                : "pushes into \(scope) need a bearer token that grants them"
            (status, message) = (401, "\(needs) (Authorization: Bearer ...; docs/security.md)")
        }
        var response = admin ? json(status, ["error": message]) : .text(status, message + "\n")
        if status == 401 { response.headers.append(name: "WWW-Authenticate", value: "Bearer realm=\"hlsorigin\"") }
        return response
    }

    /// The answer to a push the core refused, finished (for `StreamingIngest`, which answers outside the chain).
    func refusedPush(_ error: IngestError, _ context: PushContext) -> HTTPResponse {
        finish(refusedPushAnswer(error, context))
    }

    /// The answer to a push the core refused; a refusal for a limit is counted and recorded in the audit log.
    func refusedPushAnswer(_ error: IngestError, _ context: PushContext) -> HTTPResponse {
        if let reason = RefusalReason(error.reason) {
            refusals.record(route: "ingest", reason)
            var details: Logger.Metadata = ["hls.channel": "\(context.channel)", "reason": "\(error.message)"]
            if let rendition = context.rendition { details["hls.rendition"] = "\(rendition)" }
            audit.record(
                "push refused", by: context.requester, outcome: reason.rawValue, refused: true, details: details)
        }
        return Self.answer(error)
    }

    /// One push: PUT/POST bodies (up to the segment limit) go to `accept` and its receipt or refusal is answered;
    /// DELETE is accepted and ignored (the origin owns retention); the route takes no other method.
    private func push(
        _ request: HTTPRequestHead, context: PushContext,
        accept: @escaping @Sendable (SharedBytes) throws(IngestError) -> IngestReceipt
    ) -> HTTPRequestAction {
        switch request.method {
        case "PUT", "POST":
            return .receiveBody(limit: configuration.origin.ingest.maxSegmentBytes) { [self] body in
                do throws(IngestError) {
                    return Self.answer(try accept(body))
                } catch {
                    return refusedPushAnswer(error, context)
                }
            }
        default:  // DELETE
            return .respond(HTTPResponse(status: 204))
        }
    }
}

/// Who pushes where, for the audit log of a push the core refuses.
struct PushContext: Sendable {
    let requester: Requester
    let channel: String
    let rendition: String?
}
