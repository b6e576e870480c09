public import SharedBytes

/// Bytes that do not change under their validators (an ETag, optionally a modification time), in memory or in a file
/// region, and the answer to a GET or HEAD of them: conditional requests (If-None-Match, If-Modified-Since -> 304),
/// byte ranges (Range, If-Range -> 206 or 416) and gzip negotiation (Accept-Encoding, Vary; never for file bodies).
/// The caller decides the bytes, the content type and the caching policy; everything HTTP says about answering for
/// them is here.
public struct StaticRepresentation: Sendable {
    /// How the representation is offered.
    public enum Delivery: Sendable {
        /// Whole, gzipped for clients that accept it (`Vary: Accept-Encoding`); validated by ETag only. For small,
        /// compressible and short-lived documents.
        case compressible
        /// Whole or as one byte range (`Accept-Ranges: bytes`); validated by ETag, else by Last-Modified. For
        /// media that clients fetch in parts.
        case byteRanges
    }

    /// The representation's bytes: in memory (`.bytes`, `.slice`) or in a file (`.file`). A 206 answers with a part
    /// of it, without copying.
    public var body: HTTPBody
    /// Content-Type.
    public var contentType: String
    /// Cache-Control.
    public var cacheControl: String
    /// The ETag, quotes included (a strong validator).
    public var etag: String
    /// Last-Modified, seconds since the Unix epoch; nil sends none.
    public var lastModifiedSeconds: Int64?
    /// How the representation is offered.
    public var delivery: Delivery

    /// Creates a representation of bytes in memory.
    public init(
        bytes: SharedBytes, contentType: String, cacheControl: String, etag: String, lastModifiedSeconds: Int64?,
        delivery: Delivery
    ) {
        self.init(
            body: .bytes(bytes), contentType: contentType, cacheControl: cacheControl, etag: etag,
            lastModifiedSeconds: lastModifiedSeconds, delivery: delivery)
    }

    /// Creates a representation of any body, e.g. `.file(region)` for bytes libmicrohttpd sends from a file.
    public init(
        body: HTTPBody, contentType: String, cacheControl: String, etag: String, lastModifiedSeconds: Int64?,
        delivery: Delivery
    ) {
        self.body = body
        self.contentType = contentType
        self.cacheControl = cacheControl
        self.etag = etag
        self.lastModifiedSeconds = lastModifiedSeconds
        self.delivery = delivery
    }

    /// Whether `request` gets the same answer as a plain GET with the same Accept-Encoding: it carries none of the
    /// headers that change this delivery's answer (validators, and for byte ranges the Range header). Such
    /// requests may be answered with a response prepared once.
    public static func answersAsPlainGet(_ request: HTTPRequestHead, delivery: Delivery) -> Bool {
        switch delivery {
        case .compressible:
            !request.headers.contains("If-None-Match")
        case .byteRanges:
            !(request.headers.contains("If-None-Match") || request.headers.contains("If-Modified-Since")
                || request.headers.contains("Range"))
        }
    }

    /// The answer to a GET or HEAD of this representation.
    /// - Parameter gzipped: the gzip form of the body for a `.compressible` delivery (nil if there is none, e.g.
    ///   zlib failed); called only when the client accepts gzip, the answer has a body and that body is not a file
    ///   (file bodies are always sent as they are). Callers usually keep the form they made (see
    ///   `Gzip.compress(_:level:)`).
    public func response(to request: HTTPRequestHead, gzipped: () -> SharedBytes? = { nil }) -> HTTPResponse {
        var headers: HTTPHeaders = ["Content-Type": contentType, "Cache-Control": cacheControl, "ETag": etag]
        // A stream's length is not known yet: no ranges, no gzip.
        let isStream = body.isStream
        if delivery == .byteRanges && !isStream { headers.append(name: "Accept-Ranges", value: "bytes") }
        if let lastModifiedSeconds {
            headers.append(name: "Last-Modified", value: HTTPDate.format(secondsSince1970: lastModifiedSeconds))
        }
        if delivery == .compressible { headers.append(name: "Vary", value: "Accept-Encoding") }
        if Self.noneMatch(request, etag: etag) { return HTTPResponse(status: 304, headers: headers) }
        switch delivery {
        case .compressible:
            if !body.isFile, !isStream, ContentCoding.acceptsGzip(request), let compressed = gzipped() {
                headers.append(name: "Content-Encoding", value: "gzip")
                return HTTPResponse(status: 200, headers: headers, body: .bytes(compressed))
            }
            return HTTPResponse(status: 200, headers: headers, body: body)
        case .byteRanges where isStream:
            return HTTPResponse(status: 200, headers: headers, body: body)
        case .byteRanges:
            return rangeResponse(to: request, headers: headers)
        }
    }

    private func rangeResponse(to request: HTTPRequestHead, headers: HTTPHeaders) -> HTTPResponse {
        var headers = headers
        if request.headers["If-None-Match"] == nil,
            let since = request.headers["If-Modified-Since"].flatMap(HTTPDate.parse),
            let lastModifiedSeconds, lastModifiedSeconds <= since
        {
            return HTTPResponse(status: 304, headers: headers)
        }
        // If-Range with another validator: send the whole representation.
        let rangeHeader = request.headers["If-Range"].map { $0 == etag } ?? true ? request.headers["Range"] : nil
        let length = body.count
        switch ByteRangeRequest.resolve(rangeHeader, length: length) {
        case .whole:
            return HTTPResponse(status: 200, headers: headers, body: body)
        case .partial(let range):
            headers.append(name: "Content-Range", value: "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(length)")
            return HTTPResponse(status: 206, headers: headers, body: body.subrange(range))
        case .unsatisfiable:
            var response = HTTPResponse.text(416, "range not satisfiable: the resource has \(length) bytes\n")
            response.headers.append(name: "Content-Range", value: "bytes */\(length)")
            return response
        }
    }

    /// Whether If-None-Match names `etag` (weak comparison, RFC 9110 section 13.1.2) or is `*`.
    private static func noneMatch(_ request: HTTPRequestHead, etag: String) -> Bool {
        guard let header = request.headers["If-None-Match"] else { return false }
        return header == "*"
            || header.split(separator: ",").contains { item in
                item.trimmingHorizontalWhitespace().replacing("W/", with: "") == etag
            }
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs (Unicode space separators included).
    fileprivate func trimmingHorizontalWhitespace() -> Substring {
        func isSpace(_ scalar: Unicode.Scalar) -> Bool {
            scalar == "\t" || scalar.properties.generalCategory == .spaceSeparator
        }
        var scalars = unicodeScalars[...]
        while let first = scalars.first, isSpace(first) { scalars.removeFirst() }
        while let last = scalars.last, isSpace(last) { scalars.removeLast() }
        return Substring(scalars)
    }
}
