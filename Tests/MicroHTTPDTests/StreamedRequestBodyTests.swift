import Dispatch
import Glibc
import MicroHTTPD
import SharedBytes
import Synchronization
import TestSupport
import Testing

/// A receiver that records what it is handed; optionally answers early once it has `answerAfter` bytes.
final class RecordingReceiver: HTTPBodyReceiver {
    private struct State {
        var bytes: [UInt8] = []
        var pieces = 0
        var finished = 0
        var abandoned = 0
        var callsAfterEnd = 0
    }

    private let state = Mutex(State())
    private let answerAfter: Int?

    init(answerAfter: Int? = nil) {
        self.answerAfter = answerAfter
    }

    func receive(_ piece: UnsafeRawBufferPointer) -> HTTPResponse? {
        state.withLock { state in
            if state.finished + state.abandoned > 0 { state.callsAfterEnd += 1 }
            state.bytes += piece
            state.pieces += 1
            guard let answerAfter, state.bytes.count >= answerAfter else { return nil }
            return .text(422, "stop after \(state.bytes.count)\n", headers: ["X-Early": "yes"])
        }
    }

    func finish() -> HTTPResponse {
        state.withLock { state in
            if state.finished + state.abandoned > 0 { state.callsAfterEnd += 1 }
            state.finished += 1
            return .text(201, "got \(state.bytes.count)")
        }
    }

    func abandon() {
        state.withLock { state in
            if state.finished + state.abandoned > 0 { state.callsAfterEnd += 1 }
            state.abandoned += 1
        }
    }

    var bytes: [UInt8] { state.withLock { $0.bytes } }
    var pieces: Int { state.withLock { $0.pieces } }
    var finished: Int { state.withLock { $0.finished } }
    var abandoned: Int { state.withLock { $0.abandoned } }
    var callsAfterEnd: Int { state.withLock { $0.callsAfterEnd } }
}

