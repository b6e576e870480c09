import Foundation
import Logging
import MicroHTTPD
import OriginCore
import SharedBytes
import TestSourceInput

/// `/admin/...`: JSON status and operations, bearer token (or loopback clients only when no token is configured;
/// the chain checks it for the whole group, `OriginRoutes`).
extension OriginHTTPHandler {
    static let adminBodyLimit = 64 * 1024

    /// `action` with its outcome recorded in the audit log once it is answered (an admin action that changes
    /// something: every method but GET and HEAD).
    func audited(_ action: HTTPRequestAction, _ what: String, by requester: Requester) -> HTTPRequestAction {
        let record: @Sendable (String) -> Void = { [audit] outcome in
            audit.record(what, by: requester, outcome: outcome, details: ["audit.route": "admin"])
        }
        switch action {
        case .respond(let response): record("\(response.status)")
        case .respondPrepared(let prepared): record("\(prepared.status)")
        case .receiveBody(let limit, let complete):
            return .receiveBody(limit: limit) { body in
                let response = complete(body)
                record("\(response.status)")
                return response
            }
        case .suspend, .streamBody, .receiveBodyThenSuspend: record("started")
        }
        return action
    }

    /// `GET /admin/channels/{channel}`: the channel's status.
    func adminChannelStatus(_ name: String) -> HTTPResponse {
        guard let channel = origin.channel(named: name) else { return Self.unknownAdminChannel(name) }
        return json(200, adminStatus(channel))
    }

    /// `POST /admin/reload`: re-reads the configuration and applies it (`ConfigurationReloader`): 200 with what
    /// changed, 422 with the reason when the configuration does not load or validate (the running one stays).
    func reload(_ request: HTTPRequestHead) -> HTTPResponse {
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

    /// The answer of a request refused before its route answers (for `Result`): access refusals, a recording
    /// `/vod` does not serve.
    struct EarlyResponse: Error {
        let response: HTTPResponse
    }

    /// The admin API's authorization, also the status page's (the chain's, for both groups): with a token that opens the admin API configured
    /// (`admin.token`, `admin.tokens`), the request must carry one as a bearer token (401 without, 403 with a token
    /// that does not open it); without one, only loopback clients are served (403 otherwise). A refusal is counted
    /// and recorded in the audit log.
    func adminAuthorization(_ request: HTTPRequestHead) -> Result<Requester, EarlyResponse> {
        let policy = access.policy
        switch policy.decide(request, granted: policy.adminGrants) {
        case .allowed(let requester): return .success(requester)
        case .refused(let reason, let requester):
            return .failure(
                EarlyResponse(
                    response: accessRefusal(reason, requester, route: "admin", request: request, scope: "")))
        }
    }

    /// The body of `POST .../outage`, strict like every admin body: an object with `seconds` (a number) and
    /// `renditions` (strings, optional), nothing else; `null` is a field left out. nil when it is not that.
    static func outageRequest(_ body: SharedBytes) -> (seconds: Double, renditions: [String])? {
        guard case .object(let all)? = try? JSONDecoder().decode(JSONValue.self, from: Data(body.array)) else {
            return nil
        }
        let object = all.filter { $0.value != .null }
        guard object.keys.allSatisfy({ ["seconds", "renditions"].contains($0) }), case .number(let seconds)? = object["seconds"]
        else { return nil }
        switch object["renditions"] {
        case nil: return (seconds, [])
        case .array(let values):
            let names = values.compactMap { value -> String? in if case .string(let name) = value { name } else { nil } }
            return names.count == values.count ? (seconds, names) : nil
        default: return nil
        }
    }

    func outage(_ channelName: String, _ body: SharedBytes) -> HTTPResponse {
        guard origin.channel(named: channelName) != nil else {
            return json(404, ["error": "unknown channel '\(channelName)'"])
        }
        guard let feed = testSource?.feed(channel: channelName) else {
            return json(409, ["error": "channel '\(channelName)' is not fed by the built-in test source"])
        }
        guard let request = Self.outageRequest(body) else {
            return json(
                400,
                ["error": "invalid JSON body: expected {\"seconds\": 10, \"renditions\": [\"...\"]} (no other field)"])
        }
        guard request.seconds > 0, request.seconds <= 86400 else {
            return json(400, ["error": "seconds must be > 0 and <= 86400"])
        }
        do {
            let affected = try feed.dropFeed(seconds: request.seconds, renditions: request.renditions)
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

    func json(_ status: Int, _ value: some Encodable) -> HTTPResponse { Self.jsonAnswer(status, value) }

    /// `value` as pretty JSON (sorted keys), never cached.
    static func jsonAnswer(_ status: Int, _ value: some Encodable) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return HTTPResponse(
            status: status, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
            body: .bytes(SharedBytes(data + Data("\n".utf8))))
    }
}
