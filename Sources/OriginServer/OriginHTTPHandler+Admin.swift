import Foundation
import MicroHTTPD
import OriginCore
import SharedBytes

/// `/admin/...`: JSON status and operations, bearer token (or loopback clients only when no token is configured).
extension OriginHTTPHandler {
    static let adminBodyLimit = 64 * 1024

    func admin(_ request: HTTPRequestHead, _ path: [String]) -> HTTPRequestAction {
        if request.method == "OPTIONS" { return respond(preflight(methods: "GET, POST, PATCH, DELETE, OPTIONS")) }
        if let refusal = adminRefusal(request) { return respond(refusal) }
        if path == ["reload"] { return respond(reload(request)) }
        guard path.first == "channels" else { return respond(json(404, ["error": "unknown admin path"])) }
        switch (request.method, path.count) {
        case ("GET", 1), ("HEAD", 1):
            return respond(json(200, origin.allChannels.map(adminStatus)))
        case ("GET", 2), ("HEAD", 2):
            guard let channel = origin.channel(named: path[1]) else {
                return respond(json(404, ["error": "unknown channel '\(path[1])'"]))
            }
            return respond(json(200, adminStatus(channel)))
        case ("POST", 3) where path[2] == "tokens":
            let channelName = path[1]
            return .receiveBody(limit: Self.adminBodyLimit) { [self] body in
                finish(issuePlaybackToken(channelName, body))
            }
        case ("POST", 3) where path[2] == "outage":
            let channelName = path[1]
            return .receiveBody(limit: Self.adminBodyLimit) { [self] body in
                finish(outage(channelName, body))
            }
        case ("GET", 4) where path[2] == "keys", ("HEAD", 4) where path[2] == "keys":
            return respond(adminPeriodKey(channel: path[1], period: path[3]))
        case (_, 3...4) where path[2] == "dateranges":
            return dateRanges(request, channel: path[1], Array(path.dropFirst(3)))
        case (_, 3...4) where path[2] == "recordings":
            return recordings(request, channel: path[1], Array(path.dropFirst(3)))
        case (_, 1...2):
            fallthrough
        case (_, 3) where path[2] == "outage" || path[2] == "tokens":
            let allowed = path.count == 3 ? "POST, OPTIONS" : "GET, HEAD, OPTIONS"
            var response = json(
                405, ["error": "method \(request.method) not allowed on this admin path; allowed: \(allowed)"])
            response.headers.append(name: "Allow", value: allowed)
            return respond(response)
        default:
            return respond(json(404, ["error": "unknown admin path"]))
        }
    }

    /// `POST /admin/reload`: re-reads the configuration and applies it (`ConfigurationReloader`): 200 with what
    /// changed, 422 with the reason when the configuration does not load or validate (the running one stays).
    private func reload(_ request: HTTPRequestHead) -> HTTPResponse {
        guard request.method == "POST" else {
            var response = json(405, ["error": "method \(request.method) not allowed on /admin/reload; allowed: POST"])
            response.headers.append(name: "Allow", value: "POST, OPTIONS")
            return response
        }
        guard let reloader else { return json(409, ["error": "this origin has no configuration to re-read"]) }
        switch reloader.reload() {
        case .applied(let report, let certificate):
            return json(200, ReloadAnswer(report: report, certificate: certificate))
        case .refused(let reason):
            return json(422, ["error": "configuration not reloaded (the running one stays): \(reason)"])
        }
    }

    /// The admin API's authorization, also the status page's: with an admin token configured, the request must
    /// carry it as a bearer token (401 otherwise); without one, only loopback clients are served (403 otherwise).
    /// Returns nil when the request may go on.
    func adminRefusal(_ request: HTTPRequestHead) -> HTTPResponse? {
        if let token = configuration.adminToken {
            guard Self.bearerMatches(request, token: token) else {
                return Self.unauthorized("admin API requires a valid bearer token")
            }
        } else if !request.isLoopback {
            return json(403, ["error": "no admin token is configured: the admin API answers loopback clients only"])
        }
        return nil
    }

    private struct OutageRequest: Decodable {
        var seconds: Double
        var renditions: [String]?
    }

    private func outage(_ channelName: String, _ body: SharedBytes) -> HTTPResponse {
        guard origin.channel(named: channelName) != nil else {
            return json(404, ["error": "unknown channel '\(channelName)'"])
        }
        guard let feed = origin.testSourceFeed(channel: channelName) else {
            return json(409, ["error": "channel '\(channelName)' is not fed by the built-in test source"])
        }
        let request: OutageRequest
        do {
            request = try JSONDecoder().decode(OutageRequest.self, from: Data(body.array))
        } catch {
            return json(400, ["error": "invalid JSON body: expected {\"seconds\": 10, \"renditions\": [\"...\"]}"])
        }
        guard request.seconds > 0, request.seconds <= 86400 else {
            return json(400, ["error": "seconds must be > 0 and <= 86400"])
        }
        do {
            let affected = try feed.dropFeed(seconds: request.seconds, renditions: request.renditions ?? [])
            struct Answer: Encodable {
                let channel: String
                let renditions: [String]
                let seconds: Double
            }
            return json(202, Answer(channel: channelName, renditions: affected, seconds: request.seconds))
        } catch {
            return json(400, ["error": "\(error)"])
        }
    }

    func json(_ status: Int, _ value: some Encodable) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return HTTPResponse(
            status: status, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
            body: .bytes(SharedBytes(data + Data("\n".utf8))))
    }
}
