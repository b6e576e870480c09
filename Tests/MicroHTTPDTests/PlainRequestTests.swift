import Glibc
import MicroHTTPD
import SharedBytes
import Synchronization
import TestSupport
import Testing

/// The fast path: `handlePlain(_:)` sees exactly the GETs and HEADs whose answer depends on method, path and
/// Accept-Encoding only; everything else reaches `handle(_:)` with its full head.
@Suite(.offThePool) struct PlainRequestTests {
    /// Records what reached each entry point; answers plain requests itself only for paths under /fast.
    final class Handler: HTTPRequestHandler {
        struct Plain: Sendable, Equatable {
            var isHead: Bool
            var path: String
            var acceptEncoding: String?
            var threadIndex: Int
        }

        let plain = Recorder<Plain>()
        let full = Recorder<String>()
        let readsCMCDHeaders: Bool

        init(readsCMCDHeaders: Bool = true) { self.readsCMCDHeaders = readsCMCDHeaders }

        func handle(_ request: HTTPRequestHead) -> HTTPRequestAction {
            full.record("\(request.method) \(request.path)")
            return .respond(.text(200, "full\n"))
        }

        func handlePlain(_ request: PlainRequest) -> HTTPRequestAction? {
            plain.record(
                Plain(
                    isHead: request.isHead, path: request.pathString,
                    acceptEncoding: request.acceptEncoding.map { String(decoding: $0, as: UTF8.self) },
                    threadIndex: request.threadIndex))
            guard request.path.starts(with: "/fast".utf8) else { return nil }
            return .respond(.text(200, "plain\n"))
        }
    }

    private func exchange(_ port: Int, _ request: String, bodyExpected: Bool = true) throws -> RawHTTPResponse {
        let client = try RawHTTPConnection(port: port)
        try client.send(request)
        return try client.readResponse(method: bodyExpected ? "GET" : "HEAD")
    }

    @Test func plainGetsAndHeadsTakeTheFastPathAndTheRestDoNot() throws {
        let handler = Handler()
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threadCount: 2), handler: handler)
        try server.start()
        defer { server.stop() }
        let port = server.boundPort

        let get = try exchange(port, "GET /fast/a%20b HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip, br\r\n\r\n")
        #expect(get.status == 200 && get.text == "plain\n")
        let head = try exchange(port, "HEAD /fast/x HTTP/1.1\r\nHost: x\r\n\r\n", bodyExpected: false)
        #expect(head.status == 200 && head.header("Content-Length") == "6")
        // Declined by the handler: the normal route answers.
        let declined = try exchange(port, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(declined.text == "full\n")
        #expect(
            handler.plain.all.map {
                Handler.Plain(isHead: $0.isHead, path: $0.path, acceptEncoding: $0.acceptEncoding, threadIndex: 0)
            }
                == [
                    .init(isHead: false, path: "/fast/a%20b", acceptEncoding: "gzip, br", threadIndex: 0),
                    .init(isHead: true, path: "/fast/x", acceptEncoding: nil, threadIndex: 0),
                    .init(isHead: false, path: "/slow", acceptEncoding: nil, threadIndex: 0),
                ])

        // Never offered: other methods, a query, validators, ranges, a body, a repeated Accept-Encoding.
        let notPlain = [
            "POST /fast HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
            "GET /fast?x=1 HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /fast HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"a\"\r\n\r\n",
            "GET /fast HTTP/1.1\r\nHost: x\r\nif-modified-since: Mon, 23 Nov 2026 10:00:00 GMT\r\n\r\n",
            "GET /fast HTTP/1.1\r\nHost: x\r\nRange: bytes=0-1\r\n\r\n",
            "GET /fast HTTP/1.1\r\nHost: x\r\nIf-Range: \"a\"\r\n\r\n",
            "GET /fast HTTP/1.1\r\nHost: x\r\nIf-Match: *\r\n\r\n",
            "GET /fast HTTP/1.1\r\nHost: x\r\nIf-Unmodified-Since: Mon, 23 Nov 2026 10:00:00 GMT\r\n\r\n",
            "GET /fast HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
            "GET /fast HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\nAccept-Encoding: br\r\n\r\n",
        ]
        for request in notPlain {
            let answer = try exchange(port, request)
            #expect(answer.text == "full\n", "\(request)")
        }
        #expect(handler.plain.all.count == 3)
        #expect(handler.full.all.count == 1 + notPlain.count)
        // A GET with "Content-Length: 0" has no body: plain.
        let empty = try exchange(port, "GET /fast HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        #expect(empty.text == "plain\n")
    }

    @Test func cmcdHeadersLeaveTheFastPathOnlyForAHandlerThatReadsThem() throws {
        let request = "GET /fast HTTP/1.1\r\nHost: x\r\nCMCD-Request: bl=2000\r\ncmcd-session: sid=\"s\"\r\n\r\n"
        for reads in [true, false] {
            let server = HTTPServer(
                configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threadCount: 1),
                handler: Handler(readsCMCDHeaders: reads))
            try server.start()
            defer { server.stop() }
            #expect(try exchange(server.boundPort, request).text == (reads ? "full\n" : "plain\n"), "reads: \(reads)")
        }
    }

    @Test func keepAliveWorksOnTheFastPathAndTheThreadIndexIsStablePerConnection() throws {
        let handler = Handler()
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threadCount: 2), handler: handler)
        try server.start()
        defer { server.stop() }
        let client = try RawHTTPConnection(port: server.boundPort)
        for _ in 0..<50 {
            try client.send("GET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
            let answer = try client.readResponse()
            #expect(answer.status == 200 && answer.text == "plain\n")
            #expect(answer.header("Connection")?.lowercased() != "close")
        }
        let indices = Set(handler.plain.all.map(\.threadIndex))
        #expect(indices.count == 1, "one connection is served by one libmicrohttpd thread")
        // The completion callback may run a moment after the last byte went out.
        try waitUntil("no request in flight", timeout: .seconds(1), interval: .milliseconds(10)) {
            server.requestsInFlight == 0
        }
    }
}
