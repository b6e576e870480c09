import Foundation
import LiveTimeline
import Logging
import Markers
import MicroHTTPD
import OriginCore
import Persistence
import SharedBytes
import TestSupport
import Testing

@testable import OriginServer

/// The admin date range routes, called on the handler directly (no sockets): status codes, JSON and auth.
final class AdminClient {
    let clock = ManualClock()
    let origin: Origin
    let handler: OriginHTTPHandler
    let token: String?

    init(token: String? = "s3cret-token", dataDirectory: String? = nil) throws {
        self.token = token
        var configuration = ServerConfiguration()
        configuration.adminToken = token
        configuration.origin = OriginConfiguration(
            channels: [ChannelConfiguration(name: "ch", renditions: [RenditionConfiguration(name: "360p")])])
        configuration.origin.dataDirectory = dataDirectory
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        origin = try Origin(configuration: configuration.origin, clock: clock, logger: logger)
        handler = OriginHTTPHandler(
            origin: origin, configuration: configuration, metrics: RequestMetrics(), logger: logger)
    }

    struct Answer {
        let status: Int
        let headers: HTTPHeaders
        let body: String
        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]) ?? [:]
        }
        var error: String? { json["error"] as? String }
        var field: String? { json["field"] as? String }
        var tag: String? { json["tag"] as? String }
        var marker: [String: Any] { json["marker"] as? [String: Any] ?? [:] }
    }

    func send(
        _ method: String, _ path: String, body: String? = nil, authorization: String? = "default",
        remote: String = "127.0.0.1"
    ) -> Answer {
        var headers = HTTPHeaders()
        if authorization == "default" {
            if let token { headers.append(name: "Authorization", value: "Bearer \(token)") }
        } else if let authorization {
            headers.append(name: "Authorization", value: authorization)
        }
        let head = HTTPRequestHead(method: method, path: path, headers: headers, remoteAddress: remote)
        let response: HTTPResponse
        switch handler.handle(head) {
        case .respond(let answer): response = answer
        case .receiveBody(let limit, let complete):
            #expect(limit == 64 * 1024)
            response = complete(SharedBytes(Array((body ?? "").utf8)))
        default:
            Issue.record("unexpected action")
            return Answer(status: 0, headers: HTTPHeaders(), body: "")
        }
        let text: String
        switch response.body {
        case .bytes(let bytes): text = String(decoding: bytes.array, as: UTF8.self)
        default: text = ""
        }
        return Answer(status: response.status, headers: response.headers, body: text)
    }
}

@Suite("Admin API: /admin/channels/{channel}/dateranges", .offThePool)
struct DateRangeRouteTests {
    let path = "/admin/channels/ch/dateranges"

    @Test("without a token, with a wrong one, or with another scheme: 401 and nothing changes")
    func unauthorized() throws {
        let client = try AdminClient()
        let body = #"{"id": "a"}"#
        for authorization in [nil, "Bearer wrong", "Bearer s3cret-toke", "Bearer s3cret-token2", "Basic s3cret-token"] {
            let answer = client.send("POST", path, body: body, authorization: authorization)
            #expect(answer.status == 401)
            #expect(answer.headers["WWW-Authenticate"] == "Bearer realm=\"hlsorigin\"")
            #expect(!answer.body.contains("s3cret"))
            #expect(client.send("GET", path, authorization: authorization).status == 401)
        }
        #expect(client.origin.channel(named: "ch")!.allMarkers.isEmpty)
        #expect(client.send("POST", path, body: body).status == 201)
    }

    @Test("with no token configured only loopback clients are served")
    func loopbackOnly() throws {
        let client = try AdminClient(token: nil)
        #expect(client.send("GET", path, remote: "127.0.0.1").status == 200)
        #expect(client.send("GET", path, remote: "::1").status == 200)
        #expect(client.send("GET", path, remote: "192.0.2.7").status == 403)
        #expect(client.send("POST", path, body: #"{"id":"a"}"#, remote: "192.0.2.7").status == 403)
    }

