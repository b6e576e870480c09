import Dispatch
import Glibc
import MicroHTTPD
import SharedBytes
import TestSupport
import Testing

/// `HTTPRequestAction.receiveBodyThenSuspend`: the body is read, then the request waits suspended (holding no
/// libmicrohttpd thread) until it is answered from elsewhere.
@Suite(.offThePool) struct ReceiveBodyThenSuspendTests {
    @Test func theBodyIsHandedOverAndTheAnswerComesLaterWhileOthersAreServed() throws {
        let handler: @Sendable (HTTPRequestHead) -> HTTPRequestAction = { head in
            guard head.method == "POST" else { return .respond(.text(200, "playlist\n")) }
            return .receiveBodyThenSuspend(limit: 1024) { body, responder in
                let text = String(decoding: body.array, as: UTF8.self)
                // Answered two seconds later from another thread, as a slow database call would be.
                DispatchQueue.global().asyncAfter(deadline: .now() + 2) {
                    responder.respond(.text(201, "stored \(text)\n"))
                }
            }
        }
        try withTestServer(threadCount: 2, handler) { _, port in
            // As many waiting posts as there are worker threads, and more.
            var posts: [RawHTTPConnection] = []
            for index in 0..<4 {
                let post = try RawHTTPConnection(port: port)
                try post.send("POST /m HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nm\(index)")
                posts.append(post)
            }
            usleep(200_000)
            let reader = try RawHTTPConnection(port: port, timeout: .seconds(1))
            let started = ContinuousClock.now
            for _ in 0..<20 {
                try reader.send("GET /p HTTP/1.1\r\nHost: t\r\n\r\n")
                #expect(try reader.readResponse().text == "playlist\n")
            }
            #expect(ContinuousClock.now - started < .milliseconds(500), "reads waited for the suspended posts")
            for (index, post) in posts.enumerated() {
                let response = try post.readResponse()
                #expect(response.status == 201)
                #expect(response.text == "stored m\(index)\n")
            }
        }
    }
}
