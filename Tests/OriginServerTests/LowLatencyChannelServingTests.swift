import Foundation
import LiveTimeline
import OriginCore
import TestSupport
import Testing

@testable import OriginServer

/// Blocking reloads, the directive table and hinted parts on a Low-Latency channel fed by streamed pushes.
@Suite("Low-Latency serving on a channel with parts", .offThePool)
struct LowLatencyChannelServingTests {
    /// A stack whose channel `ch` (rendition 360p, TD 2) is Low-Latency with parts of 0.4 s.
    static func lowLatencyStack() throws -> OriginTestStack {
        try OriginTestStack(renditions: ["360p"]) { configuration in
            configuration.origin.channels[0].lowLatency = LowLatencyConfiguration(partTarget: 0.4)
            configuration.origin.channels[0].targetDuration = 2
        }
    }

    /// The URI of the last EXT-X-PART line and of the preload hint of a playlist.
    static func edge(_ playlist: String) -> (lastPart: String?, hint: String?) {
        var lastPart: String?
        var hint: String?
        for line in playlist.split(separator: "\n") {
            if line.hasPrefix("#EXT-X-PART:"), let uri = uriAttribute(line) { lastPart = uri }
            if line.hasPrefix("#EXT-X-PRELOAD-HINT:"), let uri = uriAttribute(line) { hint = uri }
        }
        return (lastPart, hint)
    }

    static func uriAttribute(_ line: Substring) -> String? {
        guard let start = line.range(of: "URI=\"") else { return nil }
        let rest = line[start.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }

    @Test func theDirectiveTableIsAnsweredAtOnceOr400() throws {
        let stack = try Self.lowLatencyStack()
        for _ in 0..<3 { try stack.slot(chunkSize: 1316) }
        let plain = try stack.get("/live/ch/360p/index.m3u8")
        let (lastPartURI, hintURI) = Self.edge(plain.text)
        let last = try #require(lastPartURI.flatMap { OriginHTTPHandler.partName($0)?.position })
        #expect(hintURI != nil)
        for query in [
            "_HLS_part=1", "_HLS_msn=x", "_HLS_msn=-1", "_HLS_msn=1&_HLS_part=y", "_HLS_skip=NO",
            "_HLS_msn=\(last.msn + 3)", "_HLS_msn=\(last.msn)&_HLS_part=99",
        ] {
            let refused = try stack.get("/live/ch/360p/index.m3u8?\(query)")
            #expect(refused.status == 400, "\(query)")
            #expect(refused.header("Cache-Control") == "no-store", "\(query)")
            #expect(refused.header("Access-Control-Allow-Origin") == "*", "\(query)")
        }
        // Listed or older: answered now with the full playlist, cacheable for 6 target durations.
        for query in [
            "_HLS_msn=\(last.msn)&_HLS_part=\(last.part)", "_HLS_msn=\(last.msn)", "_HLS_msn=0",
            "_HLS_part=0&_HLS_msn=0",
        ] {
            let answer = try stack.get("/live/ch/360p/index.m3u8?\(query)")
            #expect(answer.status == 200, "\(query)")
            #expect(answer.header("Cache-Control") == "public, max-age=12", "\(query)")
            #expect(answer.body == plain.body, "\(query)")
            #expect(answer.header("ETag") == plain.header("ETag"), "\(query)")
        }
        // `_HLS_skip` alone does not block: cached as a regular playlist.
        let delta = try stack.get("/live/ch/360p/index.m3u8?_HLS_skip=YES")
        #expect(delta.status == 200)
        #expect(delta.header("Cache-Control") == "public, max-age=1")
    }

    @Test func aBlockingReloadIsAnsweredByThePlaylistThatFirstListsItsPart() throws {
        let stack = try Self.lowLatencyStack()
        for _ in 0..<3 { try stack.slot(chunkSize: 1316) }
        let before = try stack.playlistText("360p")
        let hint = try #require(Self.edge(before).hint.flatMap { OriginHTTPHandler.partName($0)?.position })
        let waiting = try RawHTTPConnection(port: stack.port, timeout: .seconds(5))
        try waiting.send(
            RawHTTPConnection.requestBytes(
                "GET", "/live/ch/360p/index.m3u8?_HLS_msn=\(hint.msn)&_HLS_part=\(hint.part)"))
        #expect(!waiting.peerClosed(waitingMilliseconds: 200))
        try stack.slot(chunkSize: 1316)
        let answer = try waiting.readResponse()
        #expect(answer.status == 200)
        #expect(answer.header("Cache-Control") == "public, max-age=12")
        #expect(Self.edge(answer.text).lastPart == "\(hint.msn).\(hint.part).ts")
        #expect(answer.text.hasPrefix("#EXTM3U\n"))
    }

    /// A publish may release thousands of blocking reloads at once: every plain one gets the same prepared answer
    /// (byte for byte, headers included), a HEAD its head, and one with a validator an answer built for it.
    @Test func blockingReloadsReleasedTogetherGetTheSameAnswer() throws {
        let stack = try Self.lowLatencyStack()
        for _ in 0..<3 { try stack.slot(chunkSize: 1316) }
        let hint = try #require(
            Self.edge(try stack.playlistText("360p")).hint.flatMap { OriginHTTPHandler.partName($0)?.position })
        let path = "/live/ch/360p/index.m3u8?_HLS_msn=\(hint.msn)&_HLS_part=\(hint.part)"
        let requests: [(method: String, headers: [(String, String)])] = [
            ("GET", []), ("GET", []), ("GET", [("Accept-Encoding", "gzip")]), ("HEAD", []),
            ("GET", [("If-None-Match", "\"elsewhere\"")]), ("GET", []),
        ]
        let waiting = try requests.map { request in
            let connection = try RawHTTPConnection(port: stack.port, timeout: .seconds(5))
            try connection.send(RawHTTPConnection.requestBytes(request.method, path, headers: request.headers))
            return connection
        }
        let channel = try #require(stack.origin.channel(named: "ch"))
        try waitUntil("all reloads wait") { channel.lowLatencyServing.waitingReloads == requests.count }
        try stack.slot(chunkSize: 1316)
        let answers = try zip(waiting, requests).map { try $0.readResponse(method: $1.method) }
        let plain = answers[0]
        #expect(plain.status == 200)
        #expect(Self.edge(plain.text).lastPart == "\(hint.msn).\(hint.part).ts")
        for (index, answer) in answers.enumerated() {
            #expect(answer.status == 200, "\(index)")
            #expect(answer.header("Cache-Control") == "public, max-age=12", "\(index)")
            #expect(answer.header("ETag") == plain.header("ETag"), "\(index)")
        }
        for index in [1, 4, 5] {
            #expect(answers[index].body == plain.body, "\(index)")
            #expect(answers[index].header("Content-Length") == plain.header("Content-Length"), "\(index)")
        }
        #expect(answers[2].header("Content-Encoding") == "gzip")
        #expect(answers[3].body.isEmpty && answers[3].header("Content-Length") == plain.header("Content-Length"))
        // Each connection goes on: the next plain playlist request is answered on it.
        for connection in waiting {
            try connection.send(RawHTTPConnection.requestBytes("GET", "/live/ch/360p/index.m3u8"))
            #expect(try connection.readResponse().status == 200)
        }
    }

