import Foundation
import Glibc
import SharedBytes

/// A small blocking HTTP/1.1 GET client over a TCP socket: one connection per request (`Connection: close`),
/// `Content-Length` or chunked or read-to-close bodies, redirects not followed (a redirect is an answer the validator
/// judges). `http://` only: no TLS (validate an HTTPS stream through its origin's plain-HTTP address, or behind a
/// local TLS-terminating proxy).
public struct HTTPGetClient: Sendable {
    /// How long connecting, one send or one receive may block.
    public var timeout: Duration
    /// The largest body read; a longer one fails the request.
    public var maximumBodyBytes: Int

    /// Creates a client.
    /// - Parameters:
    ///   - timeout: how long connecting, one send or one receive may block. Default: 10 s.
    ///   - maximumBodyBytes: the largest body read. Default: 256 MiB.
    public init(timeout: Duration = .seconds(10), maximumBodyBytes: Int = 256 << 20) {
        self.timeout = timeout
        self.maximumBodyBytes = maximumBodyBytes
    }

    /// A GET's answer.
    public struct Answer: Sendable {
        public var status: Int
        /// Header fields in order, names as sent.
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]
    }

    /// Why a GET got no answer.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// GETs `url` (`http://host[:port]/path[?query]`).
    /// - Throws: ``Failure`` when the URL is not http://, the host does not resolve, the connection fails or times
    ///   out, or the answer is not HTTP/1.x.
    public func get(_ url: String) throws(Failure) -> Answer {
        guard let components = URLComponents(string: url), components.scheme?.lowercased() == "http",
            let host = components.host, !host.isEmpty
        else { throw Failure("not an http:// URL: \(url) (https is not supported)") }
        let port = components.port ?? 80
        var target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { target += "?" + query }
        let descriptor = try connect(host: host, port: port)
        defer { close(descriptor) }
        let hostField = host.contains(":") ? "[\(host)]" : host
        let request =
            "GET \(target) HTTP/1.1\r\nHost: \(hostField)\(components.port.map { ":\($0)" } ?? "")\r\n"
            + "User-Agent: hlsorigin-validate\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        try send(Array(request.utf8), on: descriptor)
        return try readAnswer(from: descriptor)
    }

    private func connect(host: String, port: Int) throws(Failure) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &list)
        guard resolved == 0, let first = list else {
            throw Failure("cannot resolve \(host): \(String(cString: gai_strerror(resolved)))")
        }
        defer { freeaddrinfo(list) }
        var lastError = "no address"
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let address = candidate {
            candidate = address.pointee.ai_next
            let descriptor = socket(address.pointee.ai_family, address.pointee.ai_socktype, address.pointee.ai_protocol)
            guard descriptor >= 0 else { continue }
            let microseconds = timeout.wholeMicroseconds
            var interval = timeval(tv_sec: Int(microseconds / 1_000_000), tv_usec: Int(microseconds % 1_000_000))
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
            // On Linux SO_SNDTIMEO also bounds a blocking connect.
            setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
            if Glibc.connect(descriptor, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 {
                return descriptor
            }
            lastError = "connect to \(host):\(port) failed: \(String(cString: strerror(errno)))"
            close(descriptor)
        }
        throw Failure(lastError)
    }

    private func send(_ bytes: [UInt8], on descriptor: Int32) throws(Failure) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, 0) }
            if sent < 0, errno == EINTR { continue }
            guard sent > 0 else { throw Failure("send failed: \(String(cString: strerror(errno)))") }
            offset += sent
        }
    }

    /// Reads until the head is complete, then the body by its framing.
    private func readAnswer(from descriptor: Int32) throws(Failure) -> Answer {
        var buffer: [UInt8] = []
        var closed = false
        func receive() throws(Failure) {
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                if count < 0, errno == EINTR { continue }
                if count < 0 {
                    throw Failure(
                        errno == EAGAIN || errno == EWOULDBLOCK
                            ? "no answer within \(timeout)" : "receive failed: \(String(cString: strerror(errno)))")
                }
                if count == 0 { closed = true } else { buffer += chunk[0..<count] }
                guard buffer.count <= maximumBodyBytes + 64 * 1024 else {
                    throw Failure("answer larger than \(maximumBodyBytes) bytes")
                }
                return
            }
        }
        let separator: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        while headEnd == nil {
            if let found = Self.find(separator, in: buffer) {
                headEnd = found
                break
            }
            guard !closed else { throw Failure("connection closed before the end of the answer's head") }
            try receive()
        }
        let headText = String(decoding: buffer[0..<headEnd!], as: UTF8.self)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let statusParts = statusLine.split(separator: " ", maxSplits: 2)
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            throw Failure("not an HTTP/1.x answer: \(statusLine.prefix(80))")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append(
                (
                    String(line[..<colon]),
                    String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
                ))
        }
        func field(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name }?.value
        }
        let bodyStart = headEnd! + 4
        if field("transfer-encoding")?.lowercased().contains("chunked") == true {
            while !closed { try receive() }
            return Answer(status: status, headers: headers, body: try Self.dechunk(Array(buffer[bodyStart...])))
        }
        if let lengthText = field("content-length"), let length = Int(lengthText) {
            guard length <= maximumBodyBytes else { throw Failure("Content-Length \(length) is too large") }
            while buffer.count - bodyStart < length, !closed { try receive() }
            guard buffer.count - bodyStart >= length else {
                throw Failure(
                    "connection closed after \(buffer.count - bodyStart) of \(length) bytes (Content-Length)")
            }
            return Answer(status: status, headers: headers, body: Array(buffer[bodyStart..<(bodyStart + length)]))
        }
        if status == 204 || status == 304 || (100..<200).contains(status) {
            return Answer(status: status, headers: headers, body: [])
        }
        while !closed { try receive() }
        return Answer(status: status, headers: headers, body: Array(buffer[bodyStart...]))
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if Array(haystack[start..<(start + needle.count)]) == needle { return start }
        }
        return nil
    }

    private static func dechunk(_ bytes: [UInt8]) throws(Failure) -> [UInt8] {
        var body: [UInt8] = []
        var offset = 0
        while true {
            guard let lineEnd = find([13, 10], in: Array(bytes[offset...])) else {
                throw Failure("chunked body ends inside a chunk size line")
            }
            let sizeText = String(decoding: bytes[offset..<(offset + lineEnd)], as: UTF8.self)
            guard let size = Int(sizeText.split(separator: ";").first ?? "", radix: 16) else {
                throw Failure("bad chunk size '\(sizeText.prefix(20))'")
            }
            offset += lineEnd + 2
            if size == 0 { return body }
            guard offset + size <= bytes.count else { throw Failure("chunked body ends inside a chunk") }
            body += bytes[offset..<(offset + size)]
            offset += size + 2
        }
    }
}

extension HTTPGetClient {
    /// GETs `url` and returns what happened as an observation: times are milliseconds since `origin` on `clock`.
    public func fetch(_ url: String, since origin: ContinuousClock.Instant) -> HTTPFetch {
        let sent = Self.milliseconds(since: origin)
        do {
            let answer = try get(url)
            var headers: [String: String] = [:]
            for (name, value) in answer.headers {
                let key = name.lowercased()
                headers[key] = headers[key].map { $0 + ", " + value } ?? value
            }
            return HTTPFetch(
                url: url, status: answer.status, headers: headers, body: answer.body, sent: sent,
                received: Self.milliseconds(since: origin))
        } catch {
            return HTTPFetch(
                url: url, status: nil, sent: sent, received: Self.milliseconds(since: origin),
                failure: error.description)
        }
    }

    static func milliseconds(since origin: ContinuousClock.Instant) -> Int64 {
        (ContinuousClock.now - origin).wholeMilliseconds
    }
}
