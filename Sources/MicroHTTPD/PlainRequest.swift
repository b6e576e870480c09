/// A GET or HEAD whose answer depends only on its method, path and Accept-Encoding: no query, no body, none of the
/// validator or range headers (If-None-Match, If-Modified-Since, If-Match, If-Unmodified-Since, If-Range, Range).
///
/// The server offers such requests to `HTTPRequestHandler.handlePlain(_:)` before it builds an `HTTPRequestHead`
/// (header strings, decoded path, client address): the fast path for playlist and segment GETs. The buffers point
/// into libmicrohttpd's memory and are valid only during that call.
public struct PlainRequest {
    /// True for HEAD (libmicrohttpd leaves the body out of the answer), false for GET.
    public let isHead: Bool
    /// The path as sent, without the query; percent-encoding is not decoded, bytes are raw.
    public let path: UnsafeRawBufferPointer
    /// The Accept-Encoding value as sent, nil when the header is absent.
    public let acceptEncoding: UnsafeRawBufferPointer?
    /// A small number for the libmicrohttpd thread calling (0, 1, 2 ...), stable for the thread's lifetime: lets a
    /// handler keep per-thread state that no other thread touches.
    public let threadIndex: Int
    /// The request came over TLS (an HTTPS listener).
    public let isTLS: Bool

    /// Creates a plain request (the server builds these; tests may too).
    public init(
        isHead: Bool, path: UnsafeRawBufferPointer, acceptEncoding: UnsafeRawBufferPointer?, threadIndex: Int,
        isTLS: Bool = false
    ) {
        self.isTLS = isTLS
        self.isHead = isHead
        self.path = path
        self.acceptEncoding = acceptEncoding
        self.threadIndex = threadIndex
    }

    /// The path as a String, with bytes outside printable ASCII percent-encoded (as in `HTTPRequestHead.path`).
    public var pathString: String {
        PercentDecoding.encodingNonPrintable(path.assumingMemoryBound(to: UInt8.self))
    }

    /// The request head `handle(_:)` would see for this request, apart from headers other than Accept-Encoding and
    /// the client address (neither changes a plain request's answer).
    public func makeHead() -> HTTPRequestHead {
        var headers = HTTPHeaders()
        if let acceptEncoding {
            headers.append(name: "Accept-Encoding", value: String(decoding: acceptEncoding, as: UTF8.self))
        }
        return HTTPRequestHead(method: isHead ? "HEAD" : "GET", path: pathString, headers: headers, isTLS: isTLS)
    }
}
