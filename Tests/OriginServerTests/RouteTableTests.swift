import Foundation
import LiveTimeline
import Logging
import MicroHTTPD
import OriginCore
import SharedBytes
import TestSource
import TestSupport
import Testing

@testable import OriginServer

/// The route table and its middleware chain, in process: requests are handed to `OriginHTTPHandler.handle` as
/// libmicrohttpd would, with no socket. Which route answers a path and with which captures; that the chain applies
/// access, methods, CORS and metrics for every route the same way.
@Suite("Routes: patterns, captures and the middleware chain, without sockets", .offThePool)
struct RouteTableTests {
    static let remote = "192.0.2.7"

    /// An origin with channel `ch` (renditions 360p, 180p) and its handler; no server, nothing listening.
    struct Harness {
        let clock = ManualClock()
        let origin: Origin
        let handler: OriginHTTPHandler
        let audit = CapturedLog()

        init(configure: (inout ServerConfiguration) -> Void = { _ in }) throws {
            var configuration = ServerConfiguration()
            configuration.origin.channels = [
                ChannelConfiguration(
                    name: "ch",
                    renditions: [RenditionConfiguration(name: "360p"), RenditionConfiguration(name: "180p")])
            ]
            configure(&configuration)
            let logger = Logger(label: "route-table-tests", factory: { _ in SwiftLogNoOpLogHandler() })
            origin = try Origin(
                configuration: configuration.origin, clock: clock, logger: logger, audit: audit.logger())
            handler = OriginHTTPHandler(
                origin: origin, configuration: configuration, metrics: RequestMetrics(), logger: logger)
        }

        /// One request from `remote` (loopback unless said), answered in process; nil for a suspended one.
        func request(
            _ method: String, _ path: String, token: String? = nil, body: [UInt8] = [], remote: String = "127.0.0.1"
        ) -> HTTPResponse? {
            send(handler, method, path, token: token, body: body, remote: remote)
        }

        /// Pushes one slot of real MPEG-TS segments to both renditions (in process) and runs the ingest loop once.
        func pushSlot(file: String) throws {
            clock.advance(seconds: 2)
            for rendition in ["360p", "180p"] {
                var generator = try TestStreamGenerator(
                    profile: try #require(TestSourceProfile.named(rendition)), segmentDuration: 2)
                let response = try #require(
                    request("PUT", "/ingest/ch/\(rendition)/\(file)", body: generator.nextSegment().bytes))
                #expect(response.status == 201, "\(response.text)")
            }
            origin.tick()
        }

        /// The status of a GET answered in process, prepared answers included.
        func status(_ path: String) -> Int? {
            let head = HTTPRequestHead(method: "GET", path: path, remoteAddress: "127.0.0.1")
            switch handler.handle(head) {
            case .respond(let response): return response.status
            case .respondPrepared(let prepared): return prepared.status
            default: return nil
            }
        }

        /// Answers by status class so far.
        var counted: [String: Int] { Dictionary(uniqueKeysWithValues: handler.metrics.snapshot) }
    }

    /// The route that answers `method path` and its captures.
    static func resolve(_ method: String, _ path: String) -> (route: String, captures: RouteCaptures)? {
        let head = HTTPRequestHead(method: method, path: path)
        guard let segments = head.decodedPathSegments(),
            case .route(_, let route, let captures, _) = OriginHTTPHandler.routes.resolve(method: method, segments)
        else { return nil }
        return (route.name, captures)
    }