/// `HTTPRequestAction.streamBody`: the body handed over piece by piece as it arrives.
@Suite(.offThePool) struct StreamedRequestBodyTests {
    static let body = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }

    @Test(arguments: [true, false])
    func oneByteTrickleArrivesAsTheSameBytes(chunked: Bool) throws {
        let receiver = RecordingReceiver()
        try withTestServer({ _ in .streamBody(limit: 10_000, receiver: receiver) }) { _, port in
            let client = try RawHTTPConnection(port: port)
            let framing = chunked ? "Transfer-Encoding: chunked" : "Content-Length: \(Self.body.count)"
            try client.send("PUT /live/seg.ts HTTP/1.1\r\nHost: t\r\n\(framing)\r\n\r\n")
            for (index, byte) in Self.body.enumerated() {
                try client.send(chunked ? Array("1\r\n".utf8) + [byte] + Array("\r\n".utf8) : [byte])
                if index % 50 == 0 { usleep(5_000) }
            }
            if chunked { try client.send("0\r\n\r\n") }
            let response = try client.readResponse()
            #expect(response.status == 201)
            #expect(response.text == "got \(Self.body.count)")
            #expect(receiver.bytes == Self.body)
            // The pauses split the body: it was handed over before it was complete.
            #expect(receiver.pieces > 1)
            #expect(receiver.finished == 1)
            #expect(receiver.abandoned == 0)
            // Keep-alive: the connection serves the next request.
            try client.send("PUT /live/seg2.ts HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nab")
            #expect(try client.readResponse().status == 201)
        }
    }

    @Test func clientDisconnectMidBodyAbandonsOnce() throws {
        let receiver = RecordingReceiver()
        try withTestServer({ _ in .streamBody(limit: 10_000, receiver: receiver) }) { _, port in
            var client: RawHTTPConnection? = try RawHTTPConnection(port: port)
            try client?.send("PUT /live/seg.ts HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
            try waitUntil("the first piece to arrive") { receiver.bytes.count == 5 }
            client = nil
            try waitUntil("the receiver to be abandoned") { receiver.abandoned == 1 }
            usleep(100_000)
            #expect(receiver.abandoned == 1)
            #expect(receiver.finished == 0)
            #expect(receiver.callsAfterEnd == 0)
        }
    }

    @Test func bodyCrossingTheLimitIsAnswered413AndClosed() throws {
        let receiver = RecordingReceiver()
        try withTestServer({ _ in .streamBody(limit: 100, receiver: receiver) }) { _, port in
            let client = try RawHTTPConnection(port: port)
            try client.send("PUT /live/seg.ts HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
            try client.send(Array("50\r\n".utf8) + Array(repeating: 65, count: 80) + Array("\r\n".utf8))
            try waitUntil("80 bytes to arrive") { receiver.bytes.count == 80 }
            // The next 40 bytes cross the limit; the client does not end the body.
            client.sendIfOpen(Array("28\r\n".utf8) + Array(repeating: 66, count: 40) + Array("\r\n".utf8))
            let response = try client.readResponse()
            #expect(response.statusLine == "HTTP/1.1 413 Content Too Large")
            #expect(response.header("Connection")?.lowercased() == "close")
            #expect(client.peerClosed(waitingMilliseconds: 2_000))
            #expect(receiver.bytes.count == 80)
            try waitUntil("the receiver to be abandoned") { receiver.abandoned == 1 }
            #expect(receiver.finished == 0)
        }
    }

    @Test func announcedOversizedBodyIsAnswered413WithoutReadingIt() throws {
        let receiver = RecordingReceiver()
        try withTestServer({ _ in .streamBody(limit: 100, receiver: receiver) }) { _, port in
            let client = try RawHTTPConnection(port: port)
            try client.send("PUT /live/seg.ts HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 413)
            #expect(try client.isClosedByPeer())
            #expect(receiver.pieces == 0)
            try waitUntil("the receiver to be abandoned") { receiver.abandoned == 1 }
        }
    }

    @Test func earlyAnswerIsSentAtOnceAndClosesTheConnection() throws {
        let receiver = RecordingReceiver(answerAfter: 10)
        try withTestServer({ _ in .streamBody(limit: 1_000_000, receiver: receiver) }) { _, port in
            let client = try RawHTTPConnection(port: port, timeout: .seconds(5))
            // Announces far more than it sends: the answer must not wait for the rest.
            try client.send("PUT /live/seg.ts HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n")
            try client.send(Array(repeating: 65, count: 12))
            let response = try client.readResponse()
            #expect(response.statusLine == "HTTP/1.1 422 Unprocessable Content")
            #expect(response.header("X-Early") == "yes")
            #expect(response.text == "stop after 12\n")
            #expect(client.peerClosed(waitingMilliseconds: 2_000))
            usleep(100_000)
            #expect(receiver.finished == 0)
            #expect(receiver.abandoned == 0)
        }
    }

    @Test func earlyAnswerReachesAClientThatKeepsSending() throws {
        let receiver = RecordingReceiver(answerAfter: 10)
        try withTestServer({ _ in .streamBody(limit: 100_000_000, receiver: receiver) }) { _, port in
            let client = try RawHTTPConnection(port: port, timeout: .seconds(5))
            try client.send("PUT /live/seg.ts HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
            let sender = DispatchQueue(label: "sender")
            let stillSending = Atomic<Bool>(true)
            sender.async {
                // Keeps sending 1 KiB chunks until the server has closed the connection.
                let chunk = Array("400\r\n".utf8) + Array(repeating: 66, count: 1024) + Array("\r\n".utf8)
                for _ in 0..<2_000 where client.sendIfOpen(chunk) { usleep(500) }
                stillSending.store(false, ordering: .relaxed)
            }
            let response = try client.readResponse()
            #expect(response.status == 422)
            #expect(response.header("X-Early") == "yes")
            try waitUntil("the sender to notice the close") { !stillSending.load(ordering: .relaxed) }
            #expect(receiver.abandoned == 0)
        }
    }

    /// A server whose connection timeout (and so request deadline) is one second.
    static func withShortTimeoutServer(
        bodyTimeLimit: Int = 300, minimumRate: Int = 1024,
        _ handler: @escaping @Sendable (HTTPRequestHead) -> HTTPRequestAction, _ body: (Int) throws -> Void
    ) throws {
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, threadCount: 2, connectionTimeout: 1)
        configuration.requestBodyTimeLimit = bodyTimeLimit
        configuration.requestBodyMinimumRate = minimumRate
        let server = HTTPServer(configuration: configuration, handler: handler)
        try server.start()
        defer { server.stop() }
        try body(server.boundPort)
    }

    @Test func uploadThatKeepsSendingOutlivesTheRequestDeadline() throws {
        let receiver = RecordingReceiver()
        try Self.withShortTimeoutServer({ _ in .streamBody(limit: 1_000_000, receiver: receiver) }) { port in
            let client = try RawHTTPConnection(port: port)
            try client.send("PUT /live/seg.ts HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
            // 25 frames of 256 bytes over 2.5 s (2,560 bytes a second), longer than the one-second deadline.
            let frame = "100\r\n" + String(repeating: "abcd", count: 64) + "\r\n"
            for _ in 0..<25 {
                try client.send(frame)
                usleep(100_000)
            }
            try client.send("0\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.text == "got 6400")
            #expect(receiver.abandoned == 0)
        }
    }

    @Test func anUploadThatKeepsSendingBelowTheMinimumRateIsCutAndAbandoned() throws {
        let receiver = RecordingReceiver()
        try Self.withShortTimeoutServer({ _ in .streamBody(limit: 1_000_000, receiver: receiver) }) { port in
            let client = try RawHTTPConnection(port: port)
            try client.send("PUT /live/seg.ts HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
            // 4 bytes every 100 ms: never silent for the one-second deadline, but 40 bytes a second.
            var cutAfter: Int?
            for frame in 0..<60 {
                if !client.sendIfOpen("4\r\nabcd\r\n") || client.peerClosed(waitingMilliseconds: 100) {
                    cutAfter = frame
                    break
                }
            }
            let frames = try #require(cutAfter, "an upload of 40 bytes a second went on for 6 s")
            // Cut once the deadline (1 s) has passed and 40 bytes a second fall short of 1,024.
            #expect(frames >= 8, "cut after \(frames) frames, before the deadline")
            try waitUntil("the receiver to be abandoned") { receiver.abandoned == 1 }
            #expect(receiver.finished == 0)
        }
    }

    @Test func anUploadIsCutAtItsTimeLimitHoweverFastItKeepsSending() throws {
        let receiver = RecordingReceiver()
        try Self.withShortTimeoutServer(bodyTimeLimit: 2, { _ in .streamBody(limit: 100_000_000, receiver: receiver) }) {
            port in
            let client = try RawHTTPConnection(port: port)
            try client.send("PUT /live/seg.ts HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
            let frame = "1000\r\n" + String(repeating: "G", count: 4096) + "\r\n"
            let start = ContinuousClock.now
            var cut = false
            // 40 KiB a second for up to 6 s.
            for _ in 0..<60 {
                if !client.sendIfOpen(frame) || client.peerClosed(waitingMilliseconds: 100) {
                    cut = true
                    break
                }
            }
            let elapsed = ContinuousClock.now - start
            #expect(cut, "an upload went on for 6 s past its 2 s time limit")
            #expect(elapsed >= .milliseconds(1_900))
            try waitUntil("the receiver to be abandoned") { receiver.abandoned == 1 }
        }
    }

    @Test func uploadThatGoesSilentIsClosedAndAbandoned() throws {
        let receiver = RecordingReceiver()
        try Self.withShortTimeoutServer({ _ in .streamBody(limit: 1_000_000, receiver: receiver) }) { port in
            let client = try RawHTTPConnection(port: port)
            try client.send("PUT /live/seg.ts HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n")
            #expect(client.peerClosed(waitingMilliseconds: 4_000))
            try waitUntil("the receiver to be abandoned") { receiver.abandoned == 1 }
            #expect(receiver.finished == 0)
        }
    }
}
