import Dispatch
import Glibc
import MicroHTTPD
import Synchronization
import TestSupport
import Testing

/// Suspended requests (what LL-HLS blocking playlist reloads will use): answered later from any thread, all answered,
/// answered with 503 when the server stops. Every wait here is bounded, so a regression fails instead of hanging.
@Suite(.offThePool) struct SuspendTests {
    @Test func suspendedRequestIsAnsweredFromAnotherThread() throws {
        try withTestServer({ head in
            if head.path == "/plain" { return .respond(.text(200, "plain")) }
            return .suspend { responder in
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100)) {
                    responder.respond(.text(200, "late answer", headers: ["X-Late": "yes"]))
                    responder.respond(.text(500, "ignored second answer"))
                }
            }
        }) { _, port in
            let client = try RawHTTPConnection(port: port)
            try client.send("GET /blocking.m3u8?_HLS_msn=5 HTTP/1.1\r\nHost: t\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.statusLine == "HTTP/1.1 200 OK")
            #expect(response.header("X-Late") == "yes")
            #expect(response.text == "late answer")
            #expect(response.header("Connection") == nil)
            // Keep-alive survives the suspension.
            try client.send("GET /plain HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try client.readResponse().text == "plain")
        }
    }

    @Test func answerGivenInsideStartIsSent() throws {
        try withTestServer({ _ in .suspend { $0.respond(.text(200, "at once")) } }) { _, port in
            let client = try RawHTTPConnection(port: port)
            try client.send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try client.readResponse().text == "at once")
        }
    }

    /// A handler that suspends every request and, once `count` wait, answers them all with `answer`.
    private static func releasingInGroups(
        of count: Int, with answer: HTTPResponder.Answer
    ) -> @Sendable (HTTPRequestHead) -> HTTPRequestAction {
        let waiting = Mutex<[HTTPResponder]>([])
        return { _ in
            .suspend { responder in
                let all = waiting.withLock { list -> [HTTPResponder]? in
                    list.append(responder)
                    guard list.count == count else { return nil }
                    defer { list.removeAll() }
                    return list
                }
                for waiting in all ?? [] { waiting.respond(answer) }
            }
        }
    }

    @Test func manySuspendedRequestsAreAllAnswered() throws {
        try withTestServer(Self.releasingInGroups(of: 20, with: .response(.text(200, "released")))) { _, port in
            let clients = try (0..<20).map { _ in try RawHTTPConnection(port: port) }
            for client in clients { try client.send("GET /wait HTTP/1.1\r\nHost: t\r\n\r\n") }
            for client in clients {
                #expect(try client.readResponse().text == "released")
            }
        }
    }

    @Test func manySuspendedRequestsAreReleasedWithOnePreparedAnswer() throws {
        let headers: HTTPHeaders = ["Cache-Control": "public, max-age=12", "ETag": "\"v7\""]
        let prepared = PreparedResponse(.text(200, "one answer for every waiter", headers: headers))
        try withTestServer(Self.releasingInGroups(of: 20, with: .prepared(prepared))) { _, port in
            let clients = try (0..<20).map { _ in try RawHTTPConnection(port: port) }
            for (index, client) in clients.enumerated() {
                try client.send("\(index == 0 ? "HEAD" : "GET") /wait HTTP/1.1\r\nHost: t\r\n\r\n")
            }
            for (index, client) in clients.enumerated() {
                let response = try client.readResponse(method: index == 0 ? "HEAD" : "GET")
                #expect(response.status == 200)
                #expect(response.header("ETag") == "\"v7\"")
                #expect(response.header("Cache-Control") == "public, max-age=12")
                #expect(response.header("Content-Length") == "27")
                #expect(response.text == (index == 0 ? "" : "one answer for every waiter"))
                // The connection goes on after the prepared answer.
                try client.send("GET /wait HTTP/1.1\r\nHost: t\r\n\r\n")
            }
            for client in clients { #expect(try client.readResponse().text == "one answer for every waiter") }
        }
    }

    @Test func clientLeavingWhileSuspendedIsHarmlessAndOthersAreStillServed() throws {
        let kept = Mutex<HTTPResponder?>(nil)
        try withTestServer({ head in
            if head.path == "/plain" { return .respond(.text(200, "plain")) }
            return .suspend { responder in kept.withLock { $0 = responder } }
        }) { _, port in
            let leaving = try RawHTTPConnection(port: port)
            try leaving.send("GET /blocking.m3u8 HTTP/1.1\r\nHost: t\r\n\r\n")
            try withExtendedLifetime(leaving) {
                try waitUntil("the handler to keep the responder") { kept.withLock { $0 != nil } }
            }
            _ = consume leaving  // the client closes its connection while the request is suspended
            let responder = try #require(kept.withLock { $0 })
            responder.respond(.text(200, "nobody listens"))
            #expect(responder.isAnswered)
            let other = try RawHTTPConnection(port: port)
            try other.send("GET /plain HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try other.readResponse().text == "plain")
        }
    }

    @Test func stopAnswersSuspendedRequestsWith503() throws {
        let suspended = Atomic<Int>(0)
        let configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, threadCount: 2)
        let server = HTTPServer(configuration: configuration) { _ in
            .suspend { _ in suspended.add(1, ordering: .sequentiallyConsistent) }
        }
        try server.start()
        let client = try RawHTTPConnection(port: server.boundPort)
        try client.send("GET /never HTTP/1.1\r\nHost: t\r\n\r\n")
        try waitUntil("the handler to suspend the request") { suspended.load(ordering: .sequentiallyConsistent) > 0 }
        try finishWithin(.seconds(10), "stop() with a request suspended") { server.stop() }
        let response = try client.readResponse()
        #expect(response.statusLine == "HTTP/1.1 503 Service Unavailable")
        #expect(response.header("Connection")?.lowercased() == "close")
        #expect(response.text == "Server shutting down\n")
        #expect(try client.isClosedByPeer())
        #expect(server.boundPort == 0)
    }

    @Test func responderOutlivingTheServerIsHarmless() throws {
        let kept = Mutex<HTTPResponder?>(nil)
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threadCount: 1)
        ) { _ in .suspend { responder in kept.withLock { $0 = responder } } }
        try server.start()
        let client = try RawHTTPConnection(port: server.boundPort)
        try client.send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n")
        try waitUntil("the handler to keep the responder") { kept.withLock { $0 != nil } }
        try finishWithin(.seconds(10), "stop() with a request suspended") { server.stop() }
        #expect(try client.readResponse().status == 503)
        let responder = try #require(kept.withLock { $0 })
        #expect(responder.isAnswered)
        responder.respond(.text(200, "too late"))  // ignored: already answered with 503
    }
}
