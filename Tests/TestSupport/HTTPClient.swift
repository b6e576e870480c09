import Dispatch
import Synchronization

/// An async HTTP/1.1 client for 127.0.0.1 that opens one connection per request (`Connection: close`) and reads the
/// response until the server closes, on a Dispatch thread (never blocking a Swift concurrency thread). Raw on
/// purpose: tests check Content-Encoding, HEAD bodies, 206 and 304 answers as sent, which URLSession would decode or
/// hide. Built on `RawHTTPConnection`, so every read and write times out.
public struct HTTPClient: Sendable {
    public let port: Int
    /// Counts requests (shared by copies).
    public let counter = RequestCounter()

    public init(port: Int) { self.port = port }

    /// Sends a request and reads the whole response.
    /// - Parameters:
    ///   - path: absolute path, e.g. `/live/demo/index.m3u8`.
    ///   - headers: extra request header fields.
    public func request(
        _ method: String = "GET", _ path: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) async throws -> RawHTTPResponse {
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
    public func get(_ path: String, headers: [(String, String)] = []) async throws -> RawHTTPResponse {
        try await request("GET", path, headers: headers)
    }

    private static func exchange(
        port: Int, method: String, path: String, headers: [(String, String)], body: [UInt8]
    ) throws -> RawHTTPResponse {
        let connection = try RawHTTPConnection(port: port, timeout: .seconds(15))
        let sendsLength = !body.isEmpty || method == "POST" || method == "PUT"
        let bytes = RawHTTPConnection.requestBytes(
            method, path, headers: [("Host", "127.0.0.1:\(port)"), ("Connection", "close")] + headers,
            body: sendsLength ? body : nil)
        do {
            try connection.send(bytes)
            return try connection.readResponseUntilClose()
        } catch {
            throw TestFailure("\(method) \(path): \(error)")
        }
    }
}

/// A thread-safe request count.
public final class RequestCounter: Sendable {
    private let count = Mutex(0)
    public init() {}
    /// Adds one.
    public func increment() { count.withLock { $0 += 1 } }
    /// The count so far.
    public var value: Int { count.withLock { $0 } }
}
