import Dispatch
import MicroHTTPD
import SharedBytes
import TestSupport
import Testing

@Suite(.offThePool) struct RequestBodyTests {
    /// Writes `body` with chunked transfer encoding in uneven chunk sizes.
    static func chunked(_ body: [UInt8], sizes: [Int]) -> [UInt8] {
        var output: [UInt8] = []
        var offset = 0
        var turn = 0
        while offset < body.count {
            let size = min(sizes[turn % sizes.count], body.count - offset)
            output += Array(String(size, radix: 16).utf8) + Array("\r\n".utf8)
            output += body[offset..<(offset + size)] + Array("\r\n".utf8)
            offset += size
            turn += 1
        }
        return output + Array("0\r\n\r\n".utf8)
    }

    @Test func chunkedBodyArrivesIntact() throws {
        let body = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        let received = Recorder<SharedBytes>()
        try withTestServer({ _ in
            .receiveBody(limit: 2 << 20) { bytes in
                received.record(bytes)
                return .text(201, "got \(bytes.count)")
            }
        }) { _, port in
            let client = try RawHTTPConnection(port: port)
            try client.send("PUT /ingest/seg1.ts HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
            try client.send(Self.chunked(body, sizes: [1, 4093, 65_536, 17, 100_000, 3]))
            let response = try client.readResponse()
            #expect(response.statusLine == "HTTP/1.1 201 Created")
            #expect(response.text == "got 1048576")
            #expect(received.all.first?.array == body)
            // The connection stays usable.
            try client.send("PUT /ingest/seg2.ts HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc")
            #expect(try client.readResponse().text == "got 3")
            #expect(received.all.last?.array == Array("abc".utf8))
        }
    }

    @Test func emptyBodyCompletesWithNoBytes() throws {
        try withTestServer({ _ in .receiveBody(limit: 10) { .text(200, "\($0.count)") } }) { _, port in
            let client = try RawHTTPConnection(port: port)
            try client.send("PUT /x HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n")
            #expect(try client.readResponse().text == "0")
            try client.send("GET /x HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try client.readResponse().text == "0")
        }
    }

    @Test func announcedOversizedBodyIsRejectedBeforeItIsSent() throws {
        let completed = Recorder<Int>()
        try withTestServer({ _ in
            .receiveBody(limit: 1000) { bytes in
                completed.record(bytes.count)
                return .text(200, "ok")
            }
        }) { _, port in
            let client = try RawHTTPConnection(port: port)
            // No body byte is sent: the answer must come from the head alone.
            try client.send("PUT /x HTTP/1.1\r\nHost: t\r\nContent-Length: 10000000\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.statusLine == "HTTP/1.1 413 Content Too Large")
            #expect(response.header("Connection")?.lowercased() == "close")
            #expect(response.text == "Request body larger than 1000 bytes\n")
            #expect(try client.isClosedByPeer())
            #expect(completed.all.isEmpty)
        }
    }

    @Test func announcedOversizedBodyWithExpectContinueGetsNoContinue() throws {
        try withTestServer({ _ in .receiveBody(limit: 1000) { _ in .text(200, "ok") } }) { _, port in
            let client = try RawHTTPConnection(port: port)
            try client.send("PUT /x HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 413)
        }
    }

    @Test func chunkedBodyOverTheLimitIsRejected() throws {
        let completed = Recorder<Int>()
        try withTestServer({ _ in
            .receiveBody(limit: 4096) { bytes in
                completed.record(bytes.count)
                return .text(200, "ok")
            }
        }) { _, port in
            let client = try RawHTTPConnection(port: port)
            let body = [UInt8](repeating: 0x47, count: 6000)
            client.sendIfOpen(
                Array("PUT /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
                    + Self.chunked(body, sizes: [2000]))
            let response = try client.readResponse()
            #expect(response.status == 413)
            #expect(response.header("Connection")?.lowercased() == "close")
            #expect(try client.isClosedByPeer())
            #expect(completed.all.isEmpty)
        }
    }

    @Test func bodyThatKeepsComingIsCutOff() throws {
        let completed = Recorder<Int>()
        let log = CapturedLog()
        try withTestServer(
            log: log,
            { _ in
                .receiveBody(limit: 4096) { bytes in
                    completed.record(bytes.count)
                    return .text(200, "ok")
                }
            }
        ) { _, port in
            let client = try RawHTTPConnection(port: port)
            try client.send("PUT /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
            DispatchQueue.global().async {
                // 8 MiB: far past the limit plus the 1 MiB drained; the server stops reading long before the end.
                client.sendIfOpen(Self.chunked([UInt8](repeating: 1, count: 8 << 20), sizes: [65_536]))
            }
            // The 413 is written just before the close; a reset can still swallow it, so only check it if it came.
            let received = try client.readToEnd()
            let text = String(decoding: received, as: UTF8.self)
            #expect(received.isEmpty || text.hasPrefix("HTTP/1.1 413 Content Too Large\r\n"))
            #expect(completed.all.isEmpty)
            // Both our line and libmicrohttpd's own error log line arrive through the log closure.
            #expect(
                log.messages.contains {
                    $0 == "MicroHTTPD: request body over 4096 bytes kept coming; sent 413 and closed the connection"
                })
            #expect(log.messages.contains { $0.hasPrefix("Application reported internal error") })
        }
    }

    @Test func anAnswerThatNeedsNoBodyIsSentAtOnceAndTheBodyIsNeverRead() throws {
        try withTestServer({ _ in .respond(.text(405, "no")) }) { _, port in
            let client = try RawHTTPConnection(port: port, timeout: .seconds(3))
            // Announces 100,000 bytes and sends none: the answer may not wait for them.
            try client.send("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 405)
            #expect(response.text == "no")
            #expect(response.header("Connection") == "close")
            #expect(client.peerClosed(waitingMilliseconds: 1_000), "the connection stays open for the body")
        }
    }

    @Test func aClientTricklingABodyItWasRefusedHoldsNoConnection() throws {
        try withTestServer({ _ in .respond(.text(401, "no token")) }) { _, port in
            let client = try RawHTTPConnection(port: port, timeout: .seconds(3))
            try client.send("PUT /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
            var closed = false
            for _ in 0..<10 {
                if !client.sendIfOpen("1\r\nA\r\n") || client.peerClosed(waitingMilliseconds: 300) {
                    closed = true
                    break
                }
            }
            #expect(closed, "a refused body trickled for 3 s kept its connection")
        }
    }
}