    @Test("POST creates (201), repeats answer 200 with the stored marker, a different body with the ID is 409")
    func postIdempotent() throws {
        let client = try AdminClient()
        let body = """
            {"id": "ad-1", "class": "com.example.ad", "startDate": "2026-01-01T00:00:10Z", "duration": 30,
             "scte35": "out", "clientAttributes": {"X-AD-ID": "abc", "X-PRICE": 12.5, "X-BLOB": {"hex": "0x0a0b"}}}
            """
        let created = client.send("POST", path, body: body)
        #expect(created.status == 201)
        #expect(created.headers["Content-Type"] == "application/json")
        let tag = try #require(created.tag)
        #expect(
            tag.hasPrefix(
                "#EXT-X-DATERANGE:ID=\"ad-1\",CLASS=\"com.example.ad\",START-DATE=\"2026-01-01T00:00:10.000Z\","
                    + "DURATION=30,X-AD-ID=\"abc\",X-BLOB=0x0A0B,X-PRICE=12.5,SCTE35-OUT=0xFC30"))
        #expect(created.marker["id"] as? String == "ad-1")
        #expect(created.marker["startDate"] as? String == "2026-01-01T00:00:10.000Z")
        #expect(created.marker["duration"] as? Double == 30)
        let attributes = try #require(created.marker["clientAttributes"] as? [String: Any])
        #expect(attributes["X-PRICE"] as? Double == 12.5)
        #expect(attributes["X-BLOB"] as? [String: String] == ["hex": "0x0A0B"])
        let out = try #require((created.marker["scte35"] as? [String: String])?["out"])
        #expect(tag.hasSuffix("SCTE35-OUT=" + out))

        let repeated = client.send("POST", path, body: body)
        #expect(repeated.status == 200)
        #expect(repeated.body == created.body)

