import Dispatch
import Foundation
import Glibc
import MicroHTTPD
import SharedBytes
import Synchronization
import TestSupport
import Testing

/// `HTTPBody.stream`: a response body sent as its bytes are appended, the connection suspended while it waits.
@Suite(.offThePool) struct StreamedResponseTests {
    static let pieces = (0..<5).map { "piece-\($0)" }

    /// The raw wire of a chunked body made of `pieces`, one chunk each.
    static func chunkedWire(_ pieces: [String]) -> String {
        pieces.map { String($0.utf8.count, radix: 16) + "\r\n" + $0 + "\r\n" }.joined() + "0\r\n\r\n"
    }

    /// Answers `/direct` with the stream at once, `/suspended` from another thread through a suspended request,
    /// `/plain` with a short text; records the libmicrohttpd threads it ran on.
    static func handler(
        _ stream: HTTPBodyStream, threads: Recorder<Int32>? = nil
    )
        -> @Sendable (HTTPRequestHead)
        -> HTTPRequestAction
    {
        { head in
            threads?.record(Self.currentThreadID())
            let response = HTTPResponse(status: 200, headers: ["Content-Type": "video/mp2t"], body: .stream(stream))
            switch head.path {
            case "/plain": return .respond(.text(200, "plain"))
            case "/suspended":
                return .suspend { responder in DispatchQueue.global().async { responder.respond(response) } }
            default: return .respond(response)
            }
        }
    }

