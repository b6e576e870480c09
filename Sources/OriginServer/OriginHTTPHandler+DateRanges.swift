import Logging
import Markers
import MicroHTTPD
import OriginCore
import SharedBytes

/// `/admin/channels/{channel}/dateranges[/{id}]`: ad markers (EXT-X-DATERANGE). Authentication is done by
/// the chain before these routes are reached. Every change is journaled before the answer is sent.
///
/// - `GET .../dateranges`: every marker of the channel, `{"channel": ..., "markers": [{"marker": ..., "tag": ...}]}`.
/// - `POST .../dateranges`: 201 with the new marker, 200 with the stored one when the same body was posted before,
///   409 when the ID names a different marker.
/// - `GET .../dateranges/{id}`: one marker.
/// - `PATCH .../dateranges/{id}`: the cue-in (`endDate`, `duration`, `scte35`); 200 with the marker.
/// Errors answer `{"error": "...", "field": "..."}`: 400 for a bad body (the field named), 404, 405, 409, 413 for a body
/// over 64 KiB, 429 for too many markers.
extension OriginHTTPHandler {
    /// `.../dateranges`: the list (GET, HEAD) or a new marker (POST).
    func markers(_ context: RouteContext) -> HTTPRequestAction {
        let channel = context.channel
        guard context.request.method == "POST" else {
            return .respond(
                json(200, MarkerListJSON(channel: channel.name, markers: channel.allMarkers.map(MarkerJSON.init))))
        }
        return .receiveBody(limit: Self.adminBodyLimit) { [self] body in postMarker(channel, body) }
    }

    /// `.../dateranges/{id}`: one marker (GET, HEAD) or its cue-in (PATCH).
    func marker(_ context: RouteContext) -> HTTPRequestAction {
        let (channel, id) = (context.channel, context["id"])
        guard context.request.method == "PATCH" else {
            guard let marker = channel.marker(id: id) else {
                return .respond(json(404, ["error": "no marker with id '\(id)' in channel '\(channel.name)'"]))
            }
            return .respond(json(200, MarkerJSON(marker: marker)))
        }
        return .receiveBody(limit: Self.adminBodyLimit) { [self] body in patchMarker(channel, id: id, body) }
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
