import Dispatch
import Glibc
import MicroHTTPD
import SharedBytes
import Synchronization
import TestSupport
import Testing

@Suite(.offThePool) struct HTTPServerTests {
    @Test func getSendsStatusHeadersAndBodyExactly() throws {
        let body = SharedBytes(string: "hello, world\n")
        try withTestServer({ _ in
            .respond(
                HTTPResponse(
                    status: 200,
                    headers: ["Content-Type": "application/vnd.apple.mpegurl", "Cache-Control": "max-age=1"],
                    body: .bytes(body)))
        }) { _, port in
            let client = try RawHTTPConnection(port: port)
            try client.send("GET /live/index.m3u8 HTTP/1.1\r\nHost: test\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.statusLine == "HTTP/1.1 200 OK")
            let withoutDate = response.headers.filter { $0.name != "Date" }.map { "\($0.name): \($0.value)" }
            #expect(
                withoutDate == [
                    "Content-Type: application/vnd.apple.mpegurl", "Cache-Control: max-age=1", "Content-Length: 13",
                ])
            #expect(response.header("Date")?.hasSuffix(" GMT") == true)
            #expect(response.body == Array("hello, world\n".utf8))
        }
    }

    @Test func keepAliveAnswersTwoRequestsOnOneConnection() throws {
        let count = Atomic<Int>(0)
        try withTestServer({ head in
            let number = count.add(1, ordering: .relaxed).newValue
            return .respond(.text(200, "\(head.path) #\(number)"))
        }) { _, port in
            let client = try RawHTTPConnection(port: port)
            try client.send("GET /one HTTP/1.1\r\nHost: test\r\n\r\n")
            let first = try client.readResponse()
            try client.send("GET /two HTTP/1.1\r\nHost: test\r\n\r\n")
            let second = try client.readResponse()
            #expect(first.text == "/one #1")
            #expect(second.text == "/two #2")
            #expect(first.header("Connection") == nil)
            #expect(second.header("Connection") == nil)
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        try withTestServer({ head in .respond(.text(200, head.path)) }) { _, port in
            let client = try RawHTTPConnection(port: port)
            try client.send("GET /a HTTP/1.1\r\nHost: t\r\n\r\nGET /b HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try client.readResponse().text == "/a")
            #expect(try client.readResponse().text == "/b")
        }
    }

    @Test func headKeepsContentLengthAndSendsNoBody() throws {
        let body = SharedBytes(Array(repeating: UInt8(ascii: "x"), count: 1000))
        try withTestServer({ _ in .respond(HTTPResponse(status: 200, body: .bytes(body))) }) { _, port in
            let client = try RawHTTPConnection(port: port)
            try client.send("HEAD /segment.ts HTTP/1.1\r\nHost: test\r\n\r\n")
            let head = try client.readResponse(method: "HEAD")
            #expect(head.status == 200)
            #expect(head.header("Content-Length") == "1000")
            // If a body had been sent, the next response would not start right after the head.
            try client.send("GET /segment.ts HTTP/1.1\r\nHost: test\r\n\r\n")
            let get = try client.readResponse()
            #expect(get.statusLine == "HTTP/1.1 200 OK")
            #expect(get.body.count == 1000)
        }
    }

    @Test func sliceServesTheRange() throws {
        let bytes = SharedBytes((0..<200).map { UInt8($0) })
        try withTestServer({ _ in
            .respond(
                HTTPResponse(
                    status: 206, headers: ["Content-Range": "bytes 10-19/200"],
                    body: .slice(bytes, 10..<20)))
        }) { _, port in
            let client = try RawHTTPConnection(port: port)
            try client.send("GET /x HTTP/1.1\r\nHost: test\r\nRange: bytes=10-19\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.statusLine == "HTTP/1.1 206 Partial Content")
            #expect(response.header("Content-Length") == "10")
            #expect(response.header("Content-Range") == "bytes 10-19/200")
            #expect(response.body == Array(10..<20))
        }
    }

    @Test func emptyBodyHasZeroContentLength() throws {
        try withTestServer({ _ in .respond(HTTPResponse(status: 404)) }) { _, port in
            let client = try RawHTTPConnection(port: port)
            try client.send("GET /missing HTTP/1.1\r\nHost: test\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.statusLine == "HTTP/1.1 404 Not Found")
            #expect(response.header("Content-Length") == "0")
            #expect(response.body.isEmpty)
        }
    }

    @Test func preparedResponseServesManyRequestsFromSeveralThreads() throws {
        let payload = SharedBytes((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let prepared = PreparedResponse(
            HTTPResponse(
                status: 200, headers: ["Content-Type": "video/mp2t"], body: .bytes(payload)))
        try withTestServer({ _ in .respondPrepared(prepared) }) { _, port in
            let results = Recorder<Bool>()
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                guard let client = try? RawHTTPConnection(port: port) else { return results.record(false) }
                for _ in 0..<25 {
                    client.sendIfOpen("GET /seg.ts HTTP/1.1\r\nHost: test\r\n\r\n")
                    guard let response = try? client.readResponse() else { return results.record(false) }
                    results.record(
                        response.status == 200 && response.header("Content-Type") == "video/mp2t"
                            && response.body == payload.array)
                }
            }
            #expect(results.all.count == 100)
            #expect(results.all.allSatisfy { $0 })
        }
    }

    @Test func requestHeadCarriesRawPathDecodedQueryAndClientAddress() throws {
        let heads = Recorder<HTTPRequestHead>()
        try withTestServer({ head in
            heads.record(head)
            return .respond(HTTPResponse(status: 204))
        }) { _, port in
            let client = try RawHTTPConnection(port: port)
            try client.send(
                "GET /a%2e%2e/b?x=%20y&flag&p=a+b&bad=%zz&caf%C3%A9=%E2%82%AC HTTP/1.1\r\nHost: test\r\n"
                    + "X-Custom: one\r\nx-custom: two\r\n\r\n")
            #expect(try client.readResponse().status == 204)
            let head = try #require(heads.all.first)
            #expect(head.method == "GET")
            #expect(head.path == "/a%2e%2e/b")
            #expect(head.decodedPathSegments() == ["a..", "b"])
            #expect(head.version == "HTTP/1.1")
            #expect(head.query.map(\.name) == ["x", "flag", "p", "bad", "café"])
            #expect(head.query.map(\.value) == [" y", nil, "a b", "%zz", "€"])
            #expect(head.queryValue("x") == " y")
            #expect(head.headers.map(\.name) == ["Host", "X-Custom", "x-custom"])
            #expect(head.headers.values(for: "X-CUSTOM") == ["one", "two"])
            #expect(head.remoteAddress == "127.0.0.1")
            #expect(head.isLoopback)
        }
    }

    @Test func rawNonASCIIPathBytesArePercentEncoded() throws {
        let heads = Recorder<HTTPRequestHead>()
        try withTestServer({ head in
            heads.record(head)
            return .respond(HTTPResponse(status: 204))
        }) { _, port in
            let client = try RawHTTPConnection(port: port)
            try client.send(Array("GET /caf".utf8) + [0xC3, 0xA9, 0xFF] + Array(" HTTP/1.1\r\nHost: t\r\n\r\n".utf8))
            #expect(try client.readResponse().status == 204)
            let head = try #require(heads.all.first)
            #expect(head.path == "/caf%C3%A9%FF")
            #expect(head.decodedPathSegments() == nil)
        }
    }

    @Test func respondAnswersARequestWithABodyWithoutReadingItAndClosesTheConnection() throws {
        try withTestServer({ head in .respond(.text(405, "no \(head.method)")) }) { _, port in
            let client = try RawHTTPConnection(port: port)
            try client.send("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n0123456789")
            let first = try client.readResponse()
            #expect(first.statusLine == "HTTP/1.1 405 Method Not Allowed")
            #expect(first.text == "no POST")
            #expect(first.header("Connection") == "close")
            #expect(client.peerClosed(waitingMilliseconds: 1_000))
            // A request without a body keeps its connection.
            let other = try RawHTTPConnection(port: port)
            try other.send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try other.readResponse().text == "no GET")
            try other.send("GET /y HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try other.readResponse().text == "no GET")
        }
    }

    @Test func oversizedHeadIsAnsweredByLibmicrohttpd() throws {
        let handled = Recorder<String>()
        try withTestServer({ head in
            handled.record(head.path)
            return .respond(HTTPResponse(status: 204))
        }) { _, port in
            let client = try RawHTTPConnection(port: port)
            let bigValue = String(repeating: "v", count: 40 * 1024)
            client.sendIfOpen("GET /big HTTP/1.1\r\nHost: t\r\nX-Big: \(bigValue)\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.statusLine == "HTTP/1.1 431 Request Header Fields Too Large")
            #expect(handled.all.isEmpty)
        }
    }

    @Test func boundPortIsTheRealPort() throws {
        try withTestServer({ _ in .respond(HTTPResponse(status: 204)) }) { server, port in
            #expect(port > 0)
            #expect(server.boundPort == port)
            let client = try RawHTTPConnection(port: port)
            try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try client.readResponse().status == 204)
        }
    }

    @Test func startingOnAPortInUseThrowsAClearError() throws {
        try withTestServer({ _ in .respond(HTTPResponse(status: 204)) }) { _, port in
            let second = HTTPServer(
                configuration: HTTPServerConfiguration(host: "127.0.0.1", port: port, threadCount: 1),
                handler: HTTPClosureHandler { _ in .respond(HTTPResponse(status: 204)) })
            let error = try #require(throws: HTTPServerError.self) { try second.start() }
            #expect(
                error.message == """
                    could not start the HTTP server on 127.0.0.1 port \(port): \
                    Failed to bind to port \(port): Address already in use
                    """)
            #expect(second.boundPort == 0)
        }
    }

    @Test func aConnectionMadeBeforeTheServerStartsOnABoundSocketIsAnswered() throws {
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, threadCount: 1)
        let socket = try HTTPServer.listen(configuration)
        configuration.listeningSocket = socket
        // Find the port the kernel chose, connect and send the request: nothing refuses it, nothing answers yet.
        let port = try #require(Self.localPort(of: socket))
        let client = try RawHTTPConnection(port: port)
        try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        let server = HTTPServer(
            configuration: configuration, handler: HTTPClosureHandler { _ in .respond(HTTPResponse(status: 204)) })
        try server.start()
        defer { server.stop() }
        #expect(server.boundPort == port)
        #expect(try client.readResponse().status == 204)
    }

    @Test func bindingATakenPortEarlyThrowsTheSameClearError() throws {
        try withTestServer({ _ in .respond(HTTPResponse(status: 204)) }) { _, port in
            let error = try #require(throws: HTTPServerError.self) {
                try HTTPServer.listen(HTTPServerConfiguration(host: "127.0.0.1", port: port, threadCount: 1))
            }
            #expect(
                error.message == """
                    could not start the HTTP server on 127.0.0.1 port \(port): \
                    Failed to bind to port \(port): Address already in use
                    """)
        }
    }

    /// The local port of a bound socket.
    static func localPort(of socket: Int32) -> Int? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        return result == 0 ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }

