import Markers
import MicroHTTPD
import OriginCore
import SharedBytes

/// `/admin/channels/{channel}/dateranges[/{id}]`: ad markers (EXT-X-DATERANGE). Authentication is done by
/// `admin(_:_:)` before these routes are reached. Every change is journaled before the answer is sent.
///
/// - `GET .../dateranges`: every marker of the channel, `{"channel": ..., "markers": [{"marker": ..., "tag": ...}]}`.
/// - `POST .../dateranges`: 201 with the new marker, 200 with the stored one when the same body was posted before,
///   409 when the ID names a different marker.
/// - `GET .../dateranges/{id}`: one marker.
/// - `PATCH .../dateranges/{id}`: the cue-in (`endDate`, `duration`, `scte35`); 200 with the marker.
/// Errors answer `{"error": "...", "field": "..."}`: 400 for a bad body (the field named), 404, 405, 409, 413 for a body
/// over 64 KiB, 429 for too many markers.
extension OriginHTTPHandler {
    func dateRanges(_ request: HTTPRequestHead, channel name: String, _ rest: [String]) -> HTTPRequestAction {
        guard let channel = origin.channel(named: name) else {
            return respond(json(404, ["error": "unknown channel '\(name)'"]))
        }
        switch (request.method, rest.count) {
        case ("GET", 0), ("HEAD", 0):
            return respond(json(200, MarkerListJSON(channel: name, markers: channel.allMarkers.map(MarkerJSON.init))))
        case ("POST", 0):
            return .receiveBody(limit: Self.adminBodyLimit) { [self] body in
                finish(postMarker(channel, body))
            }
        case ("GET", 1), ("HEAD", 1):
            guard let marker = channel.marker(id: rest[0]) else {
                return respond(json(404, ["error": "no marker with id '\(rest[0])' in channel '\(name)'"]))
            }
            return respond(json(200, MarkerJSON(marker: marker)))
        case ("PATCH", 1):
            let id = rest[0]
            return .receiveBody(limit: Self.adminBodyLimit) { [self] body in
                finish(patchMarker(channel, id: id, body))
            }
        case (_, 0):
            return respond(methodNotAllowed(request, allowed: "GET, HEAD, POST, OPTIONS"))
        case (_, 1):
            return respond(methodNotAllowed(request, allowed: "GET, HEAD, PATCH, OPTIONS"))
        default:
            return respond(json(404, ["error": "unknown admin path"]))
        }
    }

    private func postMarker(_ channel: Channel, _ body: SharedBytes) -> HTTPResponse {
        do throws(MarkerError) {
            let result = try channel.addMarker(try DateRangeRequestBody.marker(body.array))
            if result.changed {
                logger.info(
                    "marker added",
                    metadata: ["hls.channel": "\(channel.name)", "hls.marker": "\(result.marker.id)"])
            }
            return json(result.changed ? 201 : 200, MarkerJSON(marker: result.marker))
        } catch {
            return answer(error)
        }
    }

    private func patchMarker(_ channel: Channel, id: String, _ body: SharedBytes) -> HTTPResponse {
        do throws(MarkerError) {
            let result = try channel.closeMarker(id: id, try DateRangeRequestBody.patch(body.array))
            if result.changed {
                logger.info("marker closed", metadata: ["hls.channel": "\(channel.name)", "hls.marker": "\(id)"])
            }
            return json(200, MarkerJSON(marker: result.marker))
        } catch {
            return answer(error)
        }
    }
}
