import IngestLoop
import MicroHTTPD
import OriginCore
import SharedBytes

/// `/ingest/{channel}/{rendition}/{file}`: what `ffmpeg -f hls -method PUT` sends, and the streamed POSTs of
/// `ffmpeg -f segment` and PUTs of `ffmpeg -f dash -streaming 1` (docs/low-latency.md); `.mpd` manifests are
/// answered 204 and ignored.
extension OriginHTTPHandler {
    func ingest(_ request: HTTPRequestHead, _ path: [String]) -> HTTPRequestAction {
        let allowed = "PUT, POST, DELETE, OPTIONS"
        if request.method == "OPTIONS" { return respond(preflight(methods: allowed)) }
        if let token = configuration.ingestToken, !Self.bearerMatches(request, token: token) {
            return refuse(request, Self.unauthorized("ingest requires a valid bearer token"))
        }
        if path.count == 2, path[1].hasSuffix(".m3u8"), path[1].utf8.count <= 255 {
            return multivariantHint(request, channel: path[0], allowed: allowed)
        }
        guard path.count == 3, !path[2].isEmpty, path[2].utf8.count <= 255 else {
            return refuse(request, .text(404, "ingest path is /ingest/{channel}/{rendition}/{file}\n"))
        }
        let (channel, rendition, file) = (path[0], path[1], path[2])
        if request.method == "PUT" || request.method == "POST" {
            origin.announcePush(channel: channel, rendition: rendition, fileName: file)
            // A media segment for a Low-Latency channel is cut into parts while its body arrives.
            let limit = configuration.origin.ingest.maxSegmentBytes
            do throws(IngestError) {
                if let push = try origin.beginStreamingPush(channel: channel, rendition: rendition, fileName: file) {
                    return .streamBody(limit: limit, receiver: StreamingIngest(push: push, handler: self))
                }
            } catch  where error.reason == .concurrentPush {
                // The previous push may only not have been read to its end yet: wait for it (StreamingIngest).
                let waiting = StreamingIngest(
                    channel: channel, rendition: rendition, fileName: file, refusal: error, handler: self)
                return .streamBody(limit: limit, receiver: waiting)
            } catch {
                return .streamBody(limit: limit, receiver: StreamingIngest(refusal: error, handler: self))
            }
        }
        return push(request, allowed: allowed) { [self] body throws(IngestError) in
            try origin.ingest(channel: channel, rendition: rendition, fileName: file, body: body)
        }
    }

    /// `/ingest/{channel}/{name}.m3u8`: the encoder's multivariant playlist, a hint of the channel's groups.
    private func multivariantHint(_ request: HTTPRequestHead, channel: String, allowed: String) -> HTTPRequestAction {
        // Read up to the segment limit, so a hint over `MultivariantHint.maxBytes` gets a 400 saying so.
        push(request, allowed: allowed) { [self] body throws(IngestError) in
            try origin.ingestMultivariantHint(channel: channel, body: body)
        }
    }

    /// One push: PUT/POST bodies (up to the segment limit) go to `accept` and its receipt or refusal is answered;
    /// DELETE is accepted and ignored (the origin owns retention); other methods get 405.
    private func push(
        _ request: HTTPRequestHead, allowed: String,
        accept: @escaping @Sendable (SharedBytes) throws(IngestError) -> IngestReceipt
    ) -> HTTPRequestAction {
        switch request.method {
        case "PUT", "POST":
            return .receiveBody(limit: configuration.origin.ingest.maxSegmentBytes) { [self] body in
                do throws(IngestError) {
                    return finish(Self.answer(try accept(body)))
                } catch {
                    return finish(Self.answer(error))
                }
            }
        case "DELETE":
            return respond(HTTPResponse(status: 204))
        default:
            return respond(methodNotAllowed(request, allowed: allowed))
        }
    }
}
