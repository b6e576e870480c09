import Foundation
import HLSPackaging
import HLSPlaylist
import LiveTimeline
import MicroHTTPD
import OriginCore
import Persistence
import SharedBytes

/// `/admin/channels/{channel}/recordings[/{id}]`: recordings (live-to-VOD). Authentication is done by
/// the chain before these routes are reached. Every change is on disk before the answer is sent.
///
/// - `POST .../recordings` `{"id", "start", "end"}`: 201 with the new recording, 200 with the stored one when the
///   same body was posted before, 409 when the ID names another recording (IDs are unique origin-wide), 422 when
///   the start is before what the store holds or the end is not after the start, 400 for a bad body or an interval
///   longer than the maximum, 429 above 1000 recordings, 507 (disk full) or 500 when the manifest cannot be written.
/// - `GET .../recordings`: `{"channel": ..., "recordings": [...]}` with each one's state.
/// - `GET .../recordings/{id}`: one; `DELETE .../recordings/{id}`: 204 (the manifest goes, the shared bytes stay
///   until eviction).
/// Errors answer `{"error": "...", "field": "..."}` like the date range routes.
extension OriginHTTPHandler {
    /// `.../recordings`: the list (GET, HEAD) or a new recording (POST).
    func recordings(_ context: RouteContext) -> HTTPRequestAction {
        let name = context.channel.name
        guard context.request.method == "POST" else {
            let now = origin.clock.nowMilliseconds()
            let list = origin.recordings.all(channel: name).map { RecordingJSON($0, nowMilliseconds: now) }
            return .respond(json(200, RecordingListJSON(channel: name, recordings: list)))
        }
        return .receiveBody(limit: Self.adminBodyLimit) { [self] body in postRecording(channel: name, body) }
    }

    /// `.../recordings/{id}`: one recording (GET, HEAD) or its deletion (DELETE).
    func recording(_ context: RouteContext) -> HTTPRequestAction {
        let (name, id) = (context.channel.name, context["id"])
        guard context.request.method == "DELETE" else {
            guard let recording = origin.recordings.recording(id: id), recording.channel == name else {
                return .respond(json(404, ["error": "no recording with id '\(id)' in channel '\(name)'"]))
            }
            return .respond(json(200, RecordingJSON(recording, nowMilliseconds: origin.clock.nowMilliseconds())))
        }
        // Answered once the (empty) body is in, so that with a group database the deletion's round trip can run off
        // the libmicrohttpd thread (`offThread`).
        return .receiveBody(limit: Self.adminBodyLimit) { [self] _ in
            do throws(RecordingError) {
                try origin.deleteRecording(id: id, channel: name)
                return HTTPResponse(status: 204, headers: ["Cache-Control": "no-store"])
            } catch {
                return answer(error)
            }
        }
    }

    private func postRecording(channel: String, _ body: SharedBytes) -> HTTPResponse {
        do throws(RecordingError) {
            let request = try RecordingRequestBody.parse(body.array, nowMilliseconds: origin.clock.nowMilliseconds())
            let (manifest, created) = try origin.createRecording(request, channel: channel)
            return json(created ? 201 : 200, RecordingJSON(manifest, nowMilliseconds: origin.clock.nowMilliseconds()))
        } catch {
            return answer(error)
        }
    }

    /// A refused recording request: its status, and `{"error": message, "field": field}` as JSON.
    func answer(_ error: RecordingError) -> HTTPResponse {
        var answer = ["error": error.message]
        if let field = error.field { answer["field"] = field }
        var response = json(Self.status(of: error.reason), answer)
        if error.reason == .unavailable { response.headers.append(name: "Retry-After", value: "1") }
        return response
    }

    /// HTTP status of a refused recording request.
    static func status(of reason: RecordingError.Reason) -> Int {
        switch reason {
        case .invalid: 400
        case .unknown, .notFinished: 404
        case .conflict: 409
        case .unprocessable: 422
        case .tooMany: 429
        case .notPersisted(let outOfSpace): outOfSpace ? 507 : 500
        case .unavailable: 503
        }
    }
}