    @Test func aBlockingReloadThatIsNotSatisfiedIn3TargetDurationsGets503() throws {
        let stack = try Self.lowLatencyStack()
        for _ in 0..<3 { try stack.slot(chunkSize: 1316) }
        let last = try #require(
            Self.edge(try stack.playlistText("360p")).lastPart.flatMap { OriginHTTPHandler.partName($0)?.position })
        let waiting = try RawHTTPConnection(port: stack.port, timeout: .seconds(5))
        try waiting.send(RawHTTPConnection.requestBytes("GET", "/live/ch/360p/index.m3u8?_HLS_msn=\(last.msn + 2)"))
        // The deadline counts from when the server takes the request: wait for that before moving the clock.
        let channel = try #require(stack.origin.channel(named: "ch"))
        try waitUntil("the reload waits") { channel.lowLatencyServing.waitingReloads == 1 }
        stack.clock.advance(seconds: 5.9)
        stack.origin.tick()
        #expect(!waiting.peerClosed(waitingMilliseconds: 100))
        stack.clock.advance(seconds: 0.2)
        stack.origin.tick()
        let answer = try waiting.readResponse()
        #expect(answer.status == 503)
        #expect(answer.header("Cache-Control") == "no-store")
        #expect(try stack.get("/metrics").text.contains("hlsorigin_ll_blocking_timeouts_total{channel=\"ch\"} 1"))
    }

    @Test func aHintedPartRequestedBeforeItsFirstByteIsStreamedWhole() throws {
        let stack = try Self.lowLatencyStack()
        for _ in 0..<3 { try stack.slot(chunkSize: 1316) }
        let hint = try #require(Self.edge(try stack.playlistText("360p")).hint)
        let waiting = try RawHTTPConnection(port: stack.port, timeout: .seconds(5))
        try waiting.send(RawHTTPConnection.requestBytes("GET", "/live/ch/360p/\(hint)"))
        #expect(!waiting.peerClosed(waitingMilliseconds: 200))
        try stack.slot(chunkSize: 1316)
        let streamed = try waiting.readResponse()
        #expect(streamed.status == 200)
        #expect(streamed.header("Transfer-Encoding") == "chunked")
        #expect(streamed.header("Cache-Control") == "public, max-age=31536000, immutable")
        let later = try stack.get("/live/ch/360p/\(hint)")
        #expect(later.status == 200)
        #expect(later.header("Cache-Control") == "public, max-age=31536000, immutable")
        #expect(!later.body.isEmpty)
        #expect(streamed.body == later.body)
        // A part further ahead than the one after the hint: 404, not cached.
        let far = try #require(OriginHTTPHandler.partName(hint)?.position)
        let ahead = try stack.get("/live/ch/360p/\(far.msn + 3).0.ts")
        #expect(ahead.status == 404)
        #expect(ahead.header("Cache-Control") == "no-cache")
    }

}
