import Foundation
import LiveTimeline
import Logging
import MicroHTTPD
import OriginCore
import OriginServer
import SharedBytes
import TestSupport
import Testing

/// Sends a request to the handler as a client at `remote` would (no socket: the address is the test's choice) and
/// returns the answer, with the body handed over as the server would.
func send(
    _ handler: OriginHTTPHandler, _ method: String, _ path: String, token: String? = nil, body: [UInt8] = [],
    remote: String
) -> HTTPResponse? {
    var headers = HTTPHeaders()
    if let token { headers.append(name: "Authorization", value: "Bearer \(token)") }
    let head = HTTPRequestHead(method: method, path: path, headers: headers, remoteAddress: remote)
    switch handler.handle(head) {
    case .respond(let response): return response
    case .receiveBody(let limit, let complete):
        return body.count <= limit ? complete(SharedBytes(body)) : nil
    case .streamBody(_, let receiver):
        if let early = body.withUnsafeBytes({ receiver.receive($0) }) { return early }
        return receiver.finish()
    case .respondPrepared, .suspend, .receiveBodyThenSuspend:
        return nil
    }
}

extension HTTPResponse {
    /// The body as text.
    var text: String {
        if case .bytes(let bytes) = body { return String(decoding: bytes.array, as: UTF8.self) }
        return ""
    }
}

/// Who may push and administer: without any token, loopback clients only; with tokens, only the tokens that grant
/// the channel (or rendition, or every channel), from loopback too. Refusals say why, change nothing, are counted in
/// `/metrics` and recorded in the audit log by the token's name, never its secret.
@Suite("Access: loopback by default, per-channel and per-rendition tokens, audit", .offThePool)
struct AccessControlTests {
    static let remote = "192.0.2.7"

    /// A stack whose channel `ch` is granted to token `news`, channel `sport` to `sport`, rendition `ch/180p` also to
    /// `ch-low`; `ops` opens the admin API.
    static func tokenStack(audit: CapturedLog? = nil, global: Bool = false) throws -> OriginTestStack {
        try OriginTestStack(audit: audit?.logger()) { configuration in
            configuration.origin.channels.append(
                ChannelConfiguration(name: "sport", renditions: [RenditionConfiguration(name: "360p")]))
            configuration.access.tokens = [
                NamedToken(name: "news", secret: "n3ws-secret"), NamedToken(name: "sport", secret: "sp0rt-secret"),
                NamedToken(name: "ch-low", secret: "l0w-secret"), NamedToken(name: "ops", secret: "0ps-secret"),
            ]
            configuration.access.channels = ["ch": ["news"], "sport": ["sport"]]
            configuration.access.renditions = ["ch": ["180p": ["ch-low"]]]
            configuration.access.admin = ["ops"]
            if global { configuration.ingestToken = "gl0bal-secret" }
        }
    }

    @Test func withoutATokenARemotePushIsRefused403AndALoopbackPushIsTaken() throws {
        let audit = CapturedLog()
        let stack = try OriginTestStack(audit: audit.logger())
        stack.clock.advance(seconds: 2)
        let segment = stack.nextSegment("360p")
        for path in ["/ingest/ch/360p/0.ts", "/ingest/evil/r/0.ts", "/ingest/ch/master.m3u8"] {
            let refused = try #require(send(stack.handler, "PUT", path, body: segment, remote: Self.remote))
            #expect(refused.status == 403, "\(path)")
            #expect(refused.text.contains("not a loopback client"), "\(path)")
            #expect(refused.text.contains("ingest.token"), "\(path)")
        }
        #expect(stack.origin.allChannels.map(\.name) == ["ch"])
        #expect(try stack.get("/live/ch/360p/index.m3u8").status == 404)
        // The same push from loopback (a real socket to 127.0.0.1), with no token at all.
        #expect(try stack.push("360p", segment, file: "0.ts").status == 201)
        // ... and from an IPv6 loopback address, to a channel it creates.
        let created = try #require(send(stack.handler, "PUT", "/ingest/new/360p/0.ts", body: segment, remote: "::1"))
        #expect(created.status == 201, "\(created.text)")
        let metrics = try stack.get("/metrics").text
        #expect(metrics.contains("hlsorigin_refusals_total{route=\"ingest\",reason=\"forbidden_remote\"} 3\n"))
        #expect(metrics.contains("hlsorigin_refusals_total{route=\"ingest\",reason=\"unauthorized\"} 0\n"))
        let refusals = audit.all.filter { $0.metadata["audit.outcome"] == "forbidden_remote" }
        #expect(refusals.count == 3)
        #expect(refusals.allSatisfy { $0.metadata["audit.remote"] == Self.remote && $0.level == .warning })
        #expect(refusals.first?.metadata["audit.action"] == "PUT /ingest/ch/360p/0.ts")
        let creation = audit.all.first { $0.metadata["audit.action"] == "channel created" }
        #expect(creation?.metadata["hls.channel"] == "new")
        #expect(creation?.metadata["audit.credential"] == "loopback")
        #expect(creation?.metadata["audit.remote"] == "::1")
    }