/// Reads the body of `POST /admin/channels/{channel}/recordings`: a JSON object with `id` (string), `start` and
/// `end` (ISO 8601 strings, epoch seconds as a number or string, or negative seconds before now, as the DVR query
/// reads them). Unknown fields and wrong types are refused (400) naming the field; `null` is a missing field.
enum RecordingRequestBody {
    static let fields: Set<String> = ["id", "start", "end"]

    static func parse(_ body: [UInt8], nowMilliseconds now: Int64) throws(RecordingError) -> RecordingRequest {
        let value: JSONValue
        do {
            value = try JSONDecoder().decode(JSONValue.self, from: Data(body))
        } catch {
            throw RecordingError(.invalid, "invalid JSON body: expected {\"id\": ..., \"start\": ..., \"end\": ...}")
        }
        guard case .object(let all) = value else {
            throw RecordingError(.invalid, "the body must be a JSON object, not \(value.typeName)")
        }
        let object = all.filter { $0.value != .null }
        if let unknown = all.keys.filter({ !fields.contains($0) }).sorted().first {
            throw RecordingError(.invalid, field: unknown, "unknown field '\(unknown)' (use id, start, end)")
        }
        guard case .string(let id)? = object["id"] else {
            throw RecordingError(
                .invalid, field: "id",
                object["id"] == nil ? "id: required (\(OriginNames.rule))" : "id: must be a string")
        }
        guard OriginNames.isValid(id) else {
            throw RecordingError(.invalid, field: "id", "id: '\(id.prefix(80))' must be \(OriginNames.rule)")
        }
        let (startText, start) = try time(object, "start", nowMilliseconds: now)
        let (endText, end) = try time(object, "end", nowMilliseconds: now)
        return RecordingRequest(
            id: id, requestedStart: startText, requestedEnd: endText, startMilliseconds: start, endMilliseconds: end)
    }

    /// A time field: its text as posted and its value in ms since the epoch.
    private static func time(
        _ object: [String: JSONValue], _ field: String, nowMilliseconds now: Int64
    ) throws(RecordingError) -> (String, Int64) {
        let text: String
        switch object[field] {
        case .string(let value)?: text = value
        case .number(let number)? where number.isFinite:
            text = number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        case nil:
            throw RecordingError(.invalid, field: field, "\(field): required (ISO 8601 date or epoch seconds)")
        case let other?:
            throw RecordingError(
                .invalid, field: field, "\(field): must be a string or a number, not \(other.typeName)")
        }
        do throws(DVRQueryError) {
            return (text, try DVRQuery.time(text, argument: field).milliseconds(nowMilliseconds: now))
        } catch {
            throw RecordingError(.invalid, field: field, error.message)
        }
    }
}

/// A recording as the admin API answers it.
struct RecordingJSON: Encodable {
    let id: String
    let channel: String
    let start: String
    let end: String
    let state: String
    let created: String
    let requested: [String: String]
    /// The multivariant playlist once finished.
    let vod: String
    let contents: Contents?

    struct Contents: Encodable {
        let finished: String
        let firstMSN: UInt64?
        let lastMSN: UInt64?
        let renditions: [RecordingRenditionSummary]
        /// The copied markers as their tags.
        let dateRanges: [String]
    }

    init(_ manifest: RecordingManifest, nowMilliseconds now: Int64) {
        func date(_ milliseconds: Int64) -> String { ProgramDateTime(millisecondsSince1970: milliseconds).formatted }
        id = manifest.id
        channel = manifest.channel
        start = date(manifest.startMilliseconds)
        end = date(manifest.endMilliseconds)
        state = manifest.state(nowMilliseconds: now).rawValue
        created = date(manifest.createdMilliseconds)
        requested = ["start": manifest.requestedStart, "end": manifest.requestedEnd]
        vod = "/vod/\(manifest.id)/index.m3u8"
        contents = manifest.contents.map { contents in
            Contents(
                finished: date(contents.finishedMilliseconds), firstMSN: contents.firstMSN, lastMSN: contents.lastMSN,
                renditions: contents.renditions, dateRanges: contents.markers.map(\.renderedTag))
        }
    }
}

/// The answer of `GET /admin/channels/{channel}/recordings`.
struct RecordingListJSON: Encodable {
    let channel: String
    let recordings: [RecordingJSON]
}
