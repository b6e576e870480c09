import Foundation
import HLSPackaging
import LiveTimeline
import MicroHTTPD
import OriginCore
import SharedBytes

/// Content Steering (docs/content-steering.md): the steering manifest players reload, and the health report the
/// group's origins read from each other. Both answer from memory: the peers' health is gathered in the background
/// (`SteeringHealthMonitor`), never on a libmicrohttpd thread.
extension OriginHTTPHandler {
    /// `GET /live/{channel}/steering.json[?steered=S&_HLS_pathway=P&_HLS_throughput=T]`: the channel's steering
    /// manifest (`steered` is the previous answer's, carried in its RELOAD-URI); 404 when the channel is not steered,
    /// 400 with the reason for a malformed `_HLS_pathway`.
    func steeringManifest(_ context: RouteContext) -> HTTPResponse {
        let channel = context.channel
        guard let steering = channel.configuration.steering else {
            return .text(404, "channel '\(channel.name)' is not steered (no steering: in the configuration)\n")
        }
        let query: SteeringQuery
        do {
            query = try SteeringQuery(query: context.request.query)
        } catch {
            return .text(400, "bad steering manifest request: \(error.description)\n")
        }
        let health = self.steering.monitor?.pathwayHealth(steering, channel: channel, name: channel.name) ?? [:]
        let unconfirmed = self.steering.monitor?.unconfirmedPathways(steering) ?? []
        let manifest = SteeringManifest.answer(
            steering, channel: channel.name, health: health, query: query, unconfirmed: unconfirmed)
        self.steering.countAnswer(channel: channel.name, first: manifest.pathwayPriority.first ?? "")
        return HTTPResponse(
            status: 200,
            // Not max-age=TTL: a cache in front would add up to a TTL to every pathway change; players reload on the
            // manifest's own TTL anyway.
            headers: ["Content-Type": "application/json", "Cache-Control": "no-cache"],
            body: .bytes(SharedBytes(string: manifest.render())))
    }

    /// `GET /peer/health`: this origin's own judgement of each of its steered channels (`OriginHealthReport`), which
    /// its peers' steering monitors read every second. The route is open: it lists steered channels only (those a
    /// multivariant playlist already names) and their state without the reason (which may name paths).
    func peerHealth() -> HTTPResponse {
        var report = SteeringHealthMonitor.ownReport(origin: origin, selfURL: configuration.steering?.selfURL)
        for name in report.channels.keys { report.channels[name]?.reason = nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let body = (try? encoder.encode(report)) ?? Data("{}".utf8)
        return HTTPResponse(
            status: 200, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
            body: .bytes(SharedBytes(Array(body))))
    }
}
