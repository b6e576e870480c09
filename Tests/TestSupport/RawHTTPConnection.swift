import Glibc

/// A failure of the test machinery itself (connect, send, receive, parse, a child process, a wait that timed out),
/// with a message that says what went wrong. Thrown, it fails the test with that message.
public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// One HTTP/1.1 response exactly as it came off the wire: nothing decompressed, nothing followed, nothing hidden.
public struct RawHTTPResponse: Sendable {
    /// The status line without its CRLF, e.g. `HTTP/1.1 200 OK`.
    public let statusLine: String
    /// Status code.
    public let status: Int
    /// Header fields in the order received, names as sent.
    public let headers: [(name: String, value: String)]
    /// Body bytes (de-chunked if the response was chunked).
    public let body: [UInt8]

    /// The first value of a header, case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The first value of a header, case-insensitively.
    public subscript(_ name: String) -> String? { header(name) }

    /// All values of a header, case-insensitively.
    public func headerValues(_ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// `max-age` of Cache-Control, if any.
    public var maxAge: Int? {
        guard let cacheControl = header("Cache-Control") else { return nil }
        for directive in cacheControl.split(separator: ",") {
            let trimmed = directive.trimmingSpacesAndTabs()
            if trimmed.hasPrefix("max-age=") { return Int(trimmed.dropFirst("max-age=".count)) }
        }
        return nil
    }
}

/// A blocking HTTP/1.1 client over one POSIX TCP connection to 127.0.0.1, for tests that need the wire itself:
/// exact (also malformed) request bytes out, exact headers back, keep-alive, pipelining, chunked uploads, HEAD without
/// a body, trickled bytes, slow reading through a small receive buffer, and noticing that the server closed.
///
/// Every receive and send times out (`timeout`, 20 s unless told), so a server that hangs fails the test instead of
/// hanging it. A connection reset by the server counts as the end of the stream.
// @unchecked: one thread may send while another reads; only reading touches `buffer` and `closedByPeer`.
public final class RawHTTPConnection: @unchecked Sendable {
    private let descriptor: Int32
    private let timeout: Duration
    private var buffer: [UInt8] = []
    private var closedByPeer = false

