import SharedBytes

/// The request line and headers of one request, as received.
public struct HTTPRequestHead: Sendable {
    /// The method as sent, e.g. "GET".
    public let method: String
    /// The path as sent, without the query; percent-encoding is not decoded. Bytes outside printable ASCII that a
    /// client sent raw are percent-encoded here (so the string is always ASCII); `decodedPathSegments()` decodes.
    public let path: String
    /// The query arguments in order, names and values percent-decoded ("+" means a space). The value is nil for an
    /// argument without "=" (`?flag`).
    public let query: [(name: String, value: String?)]
    /// The request headers in the order received.
    public let headers: HTTPHeaders
    /// The client's IP address as text ("127.0.0.1", "::1"), nil if unknown.
    public let remoteAddress: String?
    /// The protocol version, e.g. "HTTP/1.1".
    public let version: String
    /// The request came over TLS (an HTTPS listener, `HTTPServerConfiguration.tls`). `remoteAddress` and
    /// `isLoopback` mean the same either way.
    public let isTLS: Bool

    /// Creates a request head (the server builds these; tests and callers may too).
    public init(
        method: String,
        path: String,
        query: [(name: String, value: String?)] = [],
        headers: HTTPHeaders = HTTPHeaders(),
        remoteAddress: String? = nil,
        version: String = "HTTP/1.1",
        isTLS: Bool = false
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.remoteAddress = remoteAddress
        self.version = version
        self.isTLS = isTLS
    }

    /// The value of the first query argument named `name` (nil if absent or without a value).
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value ?? nil
    }

    /// Whether the client connected from a loopback address: 127.0.0.0/8, ::1 or an IPv4-mapped ::ffff:127.x.x.x.
    public var isLoopback: Bool {
        remoteAddress.map(LoopbackAddress.contains) ?? false
    }

    /// Percent-decodes each "/"-separated segment of `path` strictly.
    ///
    /// The leading "/" is dropped and "/" alone gives `[]`; other empty segments are kept as "" ("/a//b/" gives
    /// `["a", "", "b", ""]`) so callers can reject them.
    /// - Returns: the decoded segments, or nil if the path does not start with "/", or any segment has invalid
    ///   percent-encoding, invalid UTF-8, a control character, an encoded "/" (%2F), a "\\" (raw or %5C), or is
    ///   "." or ".." (also when encoded, e.g. "%2e%2E").
    public func decodedPathSegments() -> [String]? {
        PathDecoding.segments(of: path)
    }
}
