import Foundation
import LiveTimeline
import MicroHTTPD
import OriginCore
import SharedBytes
import TestSupport
import Testing

@testable import OriginServer

/// Sources/OriginServer/OpenAPI/admin.json, the admin API's OpenAPI 3.1 description: the binary serves the file as it
/// is in the repo (the module's resource bundle),
/// it describes every admin route of the route table (method and path) and nothing else, and every admin answer a
/// route test gets through `OriginTestStack` validates against it (`AdminOpenAPIValidator`, called by the stack).
@Suite("Admin API: the OpenAPI description matches the routes and the answers", .offThePool)
struct AdminOpenAPITests {
    @Test func servedDocumentIsTheRepositoryFileWithoutItsFinalNewline() throws {
        let file = try OriginTestStack.packageFile(AdminOpenAPIValidator.sourcePath)
        #expect(file.last == UInt8(ascii: "\n"))
        let stack = try OriginTestStack()
        let response = try stack.get("/admin/openapi.json")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/json")
        #expect(response.body == Array(file.dropLast()))
        #expect(AdminOpenAPIValidator.shared.document["openapi"] == .string("3.1.0"))
    }

    /// Without the resource bundle beside the binary the origin does not stop (`Bundle.module` would): the route
    /// answers 500 naming the file and the bundle to install, and the answer is one the description lists.
    @Test func missingResourceBundleIsA500NamingWhatIsMissing() throws {
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("no-bundle-\(UUID().uuidString)")
        let loaded = AdminOpenAPIDocument.load(besideExecutableIn: empty)
        let expectedPath = empty.appendingPathComponent("hlsorigin_OriginServer.resources/admin.json").path
        guard case .failure(let missing) = loaded else {
            Issue.record("a document was read from \(empty.path)")
            return
        }
        #expect(missing.path == expectedPath)
        let answer = OriginHTTPHandler.openAPIAnswer(loaded)
        #expect(answer.status == 500)
        guard case .bytes(let body) = answer.body else {
            Issue.record("the answer has no body")
            return
        }
        let text = String(decoding: body.array, as: UTF8.self)
        #expect(text.contains(expectedPath))
        #expect(text.contains("hlsorigin_OriginServer.resources beside the hlsorigin binary"))
        let problems = AdminOpenAPIValidator.shared.problems(
            method: "GET", target: "/admin/openapi.json", status: 500, contentType: answer.headers["Content-Type"],
            body: body.array)
        #expect(problems == [])
    }

    @Test func descriptionIsBehindTheAdminAccessPolicy() throws {
        let stack = try OriginTestStack { $0.adminToken = "admin-secret" }
        #expect(try stack.get("/admin/openapi.json").status == 401)
        #expect(try stack.get("/admin/openapi.json", headers: [("Authorization", "Bearer wrong")]).status == 401)
        let answer = try stack.get("/admin/openapi.json", headers: [("Authorization", "Bearer admin-secret")])
        #expect(answer.status == 200)
    }

