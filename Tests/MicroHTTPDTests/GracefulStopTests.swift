import Dispatch
import Foundation
import MicroHTTPD
import SharedBytes
import Synchronization
import Testing

import Glibc

@Suite struct GracefulStopTests {
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
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                defer { close(fd) }
                var size: Int32 = 32 * 1024
                setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
                var timeout = timeval(tv_sec: 10, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = UInt16(port).bigEndian
                address.sin_addr.s_addr = inet_addr("127.0.0.1")
                let connected = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                guard connected == 0 else { return }
                let request = Array("GET /big HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
                _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                var buffer = [UInt8](repeating: 0, count: 32 * 1024)
                while true {
                    let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    if n <= 0 { return }
                    received.withLock { $0 += buffer[..<n] }
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
        while download.count < 64 * 1024 && !download.isFinished { usleep(2_000) }
        #expect(download.count < body.count / 2, "the answer must still be in flight when stop begins")
        #expect(server.requestsInFlight == 1)
        server.stop(gracePeriod: .seconds(8))
        while !download.isFinished { usleep(5_000) }
        let bytes = download.bytes
        let separator: [UInt8] = [13, 10, 13, 10]
        let end = try #require(bytes.firstRange(of: separator))
        let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self)
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(Array(bytes[end.upperBound...]) == body)
        #expect(throws: (any Error).self) { _ = try TestHTTPClient(port: port) }
    }
}
