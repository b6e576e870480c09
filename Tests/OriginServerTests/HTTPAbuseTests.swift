import Foundation
import Glibc
import OriginCore
import OriginServer
import TestSupport
import Testing

/// HTTP abuse over real sockets. Slow clients, floods, huge heads, unknown methods, traversal,
/// invalid bytes and query strings: each gets a defined answer and the server keeps serving everybody else.
@Suite("HTTP abuse: slow clients, floods, huge heads, methods, traversal, invalid bytes, query strings", .offThePool)
struct HTTPAbuseTests {
    /// A stack with two slots pushed and a short connection timeout.
    static func stack(timeout: Int = 2, connectionLimit: Int = 10_000) throws -> OriginTestStack {
        let stack = try OriginTestStack {
            $0.connectionTimeoutSeconds = timeout
            $0.connectionLimit = connectionLimit
        }
        try stack.slots(2)
        return stack
    }

    // MARK: - Slow clients

    @Test func aHeadTrickledFasterThanTheIdleTimeoutIsStillCutOffWhileOthersAreServed() throws {
        let stack = try Self.stack()
        let slow = try RawHTTPConnection(port: stack.port)
        try slow.send("GET /live/ch/index.m3u8 HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        // One header line every 300 ms: never idle for libmicrohttpd's 2 s timeout, but the head never ends.
        var cut = false
        for line in 0..<40 {
            if !slow.sendIfOpen("X-Slow-\(line): a\r\n") || slow.peerClosed(waitingMilliseconds: 300) {
                cut = true
                break
            }
            if line % 5 == 0 {
                #expect(try stack.get("/live/ch/360p/index.m3u8").status == 200, "others are served meanwhile")
            }
        }
        #expect(cut, "a head trickled for 12 s was never cut off")
        #expect(try stack.get("/live/ch/index.m3u8").status == 200)
    }

    @Test func aBodyTrickledFasterThanTheIdleTimeoutIsCutOffAndChangesNothing() throws {
        let stack = try Self.stack()
        let before = try stack.playlistText("360p")
        let slow = try RawHTTPConnection(port: stack.port)
        try slow.send("PUT /ingest/ch/360p/slow.ts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n")
        var cut = false
        for _ in 0..<40 {
            if !slow.sendIfOpen(String(repeating: "G", count: 100)) || slow.peerClosed(waitingMilliseconds: 300) {
                cut = true
                break
            }
        }
        #expect(cut, "a body trickled for 12 s was never cut off")
        #expect(try stack.playlistText("360p") == before)
        try stack.slot()
        #expect(try stack.playlistText("360p").hasSuffix("\n2.ts\n"))
    }

    @Test func aRefusedUploadIsAnsweredAtOnceAndItsTrickledBodyHoldsNoConnection() throws {
        let stack = try Self.stack(timeout: 30)
        let slow = try RawHTTPConnection(port: stack.port, timeout: .seconds(3))
        try slow.send("PUT /live/ch/360p/index.m3u8 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n")
        // One byte: the refusal may not wait for the other 99,999, nor may the connection stay for them.
        _ = slow.sendIfOpen("G")
        let response = try slow.readResponse()
        #expect(response.status == 405)
        #expect(response.text.hasPrefix("method PUT not allowed here"))
        #expect(response.header("Connection") == "close")
        var closed = false
        for _ in 0..<10 {
            if !slow.sendIfOpen("G") || slow.peerClosed(waitingMilliseconds: 300) {
                closed = true
                break
            }
        }
        #expect(closed, "a refused upload trickling its body kept its connection for 3 s")
        #expect(try stack.get("/live/ch/360p/index.m3u8").status == 200)
    }

    @Test func aSlowReaderOfAnAnswerIsNotCutWhileItKeepsReading() throws {
        let stack = try Self.stack()
        let segment = try stack.get("/live/ch/360p/1.ts").body
        let reader = try RawHTTPConnection(port: stack.port, receiveBufferSize: 4096)
        try reader.send("GET /live/ch/360p/1.ts HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        // Reads 8 KiB every 100 ms: the whole answer takes several connection timeouts.
        var received: [UInt8] = []
        for _ in 0..<2000 {
            let piece = reader.receive(upTo: 8192)
            if piece.isEmpty { break }
            received += piece
            if let end = received.firstRange(of: Array("\r\n\r\n".utf8)),
                received.count - end.upperBound >= segment.count
            {
                break
            }
            usleep(100_000)
        }
        let end = try #require(received.firstRange(of: Array("\r\n\r\n".utf8)))
        #expect(Array(received[end.upperBound...]) == segment)
    }

    // MARK: - Connection flood

    @Test func aFloodBeyondTheConnectionLimitDoesNotStopAnExistingClient() throws {
        let stack = try Self.stack(timeout: 2, connectionLimit: 8)
        let existing = try stack.connect()
        #expect(try existing.request("GET", "/live/ch/index.m3u8").status == 200)
        // Forty more connections that send nothing: seven fill the limit, the rest are over it.
        var flood: [RawHTTPConnection] = []
        for _ in 0..<40 { flood.append(try RawHTTPConnection(port: stack.port)) }
        // The existing keep-alive connection is still served.
        for _ in 0..<3 {
            #expect(try existing.request("GET", "/live/ch/360p/index.m3u8").status == 200)
        }
        // Every flood connection is closed by the server: those over the limit at once with a 503, those within
        // it when their head deadline passes.
        var answered503 = 0
        var closedSilently = 0
        for socket in flood {
            let answer = String(decoding: socket.receiveAll(), as: UTF8.self)
            if answer.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n") {
                #expect(answer.hasSuffix("\r\n\r\nToo many connections: try again shortly\n"))
                answered503 += 1
            } else {
                #expect(answer == "")
                closedSilently += 1
            }
        }
        #expect(answered503 >= 33)
        #expect(answered503 + closedSilently == 40)
        // And new clients are served again.
        #expect(try stack.get("/live/ch/360p/index.m3u8").status == 200)
    }

    // MARK: - Heads, methods

    @Test func aHugeHeaderIsAnswered431() throws {
        let stack = try Self.stack()
        let huge = String(repeating: "a", count: 20_000)
        let response = try stack.get("/live/ch/index.m3u8", headers: [("X-Huge", huge)])
        #expect(response.status == 431)
        #expect(try stack.get("/live/ch/index.m3u8").status == 200)
    }

    /// A head that fits libmicrohttpd's pool but leaves too little of it for the answer's head used to get no answer
    /// at all (the connection closed). Every size gets 200 or 431, and 431 from the configured limit on.
    @Test func everyHeadSizeGetsAnAnswerAndLargeHeadsGet431() throws {
        let stack = try Self.stack()
        #expect(stack.configuration.connectionMemoryKiB == 8)
        var statuses: [Int: Int] = [:]
        for size in stride(from: 500, through: 12_000, by: 100) {
            let value = String(repeating: "a", count: size)
            let response = try stack.get("/live/ch/360p/index.m3u8", headers: [("X-Big", value)])
            statuses[size] = response.status
            if (6_300...7_500).contains(size) {
                // Fits the pool, so libmicrohttpd would have answered 200 or closed silently: MicroHTTPD's 431.
                // (Heads that do not fit the pool at all get libmicrohttpd's own 431 with an HTML body.)
                #expect(response.status == 431)
                #expect(response.text == "Request header fields too large\n")
                #expect(response.header("Connection") == "close")
                #expect(response.header("Access-Control-Allow-Origin") == "*")
            }
        }
        #expect(statuses.values.allSatisfy { $0 == 200 || $0 == 431 }, "\(statuses.sorted { $0.key < $1.key })")
        #expect(statuses[5_000] == 200, "a 5 KB head is served")
        #expect(statuses.filter { $0.key >= 6_200 }.values.allSatisfy { $0 == 431 }, "heads over 6 KiB get 431")
        // Many small headers cost the pool a record each: still an answer, never a silent close.
        for count in [50, 100, 200, 400] {
            let headers = (0..<count).map { ("X-H\($0)", "v") }
            let status = try stack.get("/live/ch/360p/index.m3u8", headers: headers).status
            #expect(status == 200 || status == 431, "\(count) headers: \(status)")
        }
        #expect(try stack.get("/live/ch/360p/index.m3u8").status == 200)
    }

    @Test func aHugeAdminBodyIsAnswered413WithoutReadingIt() throws {
        let stack = try Self.stack()
        let body = Array(("{\"id\": \"" + String(repeating: "x", count: 100_000) + "\"}").utf8)
        let response = try stack.request("POST", "/admin/channels/ch/dateranges", body: body)
        #expect(response.status == 413)
        #expect(response.text == "Request body larger than 65536 bytes\n")
        #expect(response.header("Access-Control-Allow-Origin") == "*")
        #expect(try stack.get("/admin/channels/ch/dateranges").text.contains("\"markers\" : [\n\n  ]"))
    }

    static let routes: [(path: String, allowed: String)] = [
        ("/live/ch/index.m3u8", "GET, HEAD, OPTIONS"),
        ("/live/ch/360p/index.m3u8", "GET, HEAD, OPTIONS"),
        ("/live/ch/360p/0.ts", "GET, HEAD, OPTIONS"),
        ("/ingest/ch/360p/x.ts", "PUT, POST, DELETE, OPTIONS"),
        ("/admin/channels", "GET, HEAD, OPTIONS"),
        ("/admin/channels/ch", "GET, HEAD, OPTIONS"),
        ("/admin/channels/ch/outage", "POST, OPTIONS"),
        ("/admin/channels/ch/dateranges", "GET, HEAD, POST, OPTIONS"),
        ("/admin/channels/ch/dateranges/x", "GET, HEAD, PATCH, OPTIONS"),
        ("/healthz", "GET, HEAD, OPTIONS"),
        ("/metrics", "GET, HEAD, OPTIONS"),
    ]

    @Test(arguments: ["BREW", "PROPFIND", "TRACE", "CONNECT"])
    func unknownMethodsAre405WithAllowOnEveryRoute(method: String) throws {
        let stack = try Self.stack()
        for (path, allowed) in Self.routes {
            let response = try stack.request(method, path)
            #expect(response.status == 405, "\(method) \(path)")
            #expect(response.header("Allow") == allowed, "\(method) \(path)")
            #expect(response.header("Access-Control-Allow-Origin") == "*", "\(method) \(path)")
            #expect(response.text.contains(method), "\(method) \(path): \(response.text)")
        }
    }

    // MARK: - Traversal

    static let traversals = [
        "..%2f..%2fetc%2fpasswd", "%2e%2e/%2e%2e/etc/passwd", "%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
        "....//....//etc/passwd",
        "..%5c..%5cetc%5cpasswd", "..\\..\\etc\\passwd", "%c0%ae%c0%ae/%c0%ae%c0%ae/etc/passwd",
        "%252e%252e/%252e%252e/etc/passwd", "..%00/etc/passwd", ".%2e/.%2e/etc/passwd",
    ]

    @Test(arguments: ["/live/", "/live/ch/", "/live/ch/360p/", "/ingest/ch/360p/", "/admin/channels/", "/"])
    func traversalNeverLeavesTheRoutes(prefix: String) throws {
        let stack = try Self.stack()
        let before = try stack.playlistText("360p")
        for traversal in Self.traversals {
            for method in ["GET", "PUT"] {
                let target = prefix + traversal
                let response = try stack.request(method, target, body: method == "PUT" ? Array("x".utf8) : nil)
                #expect([400, 404, 405, 415].contains(response.status), "\(method) \(target): \(response.status)")
                #expect(!response.text.contains("root:"), "\(method) \(target)")
            }
        }
        #expect(stack.origin.allChannels.map(\.name) == ["ch"])
        #expect(try stack.playlistText("360p") == before)
    }

    // MARK: - Invalid bytes

    @Test(arguments: [
        "/live/ch%ff/index.m3u8", "/live/ch/360p%c3/index.m3u8", "/live/ch%01/index.m3u8", "/live/ch%7f/index.m3u8",
        "/live/ch%c2%85/index.m3u8", "/live/ch/360p/0.ts%00", "/ingest/ch%0a/360p/x.ts", "/admin/channels/ch%1b",
    ])
    func invalidUTF8AndControlCharactersInPathsAre400(path: String) throws {
        let stack = try Self.stack()
        for method in ["GET", "PUT"] {
            let response = try stack.request(method, path, body: method == "PUT" ? Array("x".utf8) : nil)
            #expect(response.status == 400, "\(method) \(path)")
            let reason = "malformed request path: invalid percent-encoding, UTF-8, control character or dot segment"
            // The admin API answers JSON, also here (its OpenAPI description, docs/admin-api.md).
            #expect(
                response.text
                    == (path.hasPrefix("/admin/") ? "{\n  \"error\" : \"\(reason)\"\n}\n" : reason + "\n"))
        }
    }

