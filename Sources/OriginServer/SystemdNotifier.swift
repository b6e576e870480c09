import Foundation
import Glibc

/// Readiness for a supervisor: sd_notify(3)'s protocol without libsystemd. Under systemd with `Type=notify` the
/// service manager sets `NOTIFY_SOCKET` to a unix datagram socket (a path, or an abstract name written with a
/// leading `@`); each state change is one datagram of `KEY=VALUE` lines to it (docs/install.md "Readiness").
///
/// Without `NOTIFY_SOCKET` (or with a value that is neither a path nor `@name`) every call does nothing.
public struct SystemdNotifier: Sendable {
    /// The socket's address as `NOTIFY_SOCKET` gave it; nil: not supervised, nothing is sent.
    public let socketAddress: String?

    /// The notifier of the process's supervisor (`NOTIFY_SOCKET` in its environment), if any.
    public init() {
        self.init(socketAddress: ProcessInfo.processInfo.environment["NOTIFY_SOCKET"])
    }

    /// A notifier sending to `socketAddress` (a file system path, or `@name` for an abstract socket); nil or an
    /// address of another form: none.
    public init(socketAddress: String?) {
        if let socketAddress, socketAddress.hasPrefix("/") || (socketAddress.hasPrefix("@") && socketAddress.count > 1)
        {
            self.socketAddress = socketAddress
        } else {
            self.socketAddress = nil
        }
    }

    /// A notifier that never sends (in-process origins, tests).
    public static let none = SystemdNotifier(socketAddress: nil)

    /// `READY=1`: the listeners listen (after startup, and after a reload).
    @discardableResult
    public func ready(status: String? = nil) -> Bool {
        send(["READY=1"] + (status.map { ["STATUS=\($0)"] } ?? []))
    }

    /// `RELOADING=1` with `MONOTONIC_USEC` (CLOCK_MONOTONIC in microseconds, as systemd asks): a reload began;
    /// `ready()` follows when it is done.
    @discardableResult
    public func reloading() -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let microseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        return send(["RELOADING=1", "MONOTONIC_USEC=\(microseconds)"])
    }

    /// `STOPPING=1`: a graceful shutdown began (the journals are written before the process exits).
    @discardableResult
    public func stopping() -> Bool {
        send(["STOPPING=1"])
    }

    /// Sends one datagram of `lines` (newline-separated); false when not supervised or when the send failed (the
    /// supervisor then times the start out, which the unit's log shows).
    @discardableResult
    public func send(_ lines: [String]) -> Bool {
        guard let socketAddress else { return false }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketAddress.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }  // abstract namespace: a leading NUL byte
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            for (index, byte) in path.enumerated() { bytes[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + path.count)
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        let message = Array(lines.joined(separator: "\n").utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                message.withUnsafeBytes { bytes in
                    sendto(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), socketAddress, length)
                }
            }
        }
        return sent == message.count
    }
}
