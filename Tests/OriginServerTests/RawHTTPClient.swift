import Glibc

/// A client-side failure: connect, send, receive or parse.
struct RawHTTPError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One HTTP/1.1 response exactly as it came off the wire.
struct RawHTTPResponse {
    /// Status code.
    let status: Int
    /// Header fields in the order received.
    let headers: [(name: String, value: String)]
    /// Body bytes (de-chunked if the response was chunked; empty for HEAD, 204 and 304).
    let body: [UInt8]

    /// The first value of a header, case-insensitively.
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// All values of a header, case-insensitively.
    func headerValues(_ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    /// The body as UTF-8 text.
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// A blocking HTTP/1.1 client over one POSIX TCP connection to 127.0.0.1: exact request bytes out, exact headers
/// back, keep-alive, chunked uploads, HEAD without a body. Reads time out after 15 s so a hang fails the test.
final class RawHTTPConnection {
    private let socketDescriptor: Int32
    private var buffer: [UInt8] = []
    private var closedByPeer = false

    /// Connects to 127.0.0.1:`port`.
    init(port: Int) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw RawHTTPError("socket() failed: errno \(errno)") }
        socketDescriptor = descriptor
        var timeout = timeval(tv_sec: 15, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let result = connectToLoopback(descriptor, port: port)
        guard result == 0 else {
            // No close here: the object is fully initialized, so deinit closes the descriptor. Closing it twice
            // would close whatever file another test thread opened under the same number meanwhile.
            throw RawHTTPError("connect to 127.0.0.1:\(port) failed: errno \(errno)")
        }
    }

    deinit { close(socketDescriptor) }

    /// Bytes received but not yet consumed by a response (stray bytes after a HEAD answer would show up here).
    var unconsumedByteCount: Int { buffer.count }

    /// Sends raw bytes.
    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { raw in
                Glibc.send(socketDescriptor, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { throw RawHTTPError("send failed: errno \(errno)") }
            offset += sent
        }
    }

    /// Sends a request and reads its response.
    /// - Parameters:
    ///   - chunkSize: if set, the body goes out with `Transfer-Encoding: chunked` in chunks of this size;
    ///     otherwise with `Content-Length` (when there is a body).
    func request(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8]? = nil,
        chunkSize: Int? = nil
    ) throws -> RawHTTPResponse {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
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
        try send(Array(head.utf8) + payload)
        return try readResponse(method: method)
    }

    /// Reads one response; `method` tells whether a body follows (HEAD has none).
    func readResponse(method: String) throws -> RawHTTPResponse {
        let headEnd = try fill(until: { buffer in Self.find([13, 10, 13, 10], in: buffer) })
        let headText = String(decoding: buffer[..<headEnd], as: UTF8.self)
        buffer.removeFirst(headEnd + 4)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let statusParts = statusLine.split(separator: " ", maxSplits: 2)
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            throw RawHTTPError("bad status line: \(statusLine)")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { throw RawHTTPError("bad header line: \(line)") }
            headers.append(
                (String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingSpacesAndTabs))
        }
        let response = RawHTTPResponse(status: status, headers: headers, body: [])
        if method == "HEAD" || status == 204 || status == 304 || (100..<200).contains(status) {
            return response
        }
        let body: [UInt8]
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            body = try readChunkedBody()
        } else if let lengthText = response.header("Content-Length") {
            guard let length = Int(lengthText) else { throw RawHTTPError("bad Content-Length \(lengthText)") }
            _ = try fill(until: { $0.count >= length ? length : nil })
            body = Array(buffer[..<length])
            buffer.removeFirst(length)
        } else {
            while !closedByPeer { try receiveMore() }
            body = buffer
            buffer.removeAll()
        }
        return RawHTTPResponse(status: status, headers: headers, body: body)
    }

    /// True once the server has closed the connection (reads until EOF, at most 15 s).
    func serverClosesConnection() -> Bool {
        while !closedByPeer {
            do { try receiveMore() } catch { return false }
        }
        return true
    }

    private func readChunkedBody() throws -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let lineEnd = try fill(until: { Self.find([13, 10], in: $0) })
            let sizeText = String(decoding: buffer[..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            buffer.removeFirst(lineEnd + 2)
            guard let size = Int(sizeText.trimmingCharacters(), radix: 16) else {
                throw RawHTTPError("bad chunk size line")
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

    /// Receives until `found` returns a value for the buffer.
    private func fill(until found: ([UInt8]) -> Int?) throws -> Int {
        while true {
            if let value = found(buffer) { return value }
            if closedByPeer { throw RawHTTPError("connection closed by the server mid-response") }
            try receiveMore()
        }
    }

    private func receiveMore() throws {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let received = chunk.withUnsafeMutableBytes { recv(socketDescriptor, $0.baseAddress, $0.count, 0) }
        if received < 0 { throw RawHTTPError("recv failed or timed out: errno \(errno)") }
        if received == 0 {
            closedByPeer = true
            return
        }
        buffer += chunk[..<received]
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if Array(haystack[start..<(start + needle.count)]) == needle { return start }
        }
        return nil
    }
}

extension StringProtocol {
    fileprivate var trimmingSpacesAndTabs: String { trimmingCharacters() }

    fileprivate func trimmingCharacters() -> String {
        var text = Substring(self)
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return String(text)
    }
}

/// Connects `descriptor` to 127.0.0.1:`port`; returns connect(2)'s result (0 on success).
func connectToLoopback(_ descriptor: Int32, port: Int) -> Int32 {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
}