    /// The calling thread's kernel id (from /proc/thread-self, which links to `<pid>/task/<tid>`).
    static func currentThreadID() -> Int32 {
        var path = [CChar](repeating: 0, count: 64)
        let length = readlink("/proc/thread-self", &path, path.count - 1)
        guard length > 0 else { return -1 }
        let text = String(decoding: path[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return Int32(text.split(separator: "/").last ?? "") ?? -1
    }

    /// Appends `pieces` 100 ms apart on another thread, then finishes; returns when the last piece is appended.
    static func appendSlowly(_ stream: HTTPBodyStream, lastAppended: Recorder<ContinuousClock.Instant>) {
        DispatchQueue.global().async {
            for piece in pieces {
                usleep(100_000)
                stream.append(SharedBytes(string: piece))
            }
            lastAppended.record(ContinuousClock.now)
            usleep(50_000)
            stream.finish()
        }
    }

    /// Reads raw bytes until the end of the response head (and whatever came with it).
    static func readHead(_ client: RawHTTPConnection) throws -> [UInt8] {
        var wire: [UInt8] = []
        while !String(decoding: wire, as: UTF8.self).contains("\r\n\r\n") {
            let bytes = client.receive(upTo: 4096)
            guard !bytes.isEmpty else { throw TestFailure("no response head") }
            wire += bytes
        }
        return wire
    }

    /// Reads raw bytes after `head` until `end` is at the end of what arrived; notes when the first body byte came.
    static func readRaw(
        _ client: RawHTTPConnection, after head: [UInt8], until end: String
    ) throws -> (
        wire: String, firstBodyByte: ContinuousClock.Instant?
    ) {
        var wire = head
        var firstBodyByte: ContinuousClock.Instant?
        while !String(decoding: wire, as: UTF8.self).hasSuffix(end) {
            let bytes = client.receive(upTo: 65_536)
            guard !bytes.isEmpty else {
                throw TestFailure("stream ended early: \(String(decoding: wire, as: UTF8.self))")
            }
            wire += bytes
            if firstBodyByte == nil { firstBodyByte = .now }
        }
        return (String(decoding: wire, as: UTF8.self), firstBodyByte)
    }

    @Test(arguments: ["/direct", "/suspended"])
    func appendedBytesArriveInOrderChunkByChunk(path: String) throws {
        let stream = HTTPBodyStream()
        let lastAppended = Recorder<ContinuousClock.Instant>()
        try withTestServer(Self.handler(stream)) { _, port in
            // Two connections read the same stream at once.
            let clients = try (0..<2).map { _ in try RawHTTPConnection(port: port) }
            for client in clients { try client.send("GET \(path) HTTP/1.1\r\nHost: t\r\n\r\n") }
            // The head goes out before the first byte is appended; then each connection waits for bytes.
            let heads = try clients.map { try Self.readHead($0) }
            Self.appendSlowly(stream, lastAppended: lastAppended)
            for (client, head) in zip(clients, heads) {
                let (wire, firstBodyByte) = try Self.readRaw(client, after: head, until: "0\r\n\r\n")
                let headEnd = try #require(wire.range(of: "\r\n\r\n"))
                let head = String(wire[..<headEnd.lowerBound])
                #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
                #expect(head.lowercased().contains("transfer-encoding: chunked"))
                #expect(!head.lowercased().contains("content-length"))
                // Every append went out as its own chunk, in order, then the last chunk.
                let body = String(decoding: Array(wire.utf8.dropFirst(head.utf8.count + 4)), as: UTF8.self)
                #expect(body == Self.chunkedWire(Self.pieces))
                if client === clients[0] {
                    // Read while the pieces were appended (the second client is read after the first).
                    let last = try #require(lastAppended.all.first)
                    #expect(try #require(firstBodyByte) < last)
                }
                // Keep-alive: the connection serves the next request.
                try client.send("GET /plain HTTP/1.1\r\nHost: t\r\n\r\n")
                #expect(try client.readResponse().text == "plain")
            }
        }
    }

    @Test func bytesAppendedBeforeTheRequestAreSentAtOnce() throws {
        let stream = HTTPBodyStream()
        stream.append(SharedBytes(string: "early "))
        stream.append(SharedBytes(string: "bytes"))
        stream.finish()
        try withTestServer(Self.handler(stream)) { _, port in
            let client = try RawHTTPConnection(port: port)
            #expect(try client.request("GET", "/direct").text == "early bytes")
        }
    }

    @Test func failedStreamCutsTheResponseOff() throws {
        let stream = HTTPBodyStream()
        try withTestServer(Self.handler(stream)) { server, port in
            let client = try RawHTTPConnection(port: port)
            try client.send("GET /direct HTTP/1.1\r\nHost: t\r\n\r\n")
            try waitUntil("the request to be answered") { server.requestsInFlight == 1 }
            stream.append(SharedBytes(string: "part"))
            usleep(50_000)
            stream.fail()
            let wire = String(decoding: client.receiveAll(), as: UTF8.self)
            #expect(wire.contains("4\r\npart\r\n"))
            #expect(!wire.hasSuffix("0\r\n\r\n"))
        }
    }

    @Test func http10ClientGetsTheWholeBodyAndClose() throws {
        let stream = HTTPBodyStream()
        let lastAppended = Recorder<ContinuousClock.Instant>()
        try withTestServer(Self.handler(stream)) { _, port in
            let client = try RawHTTPConnection(port: port)
            try client.send("GET /direct HTTP/1.0\r\n\r\n")
            Self.appendSlowly(stream, lastAppended: lastAppended)
            let response = try client.readResponseUntilClose()
            #expect(response.statusLine.hasPrefix("HTTP/1.") && response.status == 200)
            #expect(response.header("Transfer-Encoding") == nil)
            #expect(response.text == Self.pieces.joined())
        }
    }

    @Test func headOfAStreamSendsHeadersOnly() throws {
        let stream = HTTPBodyStream()
        try withTestServer(Self.handler(stream)) { _, port in
            let client = try RawHTTPConnection(port: port, timeout: .seconds(5))
            let response = try client.request("HEAD", "/direct")
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "video/mp2t")
            #expect(response.header("Transfer-Encoding") == nil)
            // No body bytes follow, and the connection is still usable although the stream never got bytes.
            try client.send("GET /plain HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try client.readResponse().text == "plain")
            #expect(client.unconsumedByteCount == 0)
        }
    }

    @Test func streamWaitingLongerThanTheConnectionTimeoutIsStillSent() throws {
        let stream = HTTPBodyStream()
        let configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, threadCount: 2, connectionTimeout: 1)
        let server = HTTPServer(configuration: configuration, handler: Self.handler(stream))
        try server.start()
        defer { server.stop() }
        let client = try RawHTTPConnection(port: server.boundPort, timeout: .seconds(10))
        try client.send("GET /direct HTTP/1.1\r\nHost: t\r\n\r\n")
        let head = try Self.readHead(client)
        // A suspended connection is not timed out by libmicrohttpd; after the resume it sends at once.
        usleep(2_500_000)
        stream.append(SharedBytes(string: "late"))
        stream.finish()
        let (wire, _) = try Self.readRaw(client, after: head, until: "0\r\n\r\n")
        #expect(wire.hasSuffix("\r\n\r\n4\r\nlate\r\n0\r\n\r\n"))
    }

    /// User plus system CPU time of the given threads of this process, in clock ticks.
    static func cpuTicks(threads: Set<Int32>) throws -> Int {
        try threads.reduce(0) { total, thread in
            let text = try String(contentsOfFile: "/proc/self/task/\(thread)/stat", encoding: .utf8)
            guard let close = text.lastIndex(of: ")") else { throw TestFailure("bad stat line \(text)") }
            let fields = text[text.index(after: close)...].split(separator: " ")
            // Fields 14 (utime) and 15 (stime); fields[0] is field 3.
            guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else {
                throw TestFailure("bad stat line \(text)")
            }
            return total + user + system
        }
    }

    @Test func thousandsOfWaitingStreamsCostNoCPUAndStopEndsThem() throws {
        let stream = HTTPBodyStream()
        let threads = Recorder<Int32>()
        let count = 2_000
        let configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, threadCount: 2)
        let server = HTTPServer(configuration: configuration, handler: Self.handler(stream, threads: threads))
        try server.start()
        defer { server.stop() }
        let clients = try (0..<count).map { _ in try RawHTTPConnection(port: server.boundPort) }
        for client in clients { try client.send("GET /direct HTTP/1.1\r\nHost: t\r\n\r\n") }
        for client in clients { _ = try Self.readHead(client) }
        #expect(server.requestsInFlight == count)
        // Every connection now waits for bytes. The server's threads (those that ran the handler) must sleep.
        let serverThreads = Set(threads.all)
        #expect(!serverThreads.isEmpty && !serverThreads.contains(-1))
        let ticksPerSecond = sysconf(Int32(_SC_CLK_TCK))
        let before = try Self.cpuTicks(threads: serverThreads)
        usleep(2_000_000)
        let used = Double(try Self.cpuTicks(threads: serverThreads) - before) / Double(ticksPerSecond)
        #expect(used < 0.05 * 2, "the server's threads used \(used) s of CPU in 2 s")
        // stop() cuts every waiting stream off (no last chunk) and does not wait for them in vain.
        let started = ContinuousClock.now
        try finishWithin(.seconds(10), "the server to stop") { server.stop() }
        #expect(ContinuousClock.now - started < .milliseconds(1_900))
        for client in clients.prefix(50) {
            #expect(!String(decoding: client.receiveAll(), as: UTF8.self).hasSuffix("0\r\n\r\n"))
            #expect(client.peerClosed(waitingMilliseconds: 100))
        }
    }
}
