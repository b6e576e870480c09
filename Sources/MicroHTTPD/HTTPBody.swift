import SharedBytes

/// The body of a response. Bytes are never copied: libmicrohttpd sends them from the `SharedBytes` memory, which
/// stays alive until libmicrohttpd has destroyed the response.
public enum HTTPBody: Sendable {
    /// No body (Content-Length: 0).
    case empty
    /// All of the bytes.
    case bytes(SharedBytes)
    /// A sub-range of the bytes (for 206 Partial Content). The range is clamped to the bytes' bounds.
    case slice(SharedBytes, Range<Int>)

    /// Number of body bytes that will be sent (for GET; HEAD sends none but announces this length).
    public var count: Int {
        switch self {
        case .empty: 0
        case .bytes(let bytes): bytes.count
        case .slice(let bytes, let range): range.clamped(to: 0..<bytes.count).count
        }
    }
}