    @Test func liveURLsResolveToTheirRouteWithNamedCaptures() throws {
        let cases: [(String, String, [String: String])] = [
            ("/live/ch/index.m3u8", "live.multivariant", ["channel": "ch"]),
            ("/live/ch/key-12.key", "live.key", ["channel": "ch", "file": "key-12.key"]),
            ("/live/ch/other.txt", "live.unknown", ["channel": "ch", "file": "other.txt"]),
            ("/live/ch/360p/index.m3u8", "live.mediaPlaylist", ["channel": "ch", "rendition": "360p"]),
            ("/live/ch/360p/iframes.m3u8", "live.iFramePlaylist", ["rendition": "360p"]),
            ("/live/ch/360p/iframe-7.ts", "live.iFrame", ["file": "iframe-7.ts"]),
            ("/live/ch/360p/init-0.mp4", "live.initSection", ["file": "init-0.mp4"]),
            ("/live/ch/360p/41.ts", "live.media", ["channel": "ch", "rendition": "360p", "file": "41.ts"]),
            ("/live/ch/360p/41.3.ts", "live.media", ["file": "41.3.ts"]),
            ("/live/my%20ch/360p/41.ts", "live.media", ["channel": "my ch"]),
        ]
        for (path, name, captures) in cases {
            let resolved = try #require(Self.resolve("GET", path), "\(path)")
            #expect(resolved.route == name, "\(path)")
            for (key, value) in captures { #expect(resolved.captures[key] == value, "\(path) \(key)") }
        }
    }

    @Test func adminIngestAndStatusURLsResolveToTheirRoutes() throws {
        let cases: [(String, String, String, [String: String])] = [
            ("POST", "/admin/reload", "admin.reload", [:]),
            ("GET", "/admin/channels", "admin.channels", [:]),
            ("GET", "/admin/channels/ch", "admin.channel", ["channel": "ch"]),
            ("POST", "/admin/channels/ch/tokens", "admin.tokens", ["channel": "ch"]),
            ("GET", "/admin/channels/ch/keys/3", "admin.key", ["channel": "ch", "period": "3"]),
            ("PATCH", "/admin/channels/ch/dateranges/ad-1", "admin.marker", ["channel": "ch", "id": "ad-1"]),
            ("DELETE", "/admin/channels/ch/recordings/r1", "admin.recording", ["id": "r1"]),
            ("PUT", "/ingest/ch/master.m3u8", "ingest.multivariantHint", ["channel": "ch", "hint": "master.m3u8"]),
            ("PUT", "/ingest/ch/360p/4.ts", "ingest.push", ["channel": "ch", "rendition": "360p", "file": "4.ts"]),
            ("GET", "/status", "status.page", [:]),
            ("GET", "/status/", "status.page", [:]),
            ("GET", "/status/timeline.json", "status.timeline", [:]),
            ("GET", "/peer/ch/opening", "peer.opening", ["channel": "ch"]),
            ("GET", "/vod/r1/lo/3.ts", "vod.rendition", ["id": "r1", "rendition": "lo", "file": "3.ts"]),
        ]
        for (method, path, name, captures) in cases {
            let resolved = try #require(Self.resolve(method, path), "\(method) \(path)")
            #expect(resolved.route == name, "\(method) \(path)")
            for (key, value) in captures { #expect(resolved.captures[key] == value, "\(path) \(key)") }
        }
    }

    @Test func pathsOfAnotherShapeMatchNoRouteOrOnlyTheirGroupsCatchAll() throws {
        let head = { (path: String) in HTTPRequestHead(method: "GET", path: path).decodedPathSegments()! }
        for path in ["/live", "/live/ch", "/live/ch/360p/4.ts/more", "/admin/channels/ch/keys", "/status/x"] {
            guard case .unknownPath = OriginHTTPHandler.routes.resolve(method: "GET", head(path)) else {
                Issue.record("\(path) matched a route")
                continue
            }
        }
        guard case .unknownGroup = OriginHTTPHandler.routes.resolve(method: "GET", head("/nowhere/ch")) else {
            Issue.record("/nowhere matched a group")
            return
        }
        // A file name over 255 bytes is no push: the catch-all answers it 404 after access is decided.
        let long = String(repeating: "a", count: 256) + ".ts"
        #expect(Self.resolve("PUT", "/ingest/ch/360p/\(long)")?.route == "ingest.unknown")
        #expect(Self.resolve("PUT", "/ingest/ch/360p/4.ts/x")?.route == "ingest.unknown")
    }

    @Test func patternsMatchLiteralsCapturesPrefixesSuffixesAndTheRest() {
        let pattern = RoutePattern("/a/:x/:k(key-*)/:h(*.m3u8)/*more")
        #expect(pattern.matches(["a", "1", "key-2", "x.m3u8"]))
        #expect(pattern.matches(["a", "1", "key-2", "x.m3u8", "y", "z"]))
        #expect(!pattern.matches(["a", "1", "kez-2", "x.m3u8"]))
        #expect(!pattern.matches(["a", "1", "key-2", "x.m3u"]))
        #expect(!pattern.matches(["b", "1", "key-2", "x.m3u8"]))
        #expect(!pattern.matches(["a", "1", "key-2"]))
        let captures = RouteCaptures(pattern: pattern, segments: ["a", "1", "key-2", "x.m3u8", "y", "z"])
        #expect(captures["x"] == "1")
        #expect(captures["k"] == "key-2")
        #expect(captures["h"] == "x.m3u8")
        #expect(Array(captures.rest("more")) == ["y", "z"])
        #expect(captures["nothing"] == nil)
        let file = RoutePattern("/f/:file(name)")
        #expect(file.matches(["f", "x"]))
        #expect(!file.matches(["f", ""]))
        #expect(!file.matches(["f", String(repeating: "x", count: 256)]))
    }

    @Test func everyRouteIsReachableFromAPathOfItsOwnShape() throws {
        let table = OriginHTTPHandler.routes
        let groups = [table.live, table.vod, table.ingest, table.admin, table.status, table.peer, table.health]
        for group in groups + [table.metrics] {
            var reached: Set<String> = []
            for route in group.routes {
                #expect(route.pattern.pieces.first == .literal(group.name), "\(route.name) is outside /\(group.name)")
                let segments = route.pattern.pieces.compactMap { piece -> String? in
                    switch piece {
                    case .literal(let text): text
                    case .capture, .fileName: "x"
                    case .prefixed(_, let prefix): prefix + "1"
                    case .suffixed(_, let suffix): "a" + suffix
                    case .rest: nil
                    }
                }
                let method = route.methods.first ?? "GET"
                if case .route(_, let found, _, _) = table.resolve(method: method, segments) {
                    reached.insert(found.name)
                }
            }
            #expect(reached == Set(group.routes.map(\.name)), "group \(group.name): a route is shadowed")
        }
    }

    @Test func everyAnswerCarriesCORSHeadersRefusalsAndUnknownPathsIncluded() throws {
        let harness = try Harness { $0.access.tokens = [NamedToken(name: "ops", secret: "0ps-secret")] }
        let answers = [
            harness.request("GET", "/live/nope/index.m3u8"),
            harness.request("GET", "/nowhere"),
            harness.request("GET", "/healthz"),
            harness.request("GET", "/admin/channels", remote: Self.remote),
            harness.request("PUT", "/ingest/ch/360p/0.ts", remote: Self.remote),
            harness.request("POST", "/live/ch/index.m3u8"),
            harness.request("GET", "/status/nothing"),
        ]
        for answer in answers {
            let response = try #require(answer)
            #expect(response.headers["Access-Control-Allow-Origin"] == "*", "\(response.status) \(response.text)")
            #expect(response.headers["Access-Control-Expose-Headers"] != nil)
        }
    }

    @Test func accessIsDecidedByTheGroupBeforeAnyRouteRuns() throws {
        let harness = try Harness {
            $0.access.tokens = [
                NamedToken(name: "ops", secret: "0ps-secret"), NamedToken(name: "news", secret: "n3ws-secret"),
            ]
            $0.access.admin = ["ops"]
        }
        // The admin API: 401 without a token, 403 with one that does not open it, the same for unknown paths.
        #expect(harness.request("GET", "/admin/channels")?.status == 401)
        #expect(harness.request("GET", "/admin/no/such/path")?.status == 401)
        #expect(harness.request("GET", "/admin/channels", token: "n3ws-secret")?.status == 403)
        #expect(harness.request("GET", "/status/timeline.json", token: "n3ws-secret")?.status == 403)
        #expect(harness.request("GET", "/admin/channels", token: "0ps-secret")?.status == 200)
        #expect(harness.request("GET", "/admin/no/such/path", token: "0ps-secret")?.status == 404)
        // Pushes from elsewhere than loopback with no ingest token: 403 before the path is looked at.
        let refused = try #require(harness.request("PUT", "/ingest/ch/360p/0.ts", body: [0x47], remote: Self.remote))
        #expect(refused.status == 403)
        #expect(refused.text.contains("not a loopback client"))
        #expect(harness.request("PUT", "/ingest/ch/x/y/z", remote: Self.remote)?.status == 403)
        #expect(harness.request("PUT", "/ingest/ch/x/y/z")?.status == 404)
        #expect(harness.origin.allChannels.map(\.name) == ["ch"])
    }

    @Test func aMethodTheRouteDoesNotTakeIs405WithTheRoutesAllowList() throws {
        let harness = try Harness()
        let tokens = try #require(harness.request("GET", "/admin/channels/ch/tokens"))
        #expect(tokens.status == 405)
        #expect(tokens.headers["Allow"] == "POST, OPTIONS")
        #expect(tokens.text.contains("\"error\""))
        let markers = try #require(harness.request("PUT", "/admin/channels/ch/dateranges"))
        #expect(markers.status == 405)
        #expect(markers.headers["Allow"] == "GET, HEAD, POST, OPTIONS")
        // The channel is looked up first on the marker routes: an unknown one is 404 whatever the method.
        #expect(harness.request("PUT", "/admin/channels/nope/dateranges")?.status == 404)
        let push = try #require(harness.request("GET", "/ingest/ch/360p/0.ts"))
        #expect(push.status == 405)
        #expect(push.headers["Allow"] == "PUT, POST, DELETE, OPTIONS")
        let live = try #require(harness.request("DELETE", "/live/ch/360p/index.m3u8"))
        #expect(live.status == 405)
        #expect(live.headers["Allow"] == "GET, HEAD, OPTIONS")
        let preflight = try #require(harness.request("OPTIONS", "/live/ch/360p/index.m3u8"))
        #expect(preflight.status == 204)
        #expect(preflight.headers["Access-Control-Allow-Methods"] == "GET, HEAD, OPTIONS")
    }

    /// The marker and recording routes answered a wrong method with a text/plain 405, unlike the rest of the admin API.
    @Test func aWrongMethodOnAMarkerOrRecordingRouteIsAJSON405WithItsAllowList() throws {
        let harness = try Harness()
        let calls = [
            ("DELETE", "/admin/channels/ch/dateranges", "GET, HEAD, POST, OPTIONS"),
            ("DELETE", "/admin/channels/ch/dateranges/a", "GET, HEAD, PATCH, OPTIONS"),
            ("PUT", "/admin/channels/ch/recordings", "GET, HEAD, POST, OPTIONS"),
            ("POST", "/admin/channels/ch/recordings/r", "GET, HEAD, DELETE, OPTIONS"),
        ]
        for (method, path, allowed) in calls {
            let response = try #require(harness.request(method, path))
            #expect(response.status == 405, "\(method) \(path)")
            #expect(response.headers["Allow"] == allowed, "\(method) \(path)")
            #expect(response.headers["Content-Type"] == "application/json", "\(method) \(path)")
            #expect(response.text.contains("\"error\""), "\(method) \(path): \(response.text)")
        }
    }

    /// A wrong method on an encryption key's path answered 404 "unknown admin path" for a path that exists.
    @Test func aWrongMethodOnAKeyPathIsA405NotAnUnknownPath() throws {
        let harness = try Harness()
        let response = try #require(harness.request("POST", "/admin/channels/ch/keys/0"))
        #expect(response.status == 405, "\(response.text)")
        #expect(response.headers["Allow"] == "GET, HEAD, OPTIONS")
        #expect(response.headers["Content-Type"] == "application/json")
        #expect(!response.text.contains("unknown admin path"))
    }

    @Test func everyAnswerIsCountedOnceByStatusClass() throws {
        let harness = try Harness()
        try harness.pushSlot(file: "0.ts")
        let before = harness.counted
        #expect(harness.status("/live/ch/360p/index.m3u8") == 200)
        #expect(harness.request("GET", "/live/ch/nope/index.m3u8")?.status == 404)
        #expect(harness.request("GET", "/live/nope/index.m3u8")?.status == 404)
        #expect(harness.request("GET", "/nowhere")?.status == 404)
        #expect(harness.request("POST", "/admin/channels/ch/tokens")?.status == 409)
        let after = harness.counted
        #expect(after["2xx"] == before["2xx"]! + 1)
        #expect(after["4xx"] == before["4xx"]! + 4)
    }

    @Test func aRefusedPlaybackTokenIsCountedAsARefusalNotAsAnAnswer() throws {
        let harness = try Harness { configuration in
            configuration.origin.channels[0].playback = PlaybackAuthorization(
                form: .importVariable, secret: Array("route table tests' playback secret, 32+ bytes".utf8),
                maxTokenSeconds: 3600)
        }
        let before = harness.counted
        let refused = try #require(harness.request("GET", "/live/ch/index.m3u8"))
        #expect(refused.status == 403)
        #expect(refused.headers["Access-Control-Allow-Origin"] == "*")
        #expect(harness.counted == before)
        #expect(harness.handler.playbackRefusals.counts(channel: "ch")["missing"] == 1)
        // Media playlists are open: no token, no refusal (404 here: nothing was pushed yet).
        #expect(harness.request("GET", "/live/ch/360p/index.m3u8")?.status == 404)
        #expect(harness.handler.playbackRefusals.counts(channel: "ch")["missing"] == 1)
    }

    @Test func everyLiveRouteButTheMediaAndIFramePlaylistsDeclaresThePlaybackGate() {
        // The steering manifest carries the group's health, no media (docs/content-steering.md).
        let open: Set<String> = ["live.mediaPlaylist", "live.iFramePlaylist", "live.steering"]
        for route in OriginHTTPHandler.routes.live.routes {
            #expect(route.needs.contains(.playbackGate) == !open.contains(route.name), "\(route.name)")
            #expect(route.needs.contains(.channel), "\(route.name)")
        }
    }

    @Test func onAProtectedChannelEveryGatedLiveURLIsRefusedWithoutATokenAndThePlaylistsAreNot() throws {
        let harness = try Harness { configuration in
            configuration.origin.channels[0].playback = PlaybackAuthorization(
                form: .queryParameter, secret: Array("route table tests' playback secret, 32+ bytes".utf8),
                maxTokenSeconds: 3600)
        }
        try harness.pushSlot(file: "0.ts")
        let gated = [
            "/live/ch/index.m3u8", "/live/ch/key-0.key", "/live/ch/other", "/live/ch/360p/iframe-0.ts",
            "/live/ch/360p/init-0.mp4", "/live/ch/360p/0.ts", "/live/ch/nope/0.ts",
        ]
        for path in gated { #expect(harness.status(path) == 403, "\(path)") }
        #expect(harness.status("/live/ch/360p/index.m3u8") == 200)
        #expect(harness.status("/live/ch/360p/iframes.m3u8") == 200)
        #expect(harness.handler.playbackRefusals.counts(channel: "ch")["missing"] == UInt64(gated.count))
        // The channel is looked up before the gate: an unknown one is 404, not a refusal.
        #expect(harness.status("/live/nope/index.m3u8") == 404)
    }

    @Test func adminChangesAreAuditedOnceAnsweredAndReadsAreNot() throws {
        let harness = try Harness()
        #expect(harness.request("GET", "/admin/channels")?.status == 200)
        #expect(harness.request("POST", "/admin/channels/ch/tokens")?.status == 409)
        #expect(harness.request("DELETE", "/admin/unknown")?.status == 404)
        let actions = harness.audit.all.compactMap { $0.metadata["audit.action"] }
        #expect(actions == ["POST /admin/channels/ch/tokens", "DELETE /admin/unknown"])
        let outcomes = harness.audit.all.compactMap { $0.metadata["audit.outcome"] }
        #expect(outcomes == ["409", "404"])
    }
}
