import Foundation
import Glibc
import OriginServer
import TestSupport
import Testing

/// sd_notify's protocol (`SystemdNotifier`): one datagram of `KEY=VALUE` lines to the socket `NOTIFY_SOCKET` names.
/// The abstract-socket form and the origin's use of it (READY, RELOADING, STOPPING) are checked end to end in
/// `EndToEndTests.SystemdNotifyTests`.
@Suite("SystemdNotifier", .offThePool)
struct SystemdNotifierTests {
    @Test("a socket path gets one datagram of the lines, newline-separated")
    func sendsOneDatagramToASocketPath() throws {
        let directory = try TemporaryDirectory.make("notify")
        let path = directory.appendingPathComponent("notify").path
        let descriptor = socket(AF_UNIX, datagramSocketType, 0)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            for (index, byte) in path.utf8.enumerated() { bytes[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        try #require(bound == 0)

        let notifier = SystemdNotifier(socketAddress: path)
        #expect(notifier.ready(status: "listening on port 8080"))
        #expect(notifier.stopping())
        var buffer = [UInt8](repeating: 0, count: 512)
        let first = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        #expect(String(decoding: buffer[..<max(first, 0)], as: UTF8.self) == "READY=1\nSTATUS=listening on port 8080")
        let second = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        #expect(String(decoding: buffer[..<max(second, 0)], as: UTF8.self) == "STOPPING=1")
    }

    @Test("no NOTIFY_SOCKET, or one that is neither an absolute path nor @name: nothing is sent")
    func sendsNothingWithoutASupervisor() {
        for address in [nil, "", "relative/notify", "@"] as [String?] {
            let notifier = SystemdNotifier(socketAddress: address)
            #expect(notifier.socketAddress == nil)
            #expect(!notifier.ready())
        }
        // A socket nobody listens on: the send fails and says so.
        #expect(!SystemdNotifier(socketAddress: "/nonexistent/hlsorigin-notify").ready())
    }
}