    @Test func aChannelsTokenOpensItAndNoOtherChannelFromAnywhere() throws {
        let audit = CapturedLog()
        let stack = try Self.tokenStack(audit: audit)
        stack.clock.advance(seconds: 2)
        let segment = stack.nextSegment("360p")
        func push(_ path: String, _ token: String?, from remote: String = Self.remote) throws -> HTTPResponse {
            try #require(send(stack.handler, "PUT", path, token: token, body: segment, remote: remote))
        }
        // Another channel's token: 403 naming the token, from a remote host and from loopback alike.
        for remote in [Self.remote, "127.0.0.1"] {
            let wrong = try push("/ingest/ch/360p/0.ts", "sp0rt-secret", from: remote)
            #expect(wrong.status == 403)
            #expect(wrong.text.contains("token 'sport' does not grant pushes into channel 'ch' rendition '360p'"))
        }
        // No token, or an unknown one: 401, also from loopback (the channel has tokens).
        for (token, remote) in [(nil, Self.remote), ("n3ws-secre", Self.remote), (nil, "127.0.0.1")] {
            let refused = try push("/ingest/ch/360p/0.ts", token, from: remote)
            #expect(refused.status == 401, "\(String(describing: token)) \(remote)")
            #expect(refused.headers["WWW-Authenticate"] == "Bearer realm=\"hlsorigin\"")
        }
        // A rendition's token opens that rendition only.
        #expect(try push("/ingest/ch/360p/0.ts", "l0w-secret").status == 403)
        // A channel created by a push takes no channel's token (only the global one, or loopback without one).
        #expect(try push("/ingest/fresh/360p/0.ts", "n3ws-secret").status == 403)
        #expect(stack.origin.channel(named: "fresh") == nil)
        #expect(try stack.get("/live/ch/360p/index.m3u8").status == 404)
        // The channel's own token: taken, from a remote host.
        let accepted = try push("/ingest/ch/360p/0.ts", "n3ws-secret")
        #expect(accepted.status == 201, "\(accepted.text)")
        let low = try push("/ingest/ch/180p/0.ts", "l0w-secret")
        #expect(low.status == 422 || low.status == 201, "\(low.text)")  // authorized: the core judged the media
        #expect(try stack.get("/live/ch/360p/0.ts").body == segment)
        // A channel no token grants still takes loopback pushes without a token.
        #expect(try push("/ingest/fresh/360p/0.ts", nil, from: "127.0.0.1").status == 201)

        let metrics = try stack.get("/metrics").text
        #expect(metrics.contains("hlsorigin_refusals_total{route=\"ingest\",reason=\"wrong_token\"} 4\n"))
        #expect(metrics.contains("hlsorigin_refusals_total{route=\"ingest\",reason=\"unauthorized\"} 3\n"))
        let wrong = audit.all.filter { $0.metadata["audit.outcome"] == "wrong_token" }.map {
            $0.metadata["audit.credential"]
        }
        #expect(wrong == ["sport", "sport", "ch-low", "news"])
        for secret in ["n3ws-secret", "sp0rt-secret", "l0w-secret", "0ps-secret"] {
            #expect(!audit.text.contains(secret))
        }
    }

    @Test func theGlobalIngestTokenOpensEveryChannelAndCreatesChannels() throws {
        let audit = CapturedLog()
        let stack = try Self.tokenStack(audit: audit, global: true)
        stack.clock.advance(seconds: 2)
        let segment = stack.nextSegment("360p")
        for path in ["/ingest/ch/360p/0.ts", "/ingest/sport/360p/0.ts", "/ingest/fresh/360p/0.ts"] {
            let answer = try #require(
                send(stack.handler, "PUT", path, token: "gl0bal-secret", body: segment, remote: Self.remote))
            #expect(answer.status == 201, "\(path): \(answer.text)")
        }
        // With a global token, loopback is no exception anywhere.
        let loopback = try #require(
            send(stack.handler, "PUT", "/ingest/other/360p/0.ts", body: segment, remote: "127.0.0.1"))
        #expect(loopback.status == 401)
        let creation = try #require(audit.all.first { $0.metadata["audit.action"] == "channel created" })
        #expect(creation.metadata["audit.credential"] == "ingest")
        #expect(creation.metadata["audit.remote"] == Self.remote)
        #expect(creation.metadata["hls.channel"] == "fresh")
        #expect(!audit.text.contains("gl0bal-secret"))
    }

    @Test func adminActionsAreAuditedByTokenNameAndOtherTokensDoNotOpenIt() throws {
        let audit = CapturedLog()
        let stack = try Self.tokenStack(audit: audit)
        let body = Array(#"{"id":"ad-1","duration":30}"#.utf8)
        let path = "/admin/channels/ch/dateranges"
        #expect(send(stack.handler, "POST", path, token: "n3ws-secret", body: body, remote: Self.remote)?.status == 403)
        #expect(send(stack.handler, "GET", "/admin/channels", remote: "127.0.0.1")?.status == 401)
        #expect(send(stack.handler, "GET", "/status", remote: Self.remote)?.status == 401)
        let posted = try #require(
            send(stack.handler, "POST", path, token: "0ps-secret", body: body, remote: Self.remote))
        #expect(posted.status == 201, "\(posted.text)")
        #expect(send(stack.handler, "GET", "/admin/channels", token: "0ps-secret", remote: Self.remote)?.status == 200)
        let actions = audit.all.filter { $0.metadata["audit.route"] == "admin" }
        #expect(actions.map { $0.metadata["audit.outcome"] } == ["wrong_token", "unauthorized", "unauthorized", "201"])
        #expect(actions.last?.metadata["audit.credential"] == "ops")
        #expect(actions.last?.metadata["audit.action"] == "POST /admin/channels/ch/dateranges")
        #expect(actions.last?.metadata["audit.remote"] == Self.remote)
        let metrics = try stack.get("/metrics", headers: []).text
        #expect(metrics.contains("hlsorigin_refusals_total{route=\"admin\",reason=\"unauthorized\"} 2\n"))
        #expect(metrics.contains("hlsorigin_refusals_total{route=\"admin\",reason=\"wrong_token\"} 1\n"))
        #expect(!audit.text.contains("0ps-secret") && !audit.text.contains("n3ws-secret"))
    }
}