    @Test func reusePortLetsTwoServersShareAPort() throws {
        func makeServer(port: Int) -> HTTPServer {
            HTTPServer(
                configuration: HTTPServerConfiguration(host: "127.0.0.1", port: port, threadCount: 1, reusePort: true),
                handler: HTTPClosureHandler { _ in .respond(HTTPResponse(status: 204)) })
        }
        let first = makeServer(port: 0)
        try first.start()
        defer { first.stop() }
        let second = makeServer(port: first.boundPort)
        try second.start()
        defer { second.stop() }
        #expect(second.boundPort == first.boundPort)
    }

    @Test func invalidHostIsRejected() {
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "example.invalid", port: 0, threadCount: 1),
            handler: HTTPClosureHandler { _ in .respond(HTTPResponse(status: 204)) })
        #expect(
            throws: HTTPServerError.invalidConfiguration(
                "host \"example.invalid\" is not a numeric IPv4 or IPv6 address")
        ) { try server.start() }
    }

    @Test func stopIsIdempotentAndStartTwiceThrows() throws {
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threadCount: 1),
            handler: HTTPClosureHandler { _ in .respond(HTTPResponse(status: 204)) })
        try server.start()
        #expect(throws: HTTPServerError.alreadyStarted) { try server.start() }
        server.stop()
        server.stop()
        #expect(server.boundPort == 0)
    }

    @Test func dualStackListensOnIPv4() throws {
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "::", port: 0, threadCount: 1),
            handler: HTTPClosureHandler { head in .respond(.text(200, head.remoteAddress ?? "none")) })
        try server.start()
        defer { server.stop() }
        let client = try RawHTTPConnection(port: server.boundPort)
        try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "::ffff:127.0.0.1")
    }
}