    /// Connects to `host`:`port` (an IPv4 address; default 127.0.0.1).
    /// - Parameters:
    ///   - receiveBufferSize: a small SO_RCVBUF makes a slow reader push back on the server.
    ///   - timeout: how long one send or receive may block.
    public init(
        port: Int, host: String = "127.0.0.1", receiveBufferSize: Int? = nil, timeout: Duration = .seconds(20)
    ) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestFailure("socket() failed: errno \(errno)") }
        self.descriptor = descriptor
        self.timeout = timeout
        if var size = receiveBufferSize.map(Int32.init) {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        let seconds = timeout.components.seconds
        let microseconds = timeout.components.attoseconds / 1_000_000_000_000
        var interval = timeval(tv_sec: Int(seconds), tv_usec: Int(microseconds))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr(host)
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            // No close here: the object is fully initialized, so deinit closes the descriptor. Closing it twice
            // would close whatever file another test thread opened under the same number meanwhile.
            throw TestFailure("connect to \(host):\(port) failed: errno \(errno)")
        }
    }

    deinit { close(descriptor) }

    /// Bytes received but not yet consumed by a response (stray bytes after a HEAD answer would show up here).
    public var unconsumedByteCount: Int { buffer.count }

    // MARK: - Sending

    /// Sends all bytes; throws if the connection is gone or the send timed out.
    public func send(_ bytes: [UInt8]) throws {
        guard sendIfOpen(bytes) else { throw TestFailure("send failed: errno \(errno)") }
    }

    /// Sends all of the text as UTF-8; throws if the connection is gone or the send timed out.
    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Sends all bytes; false if the server closed the connection first (or the send timed out).
    @discardableResult
    public func sendIfOpen(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    /// Sends all of the text as UTF-8; false if the server closed the connection first.
    @discardableResult
    public func sendIfOpen(_ text: String) -> Bool { sendIfOpen(Array(text.utf8)) }

    // MARK: - Requests and responses

    /// Sends a well-formed request and reads its response.
    /// - Parameters:
    ///   - chunkSize: if set, the body goes out with `Transfer-Encoding: chunked` in chunks of this size;
    ///     otherwise with `Content-Length` (when there is a body).
    public func request(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8]? = nil,
        chunkSize: Int? = nil
    ) throws -> RawHTTPResponse {
        try send(Self.requestBytes(method, target, headers: headers, body: body, chunkSize: chunkSize))
        return try readResponse(method: method)
    }

    /// The bytes of a request: request line, `Host: 127.0.0.1` unless `headers` has a Host, `headers`, then the body
    /// with Content-Length or, with `chunkSize`, chunked.
    public static func requestBytes(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8]? = nil,
        chunkSize: Int? = nil
    ) -> [UInt8] {
        var head = "\(method) \(target) HTTP/1.1\r\n"
        if !headers.contains(where: { $0.0.lowercased() == "host" }) { head += "Host: 127.0.0.1\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        var payload: [UInt8] = []
        if let body {
            if let chunkSize {
                head += "Transfer-Encoding: chunked\r\n"
                var offset = 0
                while offset < body.count {
                    let end = min(offset + chunkSize, body.count)
                    payload += Array(String(end - offset, radix: 16).utf8) + [13, 10] + body[offset..<end] + [13, 10]
                    offset = end
                }
                payload += Array("0\r\n\r\n".utf8)
            } else {
                head += "Content-Length: \(body.count)\r\n"
                payload = body
            }
        }
        head += "\r\n"
        return Array(head.utf8) + payload
    }

    /// Reads one response; `method` tells whether a body follows (HEAD has none, nor have 1xx, 204 and 304).
    public func readResponse(method: String = "GET") throws -> RawHTTPResponse {
        let (statusLine, status, headers) = try readHead()
        let response = { (body: [UInt8]) in
            RawHTTPResponse(statusLine: statusLine, status: status, headers: headers, body: body)
        }
        if method == "HEAD" || status == 204 || status == 304 || (100..<200).contains(status) {
            return response([])
        }
        let first = { (name: String) in headers.first { $0.name.lowercased() == name }?.value }
        if first("transfer-encoding")?.lowercased() == "chunked" {
            return response(try readChunkedBody())
        }
        if let lengthText = first("content-length") {
            guard let length = Int(lengthText) else { throw TestFailure("bad Content-Length \(lengthText)") }
            _ = try fill(until: { $0.count >= length ? length : nil })
            defer { buffer.removeFirst(length) }
            return response(Array(buffer[..<length]))
        }
        return response(try readToEnd())
    }

    /// Reads until the server closes the connection, then takes everything after the head as the body (de-chunked
    /// if the head says chunked), whatever the method and status: a HEAD answer that carries a body shows it.
    public func readResponseUntilClose() throws -> RawHTTPResponse {
        let (statusLine, status, headers) = try readHead()
        var body = try readToEnd()
        let chunked = headers.contains {
            $0.name.lowercased() == "transfer-encoding" && $0.value.lowercased().contains("chunked")
        }
        if chunked { body = try Self.dechunk(body) }
        return RawHTTPResponse(statusLine: statusLine, status: status, headers: headers, body: body)
    }

    // MARK: - Raw reading and closing

    /// Everything until the server closes the connection (after anything already buffered).
    public func readToEnd() throws -> [UInt8] {
        while !closedByPeer { try receiveMore() }
        defer { buffer.removeAll() }
        return buffer
    }

    /// Whether the server closes the connection without sending anything more.
    public func isClosedByPeer() throws -> Bool {
        try readToEnd().isEmpty
    }

    /// True if the server closed (or reset) the connection within `milliseconds`; bytes that arrive meanwhile are
    /// discarded.
    public func peerClosed(waitingMilliseconds milliseconds: Int32) -> Bool {
        if closedByPeer { return true }
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, milliseconds) > 0 else { return false }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let received = recv(descriptor, &chunk, chunk.count, Int32(MSG_DONTWAIT))
        if received == 0 || (received < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { closedByPeer = true }
        return closedByPeer
    }

    /// True if bytes are buffered or can be read at once, or the server closed the connection, within
    /// `milliseconds` (nothing is read).
    public func isReadable(waitingMilliseconds milliseconds: Int32) -> Bool {
        if !buffer.isEmpty || closedByPeer { return true }
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, milliseconds) > 0
    }

    /// Up to `count` bytes as they arrive (buffered ones first; one receive, blocking up to the timeout); empty at
    /// the end of the stream or on a timeout.
    public func receive(upTo count: Int) -> [UInt8] {
        if buffer.isEmpty && !closedByPeer { try? receiveMore(upTo: count) }
        let taken = Array(buffer.prefix(count))
        buffer.removeFirst(taken.count)
        return taken
    }

    /// Everything until the server closes the connection or goes silent for the timeout.
    public func receiveAll() -> [UInt8] {
        while !closedByPeer {
            do { try receiveMore() } catch { break }
        }
        defer { buffer.removeAll() }
        return buffer
    }

    // MARK: - Internals

    private func readHead() throws -> (statusLine: String, status: Int, headers: [(name: String, value: String)]) {
        let headEnd = try fill(until: { Self.find([13, 10, 13, 10], in: $0) })
        let headText = String(decoding: buffer[..<headEnd], as: UTF8.self)
        buffer.removeFirst(headEnd + 4)
        var lines = headText.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        let statusLine = lines.removeFirst()
        let statusParts = statusLine.split(separator: " ", maxSplits: 2)
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            throw TestFailure("bad status line: \(statusLine)")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { throw TestFailure("bad header line: \(line)") }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingSpacesAndTabs()))
        }
        return (statusLine, status, headers)
    }

    private func readChunkedBody() throws -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let lineEnd = try fill(until: { Self.find([13, 10], in: $0) })
            let sizeText = String(decoding: buffer[..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            buffer.removeFirst(lineEnd + 2)
            guard let size = Int(sizeText.trimmingSpacesAndTabs(), radix: 16) else {
                throw TestFailure("bad chunk size line '\(sizeText)'")
            }
            if size == 0 {
                // Trailers (none expected) end with an empty line.
                while true {
                    let end = try fill(until: { Self.find([13, 10], in: $0) })
                    buffer.removeFirst(end + 2)
                    if end == 0 { return body }
                }
            }
            _ = try fill(until: { $0.count >= size + 2 ? size : nil })
            body += buffer[..<size]
            buffer.removeFirst(size + 2)
        }
    }

    /// De-chunks a whole chunked body (a missing last CRLF or trailer section is tolerated).
    private static func dechunk(_ bytes: [UInt8]) throws -> [UInt8] {
        var out: [UInt8] = []
        var index = 0
        while true {
            guard let lineLength = find([13, 10], in: Array(bytes[index...])) else {
                throw TestFailure("truncated chunked body")
            }
            let lineEnd = index + lineLength
            let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingSpacesAndTabs(), radix: 16) else {
                throw TestFailure("bad chunk size '\(sizeText)'")
            }
            index = lineEnd + 2
            if size == 0 { return out }
            guard index + size <= bytes.count else { throw TestFailure("truncated chunk") }
            out += bytes[index..<index + size]
            index += size + 2
        }
    }

    /// Receives until `found` returns a value for the buffer.
    private func fill(until found: ([UInt8]) -> Int?) throws -> Int {
        while true {
            if let value = found(buffer) { return value }
            if closedByPeer { throw TestFailure("connection closed by the server mid-response") }
            try receiveMore()
        }
    }

    /// Appends what the socket has; sets `closedByPeer` at the end of the stream (or on a reset).
    private func receiveMore(upTo count: Int = 64 * 1024) throws {
        var chunk = [UInt8](repeating: 0, count: count)
        let received = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        if received < 0 {
            if errno == ECONNRESET {
                closedByPeer = true
                return
            }
            if errno == EAGAIN || errno == EWOULDBLOCK {
                throw TestFailure("no answer within \(timeout) (\(buffer.count) bytes buffered)")
            }
            throw TestFailure("recv failed: errno \(errno)")
        }
        if received == 0 {
            closedByPeer = true
            return
        }
        buffer += chunk[..<received]
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if haystack[start..<(start + needle.count)].elementsEqual(needle) { return start }
        }
        return nil
    }
}

extension StringProtocol {
    fileprivate func trimmingSpacesAndTabs() -> String {
        var text = Substring(self)
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return String(text)
    }
}
