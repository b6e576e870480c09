import Dispatch
import Foundation
import Glibc
import MicroHTTPD
import SharedBytes
import Synchronization
import TestSupport
import Testing

/// Stopping with a grace period while a 12 MB answer is read slowly: real time for several seconds.
@Suite(.tags(.endToEnd), .offThePool) struct GracefulStopTests {
    /// A GET read slowly through a small receive buffer, on its own thread.
    final class SlowDownload: Sendable {
        private let received = Mutex<[UInt8]>([])
        private let finished = Mutex(false)

        var count: Int { received.withLock { $0.count } }
        var isFinished: Bool { finished.withLock { $0 } }
        var bytes: [UInt8] { received.withLock { $0 } }

        func start(port: Int) {
            Thread.detachNewThread { [self] in
                defer { finished.withLock { $0 = true } }
                guard
                    let connection = try? RawHTTPConnection(
                        port: port, receiveBufferSize: 32 * 1024, timeout: .seconds(10)),
                    connection.sendIfOpen("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
                else { return }
                while true {
                    let piece = connection.receive(upTo: 32 * 1024)
                    if piece.isEmpty { return }
                    received.withLock { $0 += piece }
                    usleep(5_000)
                }
            }
        }
    }

    @Test func stopWithAGracePeriodLetsAnAnswerInFlightFinishAndRefusesNewConnections() throws {
        let body = [UInt8]((0..<(12 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let shared = SharedBytes(body)
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threadCount: 1)
        ) { _ in .respond(HTTPResponse(status: 200, body: .bytes(shared))) }
        try server.start()
        let port = server.boundPort
        let download = SlowDownload()
        download.start(port: port)
        try waitUntil("the first 64 KiB of the download", interval: .milliseconds(2)) {
            download.count >= 64 * 1024 || download.isFinished
        }
        #expect(download.count < body.count / 2, "the answer must still be in flight when stop begins")
        #expect(server.requestsInFlight == 1)
        try finishWithin(.seconds(20), "stop(gracePeriod: 8 s)") { server.stop(gracePeriod: .seconds(8)) }
        try waitUntil("the download to end", timeout: .seconds(20), interval: .milliseconds(5)) { download.isFinished }
        let bytes = download.bytes
        let separator: [UInt8] = [13, 10, 13, 10]
        let end = try #require(bytes.firstRange(of: separator))
        let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self)
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(Array(bytes[end.upperBound...]) == body)
        #expect(throws: (any Error).self) { _ = try RawHTTPConnection(port: port) }
    }
}