    /// Every route of the admin group, as (method, OpenAPI path): `:name` becomes `{name}`; HEAD is GET's.
    static var routeOperations: Set<String> {
        var operations = Set<String>()
        for route in OriginHTTPHandler.routes.admin.routes {
            let path = route.pattern.description.split(separator: "/", omittingEmptySubsequences: false).map {
                piece in
                guard piece.hasPrefix(":") else { return String(piece) }
                return "{\(piece.dropFirst().prefix { $0 != "(" })}"
            }.joined(separator: "/")
            for method in route.methods where method != "HEAD" {
                operations.insert("\(method) \(path)")
            }
        }
        return operations
    }

    @Test func everyAdminRouteIsDescribedAndNothingElse() {
        let described = Set(
            AdminOpenAPIValidator.shared.paths.flatMap { path, item in
                (item.objectValue ?? [:]).keys.filter { $0 != "parameters" }.map { "\($0.uppercased()) \(path)" }
            }
        ).filter { $0.contains(" /admin/") }
        let routes = Self.routeOperations
        #expect(routes.count >= 15)
        #expect(routes.subtracting(described).sorted() == [], "admin routes missing from the description")
        #expect(described.subtracting(routes).sorted() == [], "the description describes no such admin route")
    }

    @Test func validatorReportsAnAnswerTheDescriptionDoesNotAllow() {
        let validator = AdminOpenAPIValidator.shared
        let missingTag = Array(#"{"marker": {"id": "a", "startDate": "2026-01-01T00:00:00.000Z"}}"#.utf8)
        let problems = validator.problems(
            method: "GET", target: "/admin/channels/ch/dateranges/a", status: 200, contentType: "application/json",
            body: missingTag)
        #expect(problems?.contains { $0.contains("required tag missing") } == true)
        #expect(problems?.contains { $0.contains("required created missing") } == true)
        let undescribedStatus = validator.problems(
            method: "GET", target: "/admin/channels", status: 418, contentType: "application/json", body: [])
        #expect(undescribedStatus?.count == 1)
        let extraField = validator.problems(
            method: "POST", target: "/admin/channels/ch/outage", status: 202, contentType: "application/json",
            body: Array(#"{"channel": "ch", "renditions": [], "seconds": 1, "more": 1}"#.utf8))
        #expect(extraField == ["POST /admin/channels/ch/outage answered 202: body: more is not in the description"])
    }

    /// The channel status was described loosely (any extra field, most fields optional): a status field added without
    /// its description, or one always sent that went missing, passed. Now both are reported.
    @Test func channelStatusWithAnUndescribedOrMissingFieldIsReported() throws {
        let stack = try OriginTestStack()
        try stack.slots(2)
        let answer = try stack.get("/admin/channels/ch")
        #expect(answer.status == 200)
        var status = try #require(try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any])
        var renditions = try #require(status["renditions"] as? [[String: Any]])
        let validator = AdminOpenAPIValidator.shared
        func problems(_ value: [String: Any]) throws -> [String]? {
            validator.problems(
                method: "GET", target: "/admin/channels/ch", status: 200, contentType: "application/json",
                body: Array(try JSONSerialization.data(withJSONObject: value)))
        }
        #expect(try problems(status) == [])
        status["steeringScore"] = 1
        renditions[0]["windowSegments"] = nil
        status["renditions"] = renditions
        let reported = try problems(status) ?? []
        #expect(reported.contains { $0.hasSuffix("body: steeringScore is not in the description") }, "\(reported)")
        #expect(reported.contains { $0.hasSuffix("body.renditions[0]: required windowSegments missing") }, "\(reported)")
    }

    /// One request per described operation on a stack with a channel that has markers and a recording: every
    /// answer validates (the stack checks it) and has the status the test expects.
    @Test func everyOperationAnswersAsDescribed() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("openapi-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let stack = try OriginTestStack { $0.origin.dataDirectory = directory.path }
        try stack.slots(4)
        let marker = Array(
            #"{"id": "ad-1", "duration": 30, "scte35": "out", "clientAttributes": {"X-AD": "a", "X-N": 2}}"#.utf8)
        let calls: [(String, String, [UInt8]?, Int)] = [
            ("GET", "/admin/openapi.json", nil, 200),
            ("GET", "/admin/channels", nil, 200),
            ("GET", "/admin/channels/ch", nil, 200),
            ("GET", "/admin/channels/nope", nil, 404),
            ("POST", "/admin/channels/ch/dateranges", marker, 201),
            ("POST", "/admin/channels/ch/dateranges", marker, 200),
            ("POST", "/admin/channels/ch/dateranges", Array(#"{"id": "ad-1", "duration": 5}"#.utf8), 409),
            ("POST", "/admin/channels/ch/dateranges", Array(#"{"id": 3}"#.utf8), 400),
            ("GET", "/admin/channels/ch/dateranges", nil, 200),
            ("GET", "/admin/channels/ch/dateranges/ad-1", nil, 200),
            ("PATCH", "/admin/channels/ch/dateranges/ad-1", Array(#"{"scte35": "in"}"#.utf8), 200),
            ("GET", "/admin/channels/ch/dateranges/none", nil, 404),
            ("POST", "/admin/channels/ch/recordings", Array(#"{"id": "r1", "start": -6, "end": -2}"#.utf8), 201),
            ("GET", "/admin/channels/ch/recordings", nil, 200),
            ("GET", "/admin/channels/ch/recordings/r1", nil, 200),
            ("DELETE", "/admin/channels/ch/recordings/r1", nil, 204),
            ("POST", "/admin/channels/ch/tokens", nil, 409),
            ("POST", "/admin/channels/ch/outage", Array(#"{"seconds": 5}"#.utf8), 409),
            ("GET", "/admin/channels/ch/keys/0", nil, 404),
            ("POST", "/admin/reload", nil, 409),
            ("GET", "/status/timeline.json", nil, 200),
        ]
        for (method, target, body, status) in calls {
            let response = try stack.request(method, target, body: body)
            #expect(response.status == status, "\(method) \(target): \(response.text)")
        }
    }

    /// A marker could be posted with any id but `"`, CR and LF while the `{id}` path parameter allowed only
    /// `[A-Za-z0-9._~-]{1,64}`: markers the origin made could not be addressed as the description states, and ids the
    /// origin refuses (a `/`, a tab) were allowed by the request schema. The three agree now.
    @Test func aMarkerIdIsAllowedByTheRequestSchemaAndThePathPatternExactlyWhenThePostIsAccepted() throws {
        let stack = try OriginTestStack()
        let validator = AdminOpenAPIValidator.shared
        let requestSchema = try #require(
            validator.document["components"]?["schemas"]?["DateRangeRequest"]?["properties"]?["id"])
        guard
            case .array(let parameters)? = validator.paths["/admin/channels/{channel}/dateranges/{id}"]?["parameters"],
            let pathSchema = parameters.compactMap(validator.resolved).first(where: { $0["name"] == .string("id") })?[
                "schema"]
        else {
            Issue.record("no {id} parameter on /admin/channels/{channel}/dateranges/{id}")
            return
        }
        let accepted = [
            "ad break 1", "na\u{EF}ve-\u{FC}", "a:b@c+d%e", "splice.ad_1~x", String(repeating: "x", count: 256),
        ]
        let refused = ["a/b", "a\"b", "a\tb", "a\u{7F}b", "", String(repeating: "x", count: 257)]
        for id in accepted + refused {
            let body = try JSONEncoder().encode(["id": id, "class": "test"])
            let answer = try stack.request("POST", "/admin/channels/ch/dateranges", body: Array(body))
            let posted = answer.status == 201
            #expect(posted == accepted.contains(id), "\(id.debugDescription): \(answer.status) \(answer.text)")
            let bySchema = validator.validate(.string(id), requestSchema, at: "id").isEmpty
            let byPath = validator.validate(.string(id), pathSchema, at: "{id}").isEmpty
            #expect(bySchema == posted, "request schema on \(id.debugDescription)")
            #expect(byPath == posted, "path pattern on \(id.debugDescription)")
            guard posted else { continue }
            var segment = CharacterSet.urlPathAllowed
            segment.remove(charactersIn: "/%")
            let encoded = try #require(id.addingPercentEncoding(withAllowedCharacters: segment))
            let read = try stack.get("/admin/channels/ch/dateranges/\(encoded)")
            #expect(read.status == 200, "GET \(encoded): \(read.text)")
        }
    }

    // Found by schemathesis from the description (scripts/fuzz-admin-api), each failing before its fix.

    /// An OPTIONS request on an admin path answered `Allow: GET, POST, PATCH, DELETE, OPTIONS` whatever the path.
    @Test func optionsOnAnAdminPathAllowsTheRouteMethodsOnly() throws {
        let stack = try OriginTestStack()
        let expected = [
            "/admin/channels": "GET, HEAD, OPTIONS",
            "/admin/channels/ch/dateranges": "GET, HEAD, POST, OPTIONS",
            "/admin/channels/ch/dateranges/a": "GET, HEAD, PATCH, OPTIONS",
            "/admin/channels/ch/recordings/r": "GET, HEAD, DELETE, OPTIONS",
            "/admin/reload": "POST, OPTIONS",
        ]
        for (path, allowed) in expected {
            let answer = try stack.request("OPTIONS", path)
            #expect(answer.status == 204)
            #expect(answer.header("Allow") == allowed, "\(path)")
            #expect(answer.header("Access-Control-Allow-Methods") == allowed, "\(path)")
        }
        let wrongMethod = try stack.request("GET", "/admin/reload")
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.header("Allow") == "POST, OPTIONS")
        #expect(wrongMethod.header("Content-Type") == "application/json")
    }

    /// A path with a control character or bad percent-encoding under /admin was answered in text/plain.
    @Test func unreadableAdminPathIsAnsweredInJSON() throws {
        let stack = try OriginTestStack()
        let answer = try stack.get("/admin/channels/%1Fx/dateranges")
        #expect(answer.status == 400)
        #expect(answer.header("Content-Type") == "application/json")
        #expect(answer.text.contains("\"error\""))
        #expect(try stack.get("/live/%1Fx/index.m3u8").header("Content-Type")?.hasPrefix("text/plain") == true)
    }

    /// The outage and token bodies took unknown fields and wrong types (JSONDecoder ignores what it does not know);
    /// every other admin body refused them.
    @Test func outageAndTokenBodiesRefuseWhatTheDescriptionForbids() throws {
        let stack = try OriginTestStack { configuration in
            var locked = ChannelConfiguration(name: "locked", renditions: [RenditionConfiguration(name: "360p")])
            locked.playback = PlaybackAuthorization(form: .importVariable, secret: [UInt8](repeating: 0x73, count: 32))
            configuration.origin.channels += [
                locked,
                ChannelConfiguration(
                    name: "demo", renditions: [RenditionConfiguration(name: "180p")], source: .testSource),
            ]
        }
        for body: String in [
            #"{"seconds": 5, "extra": 1}"#, #"{"seconds": "5"}"#, #"{"seconds": 5, "renditions": "180p"}"#, "[]",
        ] {
            let answer = try stack.request("POST", "/admin/channels/demo/outage", body: Array(body.utf8))
            #expect(answer.status == 400, Comment(rawValue: body))
        }
        for body: String in [
            #"{"seconds": 5}"#, #"{"seconds": 5, "renditions": null}"#, #"{"seconds": 5, "renditions": ["180p"]}"#,
        ] {
            let answer = try stack.request("POST", "/admin/channels/demo/outage", body: Array(body.utf8))
            #expect(answer.status == 202, Comment(rawValue: body))
        }
        for body: String in [
            #"{"ttlSeconds": 60, "extra": 1}"#, #"{"ttlSeconds": 1.5}"#, #"{"ttlSeconds": "60"}"#, "3",
        ] {
            let answer = try stack.request("POST", "/admin/channels/locked/tokens", body: Array(body.utf8))
            #expect(answer.status == 400, Comment(rawValue: body))
        }
        for body: String in [#"{"ttlSeconds": 60}"#, #"{"ttlSeconds": null}"#, ""] {
            let answer = try stack.request("POST", "/admin/channels/locked/tokens", body: Array(body.utf8))
            #expect(answer.status == 201, Comment(rawValue: body))
        }
    }
}
