/// One HTTP GET as the validator saw it: the observation the checker is fed. Times are milliseconds on the watch's
/// clock (0 = the start of the watch), so tests feed made-up fetches on a manual clock.
public struct HTTPFetch: Sendable, Hashable {
    /// The absolute URL requested.
    public var url: String
    /// The status code; nil when no answer came (``failure`` says why).
    public var status: Int?
    /// Header fields with lower-case names; repeated fields joined with ", ".
    public var headers: [String: String]
    /// The body (after chunked transfer decoding).
    public var body: [UInt8]
    /// When the request went out.
    public var sent: Int64
    /// When the answer was complete (or the request failed).
    public var received: Int64
    /// Why no answer came (connection refused, timeout); nil when one came.
    public var failure: String?

    /// Creates a fetch.
    /// - Parameters:
    ///   - url: the absolute URL requested.
    ///   - status: the status code, nil when no answer came.
    ///   - headers: header fields; names are lower-cased here.
    ///   - body: the body bytes.
    ///   - sent: milliseconds on the watch's clock when the request went out.
    ///   - received: milliseconds when the answer was complete; `sent` when not given.
    ///   - failure: why no answer came.
    public init(
        url: String, status: Int?, headers: [String: String] = [:], body: [UInt8] = [], sent: Int64,
        received: Int64? = nil, failure: String? = nil
    ) {
        self.url = url
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { $0 + ", " + $1 })
        self.body = body
        self.sent = sent
        self.received = received ?? sent
        self.failure = failure
    }

    /// A header field by lower-case name.
    public func header(_ name: String) -> String? { headers[name] }

    /// The media type of Content-Type, lower-cased, without parameters (`video/mp2t`); nil when absent.
    public var mediaType: String? {
        guard let value = headers["content-type"] else { return nil }
        let type = value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return type.trimmingCharacters(in: " \t").lowercased()
    }

    /// The delta-seconds of a Cache-Control directive (`max-age`, `s-maxage`); nil when absent or not a number.
    public func cacheControlSeconds(_ directive: String) -> Int? {
        guard let value = headers["cache-control"] else { return nil }
        for part in value.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: " \t\"") }
            if pair.count == 2, pair[0].lowercased() == directive { return Int(pair[1]) }
        }
        return nil
    }

    /// Whether Cache-Control carries a directive without value (`no-store`, `no-cache`).
    public func cacheControlHas(_ directive: String) -> Bool {
        guard let value = headers["cache-control"] else { return false }
        return value.split(separator: ",").contains { $0.trimmingCharacters(in: " \t").lowercased() == directive }
    }

    /// The status as the report writes it: `200`, or the failure.
    var outcome: String { status.map { "status \($0)" } ?? (failure ?? "no answer") }
}

extension String {
    fileprivate func trimmingCharacters(in characters: String) -> String {
        var result = Substring(self)
        while let first = result.first, characters.contains(first) { result.removeFirst() }
        while let last = result.last, characters.contains(last) { result.removeLast() }
        return String(result)
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in characters: String) -> String {
        String(self).trimmingCharacters(in: characters)
    }
}
