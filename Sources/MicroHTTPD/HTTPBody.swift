public import SharedBytes

/// The body of a response. Bytes are never copied: libmicrohttpd sends them from the `SharedBytes` memory, which
/// stays alive until libmicrohttpd has destroyed the response, or from the file of a `FileRegion`.
public enum HTTPBody: Sendable {
    /// No body (Content-Length: 0).
    case empty
    /// All of the bytes.
    case bytes(SharedBytes)
    /// A sub-range of the bytes (for 206 Partial Content). The range is clamped to the bytes' bounds.
    case slice(SharedBytes, Range<Int>)
    /// A sub-range of a file region, counted from the region's start (`0..<region.count` is all of it). The range is
    /// clamped to the region. libmicrohttpd sends it from the file, with sendfile() where it can.
    case file(FileRegion, Range<Int>)
    /// Bytes produced while the response is sent (`HTTPBodyStream`): no Content-Length, chunked (HTTP/1.0: the
    /// connection closes at the end). HEAD gets the headers only. Ranges and gzip are not offered (`count` is 0).
    case stream(HTTPBodyStream)

    /// All of a file region.
    public static func file(_ region: FileRegion) -> HTTPBody { .file(region, 0..<region.count) }

    /// Number of body bytes that will be sent (for GET; HEAD sends none but announces this length).
    public var count: Int {
        switch self {
        case .empty: 0
        case .bytes(let bytes): bytes.count
        case .slice(let bytes, let range): range.clamped(to: 0..<bytes.count).count
        case .file(let region, let range): range.clamped(to: 0..<region.count).count
        case .stream: 0
        }
    }

    /// Whether the body is an `HTTPBodyStream` (its length is unknown until it ends).
    public var isStream: Bool {
        if case .stream = self { return true }
        return false
    }

    /// Whether the body is sent from a file.
    public var isFile: Bool {
        if case .file = self { return true }
        return false
    }

    /// The bytes at `range` of this body (offsets from the body's first byte, clamped to it), without copying.
    public func subrange(_ range: Range<Int>) -> HTTPBody {
        let range = range.clamped(to: 0..<count)
        switch self {
        case .empty:
            return .empty
        case .bytes(let bytes):
            return .slice(bytes, range)
        case .slice(let bytes, let outer):
            let start = outer.clamped(to: 0..<bytes.count).lowerBound
            return .slice(bytes, (start + range.lowerBound)..<(start + range.upperBound))
        case .file(let region, let outer):
            let start = outer.clamped(to: 0..<region.count).lowerBound
            return .file(region, (start + range.lowerBound)..<(start + range.upperBound))
        case .stream:
            return self
        }
    }
}
