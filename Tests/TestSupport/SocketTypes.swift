import Glibc

/// `SOCK_STREAM` as `socket(2)` takes it. A test module that also imports a C library whose header includes
/// <sys/socket.h> (EndToEndTests imports CSRT) owns the constant through that library under `MemberImportVisibility`
/// in optimized builds, so its files take it from here instead.
public let streamSocketType = Int32(SOCK_STREAM.rawValue)

/// `SOCK_DGRAM` as `socket(2)` takes it (see `streamSocketType`).
public let datagramSocketType = Int32(SOCK_DGRAM.rawValue)

/// A loopback port free at the moment of asking, for `socketType` (`streamSocketType` for TCP, `datagramSocketType`
/// for UDP): bound with port 0 and closed, so another process may take it before the caller does (prefer letting the
/// server bind port 0 and report its port). Nil when no socket could be made or bound.
public func freeLoopbackPort(socketType: Int32) -> Int? {
    let fd = socket(AF_INET, socketType, 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
        }
    }
    return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
}
