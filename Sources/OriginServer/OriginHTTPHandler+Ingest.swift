import IngestLoop
import MicroHTTPD
import OriginCore
import SharedBytes

/// `/ingest/{channel}/{rendition}/{file}`: what `ffmpeg -f hls -method PUT` sends.
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
        switch request.method {
        case "PUT", "POST":
            let limit = configuration.origin.ingest.maxSegmentBytes
            return .receiveBody(limit: limit) { [self] body in
                do throws(IngestError) {
                    let receipt = try origin.ingest(channel: channel, rendition: rendition, fileName: file, body: body)
                    return finish(Self.answer(receipt))
                } catch {
                    return finish(Self.answer(error))
                }
            }
        case "DELETE":
            // The origin owns retention: encoders' deletes are accepted and ignored.
            return respond(HTTPResponse(status: 204))
        default:
            return respond(methodNotAllowed(request, allowed: allowed))
        }
    }

    /// `/ingest/{channel}/{name}.m3u8`: the encoder's multivariant playlist, a hint of the channel's groups.
    private func multivariantHint(_ request: HTTPRequestHead, channel: String, allowed: String) -> HTTPRequestAction {
        switch request.method {
        case "PUT", "POST":
            // Read up to the segment limit, so a hint over `MultivariantHint.maxBytes` gets a 400 saying so.
            let limit = configuration.origin.ingest.maxSegmentBytes
            return .receiveBody(limit: limit) { [self] body in
                do throws(IngestError) {
                    return finish(Self.answer(try origin.ingestMultivariantHint(channel: channel, body: body)))
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