    @Test func rawNonASCIIAndControlBytesInTheRequestLineAreRefused() throws {
        let stack = try Self.stack()
        for raw in [[0xFF], [0xC3, 0x28], [0x01], [0x7F]] as [[UInt8]] {
            let socket = try RawHTTPConnection(port: stack.port)
            try socket.send(Array("GET /live/ch".utf8) + raw + Array("/index.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            let answer = String(decoding: socket.receive(upTo: 65536), as: UTF8.self)
            #expect(answer.hasPrefix("HTTP/1.1 400 "), "\(raw): \(answer.prefix(40))")
        }
        #expect(try stack.get("/live/ch/index.m3u8").status == 200)
    }

    @Test(
        arguments: [
            ([0x7B, 0x22, 0x69, 0x64, 0x22, 0x3A, 0x22, 0xFF, 0xFE, 0x22, 0x7D], "invalid JSON"),
            (Array("{\"id\":\"a\u{1}b\"}".utf8), "id"),
            (Array("{\"id\":\"a\\u0000b\"}".utf8), "id"),
            (Array("{\"id\":\"ok\",\"class\":\"x\\ny\"}".utf8), "class"),
            (Array("{\"id\":\"ok\",\"clientAttributes\":{\"X-A\":\"q\\\"uote\"}}".utf8), "clientAttributes"),
            (Array("{\"id\":\"ok\",\"clientAttributes\":{\"X-A\":\"\\u0007\"}}".utf8), "clientAttributes"),
        ] as [([UInt8], String)])
    func invalidUTF8AndControlCharactersInAdminJSONAre400WithAMessage(body: [UInt8], field: String) throws {
        let stack = try Self.stack()
        let response = try stack.request("POST", "/admin/channels/ch/dateranges", body: body)
        #expect(response.status == 400, "\(response.text)")
        #expect(response.header("Content-Type") == "application/json")
        #expect(response.text.contains("\"error\""))
        if field != "invalid JSON" { #expect(response.text.contains(field), "\(response.text)") }
        #expect(try stack.get("/admin/channels/ch/dateranges").text.contains("\"markers\" : [\n\n  ]"))
    }

    // MARK: - Query strings

    @Test func queryStringsAreIgnoredOnEveryRoute() throws {
        let stack = try Self.stack()
        for path in [
            "/live/ch/index.m3u8", "/live/ch/360p/index.m3u8", "/live/ch/360p/1.ts", "/live/ch/180p/0.ts",
            "/admin/channels", "/admin/channels/ch", "/admin/channels/ch/dateranges", "/healthz",
        ] {
            let plain = try stack.get(path)
            #expect(plain.status == 200, "\(path)")
            for query in ["?x=1", "?", "?x", "?a=%zz&b=%ff", "?../../etc/passwd", "?_HLS_msn=1&_HLS_part=0"] {
                let queried = try stack.get(path + query)
                #expect(queried.status == 200, "\(path)\(query)")
                #expect(queried.body == plain.body, "\(path)\(query)")
                #expect(queried.header("Content-Type") == plain.header("Content-Type"), "\(path)\(query)")
            }
        }
        #expect(try stack.get("/metrics?x=1").status == 200)
        // Ingest: a push with a query string is a push.
        stack.clock.advance(seconds: 2)
        let segment = stack.nextSegment("360p")
        let pushed = try stack.push("360p", segment, file: "segment2.ts?x=1&token=abc")
        #expect(pushed.status == 201, "\(pushed.text)")
        let delete = try stack.request("DELETE", "/ingest/ch/360p/segment0.ts?x=1")
        #expect(delete.status == 204)
    }
}
