import Dispatch
import Foundation
import Synchronization

import Glibc

/// An HTTP/1.1 response exactly as it came off the wire: nothing decompressed, nothing followed, nothing hidden.
struct HTTPResponse: Sendable {
    let status: Int
    /// Header fields in order, names as sent.
    let headers: [(name: String, value: String)]
    /// The body bytes (de-chunked if the server used chunked transfer coding).
    let body: [UInt8]

    /// The first value of a header, by case-insensitive name.
    subscript(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The body as UTF-8 text.
    var text: String { String(decoding: body, as: UTF8.self) }

    /// `max-age` of Cache-Control, if any.
    var maxAge: Int? {
        guard let cacheControl = self["Cache-Control"] else { return nil }
        for directive in cacheControl.split(separator: ",") {
            let trimmed = directive.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("max-age=") { return Int(trimmed.dropFirst("max-age=".count)) }
        }
        return nil
    }
}

/// A tiny HTTP/1.1 client over a plain TCP socket to 127.0.0.1: one request per connection (`Connection: close`),
/// the response read until the server closes. Raw on purpose: the tests check Content-Encoding, HEAD bodies, 206 and
/// 304 answers as sent, which URLSession would decode or hide. Blocking I/O runs on a Dispatch queue, never on a
/// Swift concurrency thread.
struct HTTPClient: Sendable {
    let port: Int
    /// Counts requests (shared by copies).
    let counter = RequestCounter()

    /// Sends a request and reads the whole response.
    /// - Parameters:
    ///   - path: absolute path, e.g. `/live/demo/index.m3u8`.
    ///   - headers: extra request header fields.
    func request(
        _ method: String = "GET", _ path: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) async throws -> HTTPResponse {
        counter.increment()
        let port = port
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    with: Result {
                        try Self.exchange(port: port, method: method, path: path, headers: headers, body: body)
                    })
            }
        }
    }

    /// GET shorthand.
    func get(_ path: String, headers: [(String, String)] = []) async throws -> HTTPResponse {
        try await request("GET", path, headers: headers)
    }

    private static func exchange(
        port: Int, method: String, path: String, headers: [(String, String)], body: [UInt8]
    ) throws -> HTTPResponse {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw EndToEndError("socket() failed: errno \(errno)") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 15, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw EndToEndError("connect to 127.0.0.1:\(port) failed: errno \(errno)") }

        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        let outgoing = Array(head.utf8) + body
        var sent = 0
        while sent < outgoing.count {
            let n = outgoing[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw EndToEndError("send failed: errno \(errno)") }
            sent += n
        }

        var incoming: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { break }
            guard n > 0 else {
                throw EndToEndError("recv failed (errno \(errno)) after \(incoming.count) bytes of \(method) \(path)")
            }
            incoming += buffer[0..<n]
        }
        return try parse(incoming, method: method, path: path)
    }

    private static func parse(_ bytes: [UInt8], method: String, path: String) throws -> HTTPResponse {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0..<max(bytes.count - 3, 0)).first(where: { Array(bytes[$0..<$0 + 4]) == separator }) else {
            throw EndToEndError("\(method) \(path): no complete response head in \(bytes.count) bytes")
        }
        let lines = String(decoding: bytes[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ", maxSplits: 2)
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            throw EndToEndError("\(method) \(path): bad status line '\(lines[0])'")
        }
        var headers: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else {
                throw EndToEndError("\(method) \(path): bad header line '\(line)'")
            }
            headers.append(
                (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var body = Array(bytes[(end + 4)...])
        let chunked = headers.contains {
            $0.0.lowercased() == "transfer-encoding" && $0.1.lowercased().contains("chunked")
        }
        if chunked { body = try dechunk(body) }
        return HTTPResponse(status: status, headers: headers, body: body)
    }

    private static func dechunk(_ bytes: [UInt8]) throws -> [UInt8] {
        var out: [UInt8] = []
        var index = 0
        while true {
            guard
                let lineEnd = (index..<max(bytes.count - 1, index)).first(where: {
                    bytes[$0] == 13 && bytes[$0 + 1] == 10
                })
            else { throw EndToEndError("truncated chunked body") }
            let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else {
                throw EndToEndError("bad chunk size '\(sizeText)'")
            }
            index = lineEnd + 2
            if size == 0 { return out }
            guard index + size <= bytes.count else { throw EndToEndError("truncated chunk") }
            out += bytes[index..<index + size]
            index += size + 2
        }
    }
}

/// A thread-safe request count.
final class RequestCounter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