        let conflicting = client.send("POST", path, body: body.replacingOccurrences(of: "30,", with: "31,"))
        #expect(conflicting.status == 409)
        #expect(conflicting.field == "id")
        #expect(client.send("GET", path + "/ad-1").body == created.body)
    }

    @Test("GET lists and reads markers; PATCH closes an open one")
    func getAndPatch() throws {
        let client = try AdminClient()
        let first = client.send(
            "POST", path, body: #"{"id": "b", "startDate": "2026-01-01T00:00:00Z", "scte35": "out"}"#)
        #expect(first.status == 201)
        #expect(client.send("POST", path, body: #"{"id": "a", "startDate": "2026-01-01T00:00:05Z"}"#).status == 201)
        let list = client.send("GET", path)
        #expect(list.status == 200)
        let markers = try #require(list.json["markers"] as? [[String: Any]])
        #expect(markers.compactMap { ($0["marker"] as? [String: Any])?["id"] as? String } == ["b", "a"])

        let patched = client.send("PATCH", path + "/b", body: #"{"endDate": "2026-01-01T00:00:30Z"}"#)
        #expect(patched.status == 200)
        #expect(patched.marker["endDate"] as? String == "2026-01-01T00:00:30.000Z")
        #expect((patched.marker["scte35"] as? [String: String])?["in"] != nil)
        #expect(patched.tag?.contains(",END-DATE=\"2026-01-01T00:00:30.000Z\",") == true)
        #expect(client.send("PATCH", path + "/b", body: #"{"endDate": "2026-01-01T00:00:30Z"}"#).body == patched.body)
        #expect(client.send("PATCH", path + "/b", body: #"{"endDate": "2026-01-01T00:00:31Z"}"#).status == 409)
        #expect(client.send("PATCH", path + "/b", body: #"{"id": "b"}"#).status == 400)
        #expect(client.send("PATCH", path + "/zzz", body: #"{"duration": 1}"#).status == 404)
        #expect(client.send("GET", path + "/zzz").status == 404)
        #expect(client.send("GET", "/admin/channels/nope/dateranges").status == 404)
        #expect(client.send("DELETE", path + "/b").status == 405)
        #expect(client.send("PUT", path).status == 405)
    }

    static let badBodies: [(String, String?, String)] = [
        ("{not json", nil, "invalid JSON"),
        ("[1, 2]", nil, "JSON object"),
        ("", nil, "invalid JSON"),
        (#"{"startDate": "2026-01-01T00:00:00Z"}"#, "id", "required"),
        (#"{"id": 5}"#, "id", "must be a string"),
        (#"{"id": "a", "colour": "red"}"#, "colour", "unknown field 'colour'"),
        (#"{"id": "a", "zeta": 1, "alpha": 2}"#, "alpha", "unknown fields 'alpha', 'zeta'"),
        (#"{"id": "a", "startDate": "yesterday"}"#, "startDate", "ISO 8601"),
        (#"{"id": "a", "startDate": "2026-01-01T00:00:00"}"#, "startDate", "ISO 8601"),
        (#"{"id": "a", "endDate": "2026-02-30T00:00:00Z"}"#, "endDate", "ISO 8601"),
        // RFC 3339's offset has a colon (ISO 8601's basic +0100 is not the description's date-time).
        (#"{"id": "a", "startDate": "2026-01-01T00:00:00+0100"}"#, "startDate", "ISO 8601"),
        (
            #"{"id": "a", "startDate": "2026-01-01T00:00:10Z", "endDate": "2026-01-01T00:00:05Z"}"#, "endDate",
            "before START-DATE"
        ),
        (#"{"id": "a", "duration": -1}"#, "duration", "negative"),
        (#"{"id": "a", "plannedDuration": -1}"#, "plannedDuration", "negative"),
        (#"{"id": "a", "duration": "30"}"#, "duration", "number of seconds"),
        (#"{"id": "a", "endOnNext": true}"#, "endOnNext", "requires CLASS"),
        (#"{"id": "a", "class": "c", "endOnNext": true, "duration": 3}"#, "endOnNext", "forbids DURATION"),
        (
            #"{"id": "a", "class": "c", "endOnNext": true, "endDate": "2030-01-01T00:00:00Z"}"#, "endOnNext",
            "forbids END-DATE"
        ),
        (#"{"id": "a", "endOnNext": "yes"}"#, "endOnNext", "true or false"),
        (#"{"id": "a", "clientAttributes": {"X-ad": "x"}}"#, "clientAttributes.X-ad", "X-[A-Z0-9-]+"),
        (#"{"id": "a", "clientAttributes": {"AD-ID": "x"}}"#, "clientAttributes.AD-ID", "X-[A-Z0-9-]+"),
        (#"{"id": "a", "clientAttributes": {"X-A": true}}"#, "clientAttributes.X-A", "a string, a number"),
        (#"{"id": "a", "clientAttributes": {"X-A": {"hex": "0xZZ"}}}"#, "clientAttributes.X-A", "hex"),
        (#"{"id": "a", "clientAttributes": {"X-A": -2}}"#, "clientAttributes.X-A", "non-negative"),
        (#"{"id": "a", "clientAttributes": ["X-A"]}"#, "clientAttributes", "object"),
        (#"{"id": "a", "scte35": "sideways"}"#, "scte35", "\"out\", \"in\""),
        (#"{"id": "a", "scte35": {"out": "0xFC00"}}"#, "scte35.out", "splice_info_section"),
        (#"{"id": "a", "scte35": {"out": "nothex"}}"#, "scte35.out", "hexadecimal"),
        (#"{"id": "a", "scte35": {"up": "0xFC"}}"#, "scte35.up", "unknown"),
        (#"{"id": "a", "cue": ["PRE", "POST"]}"#, "cue", "PRE and POST"),
        // A range whose end does not fit before the year 10000 (it once overflowed the marker book's arithmetic).
        (#"{"id": "a", "duration": 9223372000000000}"#, "duration", "would end after the year 9999"),
        (#"{"id": "a", "plannedDuration": 1e300, "scte35": "out"}"#, "plannedDuration", "after the year 9999"),
    ]

    @Test("every kind of bad body answers 400 naming the field", arguments: badBodies.indices)
    func badBody(index: Int) throws {
        let (body, field, fragment) = Self.badBodies[index]
        let client = try AdminClient()
        let answer = client.send("POST", path, body: body)
        #expect(answer.status == 400, "\(body): \(answer.body)")
        #expect(answer.field == field, "\(body): \(answer.body)")
        #expect(answer.error?.contains(fragment) == true, "\(body): \(answer.body)")
        if let field { #expect(answer.error?.contains(field) == true) }
        #expect(client.origin.channel(named: "ch")!.allMarkers.isEmpty)
    }

    @Test("an acknowledged marker is in the journal on disk before the answer")
    func journaledBeforeAnswer() throws {
        let directory = NSTemporaryDirectory() + "admin-" + UUID().uuidString
        let client = try AdminClient(dataDirectory: directory)
        let answer = client.send("POST", path, body: #"{"id": "durable", "duration": 5}"#)
        #expect(answer.status == 201)
        let book = try #require(try MarkerJournal(dataDirectory: directory, channel: "ch").load())
        #expect(book.markers["durable"]?.renderedTag == answer.tag)
    }
}
