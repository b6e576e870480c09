import Glibc

/// A small blocking HTTP/1.1 client over a POSIX socket, for sending exact bytes and reading raw responses.
// @unchecked: one thread may send while another reads; only reading touches `buffer`.
final class TestHTTPClient: @unchecked Sendable {
    struct Response {
        var statusLine: String
        var status: Int
        var headers: [(name: String, value: String)]
        var body: [UInt8]

        func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        var bodyText: String { String(decoding: body, as: UTF8.self) }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to 127.0.0.1:port. A receive timeout keeps a broken test from hanging forever.
    init(port: Int, host: String = "127.0.0.1") throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed") }
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            // deinit closes the descriptor (the object is fully initialized); closing here too would be a double close.
            throw Failure(description: "connect() to port \(port) failed: errno \(errno)")
        }
    }

    deinit { close(fd) }

    /// Writes all bytes; returns false if the peer closed the connection first.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Reads one response. For HEAD requests (`bodyExpected: false`) no body is read whatever the headers say.
    func readResponse(bodyExpected: Bool = true) throws -> Response {
        let headEnd = try readUntil(Array("\r\n\r\n".utf8))
        let headText = String(decoding: buffer[..<headEnd], as: UTF8.self)
        buffer.removeFirst(headEnd + 4)
        var lines = headText.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else {
            throw Failure(description: "bad status line \(statusLine)")
        }
        let headers = lines.map { line -> (name: String, value: String) in
            let colon = line.firstIndex(of: ":")!
            return (String(line[..<colon]), String(line[line.index(after: colon)...].drop { $0 == " " }))
        }
        var response = Response(statusLine: statusLine, status: status, headers: headers, body: [])
        guard bodyExpected, status != 204, status != 304, status >= 200 else { return response }
        if let length = response.header("Content-Length").flatMap({ Int($0) }) {
            try fill(length)
            response.body = Array(buffer[..<length])
            buffer.removeFirst(length)
        } else if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            while true {
                let lineEnd = try readUntil(Array("\r\n".utf8))
                let sizeText = String(decoding: buffer[..<lineEnd], as: UTF8.self)
                buffer.removeFirst(lineEnd + 2)
                guard let size = Int(sizeText.split(separator: ";")[0], radix: 16) else {
                    throw Failure(description: "bad chunk size \(sizeText)")
                }
                try fill(size + 2)
                response.body.append(contentsOf: buffer[..<size])
                buffer.removeFirst(size + 2)
                if size == 0 { break }
            }
        } else {
            response.body = try readToEnd()
        }
        return response
    }

    /// Reads until the server closes the connection; returns what came (after anything already buffered).
    func readToEnd() throws -> [UInt8] {
        while try receiveMore() {}
        defer { buffer.removeAll() }
        return buffer
    }

    /// Whether the server has closed the connection without sending anything more.
    func isClosedByPeer() throws -> Bool {
        try readToEnd().isEmpty
    }

    private func fill(_ count: Int) throws {
        while buffer.count < count {
            guard try receiveMore() else { throw Failure(description: "connection closed early") }
        }
    }

    private func readUntil(_ marker: [UInt8]) throws -> Int {
        var searchFrom = 0
        while true {
            if buffer.count >= marker.count {
                for start in searchFrom...(buffer.count - marker.count)
                where buffer[start..<(start + marker.count)].elementsEqual(marker) {
                    return start
                }
                searchFrom = buffer.count - marker.count + 1
            }
            guard try receiveMore() else { throw Failure(description: "connection closed before \(marker)") }
        }
    }

    /// Appends what the socket has; false at end of stream.
    private func receiveMore() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let received = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if received < 0 {
            if errno == ECONNRESET { return false }
            throw Failure(description: "recv failed: errno \(errno)")
        }
        if received == 0 { return false }
        buffer += chunk[..<received]
        return true
    }
}
