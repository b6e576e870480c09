import MicroHTTPD
import SharedBytes
import TestSupport
import Testing

@Suite("Static representations: validators, byte ranges, gzip negotiation", .offThePool)
struct StaticRepresentationTests {
    static let bytes = SharedBytes(string: "0123456789")
    static let media = StaticRepresentation(
        bytes: bytes, contentType: "video/mp2t", cacheControl: "public, max-age=60", etag: "\"e1\"",
        lastModifiedSeconds: 784_111_777, delivery: .byteRanges)
    static let document = StaticRepresentation(
        bytes: bytes, contentType: "text/plain", cacheControl: "no-cache", etag: "\"d1\"", lastModifiedSeconds: 0,
        delivery: .compressible)

    static func get(_ headers: HTTPHeaders = [:]) -> HTTPRequestHead {
        HTTPRequestHead(method: "GET", path: "/", headers: headers)
    }

    static func text(_ body: HTTPBody) -> String {
        switch body {
        case .empty: ""
        case .bytes(let bytes): String(decoding: bytes.withUnsafeBytes { Array($0) }, as: UTF8.self)
        case .slice(let bytes, let range): String(decoding: bytes.withUnsafeBytes { Array($0[range]) }, as: UTF8.self)
        case .file: "(a file region)"
        case .stream: "(a stream)"
        }
    }

    @Test func wholeMediaCarriesValidatorsAndAcceptRanges() {
        let response = Self.media.response(to: Self.get())
        #expect(response.status == 200)
        #expect(
            Array(response.headers.map(\.name)) == [
                "Content-Type", "Cache-Control", "ETag", "Accept-Ranges", "Last-Modified",
            ])
        #expect(response.headers["Last-Modified"] == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(Self.text(response.body) == "0123456789")
    }

    @Test(arguments: [StaticRepresentation.Delivery.byteRanges, .compressible])
    func streamBodyIsSentWholeWithoutRangesOrGzip(delivery: StaticRepresentation.Delivery) {
        let representation = StaticRepresentation(
            body: .stream(HTTPBodyStream()), contentType: "video/mp2t", cacheControl: "no-cache", etag: "\"s1\"",
            lastModifiedSeconds: nil, delivery: delivery)
        let response = representation.response(
            to: Self.get(["Range": "bytes=2-4", "Accept-Encoding": "gzip"]), gzipped: { Self.bytes })
        #expect(response.status == 200)
        #expect(response.headers["Accept-Ranges"] == nil)
        #expect(response.headers["Content-Encoding"] == nil)
        #expect(response.body.isStream)
    }

    @Test func matchingETagOrUnmodifiedDateAnswers304() {
        #expect(Self.media.response(to: Self.get(["If-None-Match": "W/\"e1\""])).status == 304)
        #expect(Self.media.response(to: Self.get(["If-None-Match": "\"x\", \"e1\""])).status == 304)
        #expect(Self.media.response(to: Self.get(["If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT"])).status == 304)
        // If-None-Match takes precedence over If-Modified-Since.
        let both = Self.get(["If-None-Match": "\"x\"", "If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT"])
        #expect(Self.media.response(to: both).status == 200)
    }

    @Test func rangesAnswer206Or416AndIfRangeWithAnotherValidatorSendsAll() {
        let partial = Self.media.response(to: Self.get(["Range": "bytes=2-4"]))
        #expect(partial.status == 206)
        #expect(partial.headers["Content-Range"] == "bytes 2-4/10")
        #expect(Self.text(partial.body) == "234")
        let suffix = Self.media.response(to: Self.get(["Range": "bytes=-3"]))
        #expect(Self.text(suffix.body) == "789")
        let unsatisfiable = Self.media.response(to: Self.get(["Range": "bytes=10-"]))
        #expect(unsatisfiable.status == 416)
        #expect(unsatisfiable.headers["Content-Range"] == "bytes */10")
        #expect(Self.media.response(to: Self.get(["Range": "bytes=2-4", "If-Range": "\"old\""])).status == 200)
        #expect(Self.media.response(to: Self.get(["Range": "bytes=2-4", "If-Range": "\"e1\""])).status == 206)
    }

    @Test func compressibleDocumentIsGzippedOnlyWhenAcceptedAndIgnoresRanges() {
        let gzipped = SharedBytes(string: "gz")
        let accepted = Self.document.response(to: Self.get(["Accept-Encoding": "br, gzip"])) { gzipped }
        #expect(accepted.headers["Content-Encoding"] == "gzip")
        #expect(accepted.headers["Vary"] == "Accept-Encoding")
        #expect(Self.text(accepted.body) == "gz")
        let refused = Self.document.response(to: Self.get(["Accept-Encoding": "gzip;q=0"])) { gzipped }
        #expect(refused.headers["Content-Encoding"] == nil)
        let ranged = Self.document.response(to: Self.get(["Range": "bytes=0-1"]))
        #expect(ranged.status == 200)
        #expect(ranged.headers["Accept-Ranges"] == nil)
        #expect(!StaticRepresentation.answersAsPlainGet(Self.get(["If-None-Match": "\"d1\""]), delivery: .compressible))
        #expect(StaticRepresentation.answersAsPlainGet(Self.get(["Range": "bytes=0-1"]), delivery: .compressible))
        #expect(!StaticRepresentation.answersAsPlainGet(Self.get(["Range": "bytes=0-1"]), delivery: .byteRanges))
    }

    @Test(arguments: [
        ("gzip", true), ("GZIP;q=0.5", true), ("*", true), ("identity", false), ("gzip;q=0", false),
        ("gzip; q=0.000", false), ("br, gzip;q=0.001", true), ("*;q=0, gzip", false),
    ])
    func acceptEncodingDecidesGzip(header: String, accepted: Bool) {
        #expect(ContentCoding.acceptsGzip(Self.get(["Accept-Encoding": header])) == accepted)
    }
}
