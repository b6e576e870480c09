import Foundation
import Glibc
import Synchronization
import TestSupport

/// A TCP proxy on loopback between a client (an encoder) and a server (an origin) whose path can be cut: while cut,
/// every open connection is shut down and new ones are closed at once, as a failed network path looks to both ends.
final class CuttableProxy: Sendable {
    /// Where clients connect.
    let port: Int
    private let upstreamPort: Int
    private let listener: Int32
    private struct State {
        var cut = false
        var stopped = false
        var sockets: Set<Int32> = []
    }
    private let state = Mutex(State())

    init(upstreamPort: Int) throws {
        self.upstreamPort = upstreamPort
        let fd = socket(AF_INET, streamSocketType, 0)
        guard fd >= 0 else { throw EndToEndError("proxy: socket() failed: errno \(errno)") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound, listen(fd, 64) == 0 else {
            close(fd)
            throw EndToEndError("proxy: cannot listen: errno \(errno)")
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// Cuts the path: open connections are shut down, new ones closed at once.
    func cut() {
        state.withLock { state in
            state.cut = true
            for socket in state.sockets { shutdown(socket, Int32(SHUT_RDWR)) }
        }
    }

    /// Lets connections through again.
    func restore() {
        state.withLock { $0.cut = false }
    }

    /// Stops accepting and shuts every connection down.
    func stop() {
        state.withLock { state in
            state.stopped = true
            for socket in state.sockets { shutdown(socket, Int32(SHUT_RDWR)) }
        }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if state.withLock({ $0.stopped }) { break }
                continue
            }
            let refuse = state.withLock { $0.cut || $0.stopped }
            guard !refuse, let upstream = connectUpstream() else {
                close(client)
                continue
            }
            state.withLock {
                $0.sockets.insert(client)
                $0.sockets.insert(upstream)
            }
            let thread = Thread { [self] in pump(client, upstream) }
            thread.start()
        }
        close(listener)
    }

    private func connectUpstream() -> Int32? {
        let fd = socket(AF_INET, streamSocketType, 0)
        guard fd >= 0 else { return nil }
        var address = Self.loopback(port: upstreamPort)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        if !connected {
            close(fd)
            return nil
        }
        return fd
    }

    /// Copies bytes both ways until either side closes (or the path is cut), then closes both.
    private func pump(_ a: Int32, _ b: Int32) {
        var fds = [pollfd(fd: a, events: Int16(POLLIN), revents: 0), pollfd(fd: b, events: Int16(POLLIN), revents: 0)]
        var buffer = [UInt8](repeating: 0, count: 65536)
        loop: while true {
            guard poll(&fds, 2, 1000) >= 0 else { break }
            for index in 0..<2 where fds[index].revents != 0 {
                let from = fds[index].fd
                let to = index == 0 ? b : a
                let count = buffer.withUnsafeMutableBytes { read(from, $0.baseAddress, $0.count) }
                guard count > 0 else { break loop }
                var sent = 0
                while sent < count {
                    let written = buffer.withUnsafeBytes { write(to, $0.baseAddress! + sent, count - sent) }
                    guard written > 0 else { break loop }
                    sent += written
                }
            }
        }
        state.withLock {
            $0.sockets.remove(a)
            $0.sockets.remove(b)
        }
        close(a)
        close(b)
    }
}
