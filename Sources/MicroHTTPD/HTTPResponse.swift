import SharedBytes

/// A complete response: status, headers and body. Content-Length and Date are added by libmicrohttpd (a
/// "Content-Length" header set here is ignored).
public struct HTTPResponse: Sendable {
    /// The status code, e.g. 200.
    public var status: Int
    /// Headers in the order they are sent.
    public var headers: HTTPHeaders
    /// The body.
    public var body: HTTPBody

    /// Creates a response.
    /// - Parameters:
    ///   - status: the status code.
    ///   - headers: header fields, sent in order.
    ///   - body: the body; `.empty` by default.
    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: HTTPBody = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A `text/plain; charset=utf-8` response with `message` as the body (exactly, no newline added).
    /// - Parameters:
    ///   - status: the status code.
    ///   - message: the body text.
    ///   - headers: further headers, sent after Content-Type.
    public static func text(_ status: Int, _ message: String, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var allHeaders = HTTPHeaders([(name: "Content-Type", value: "text/plain; charset=utf-8")])
        for field in headers { allHeaders.append(name: field.name, value: field.value) }
        return HTTPResponse(status: status, headers: allHeaders, body: .bytes(SharedBytes(string: message)))
    }
}
