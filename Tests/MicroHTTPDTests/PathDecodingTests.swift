import MicroHTTPD
import SharedBytes
import TestSupport
import Testing

@Suite(.offThePool) struct PathDecodingTests {
    static let cases: [(path: String, expected: [String]?)] = [
        ("/", []),
        ("/live/channel/index.m3u8", ["live", "channel", "index.m3u8"]),
        ("/a%20b/c%2Dd", ["a b", "c-d"]),
        ("/caf%C3%A9", ["café"]),
        ("/a//b/", ["a", "", "b", ""]),
        ("/a%2e%2e/b", ["a..", "b"]),
        ("/%2e%2e/b", nil),
        ("/%2E%2e", nil),
        ("/../b", nil),
        ("/a/./b", nil),
        ("/a/%2e", nil),
        ("/a%2Fb", nil),
        ("/a%2fb", nil),
        ("/a%5Cb", nil),
        ("/a\\b", nil),
        ("/%C3%28", nil),
        ("/%FF", nil),
        ("/a%00b", nil),
        ("/a%0Ab", nil),
        ("/a%7F", nil),
        ("/a%C2%85", nil),
        ("/a%", nil),
        ("/a%2", nil),
        ("/a%zz", nil),
        ("relative/path", nil),
        ("*", nil),
        ("/...", ["..."]),
    ]

    @Test(arguments: cases)
    func decodesStrictly(_ testCase: (path: String, expected: [String]?)) {
        let head = HTTPRequestHead(method: "GET", path: testCase.path)
        #expect(head.decodedPathSegments() == testCase.expected)
    }

    @Test(arguments: [
        ("127.0.0.1", true), ("127.5.6.7", true), ("::1", true), ("::ffff:127.0.0.1", true),
        ("10.0.0.1", false), ("::ffff:10.0.0.1", false), ("2001:db8::1", false), ("128.0.0.1", false),
    ])
    func loopbackAddresses(_ address: String, _ expected: Bool) {
        #expect(HTTPRequestHead(method: "GET", path: "/", remoteAddress: address).isLoopback == expected)
    }

    @Test func noAddressIsNotLoopback() {
        #expect(!HTTPRequestHead(method: "GET", path: "/").isLoopback)
    }
}

@Suite(.offThePool) struct HTTPHeadersTests {
    @Test func lookupIgnoresCaseAndKeepsOrder() {
        var headers: HTTPHeaders = ["Content-Type": "text/plain", "X-One": "1"]
        headers.append(name: "x-one", value: "2")
        #expect(headers["content-type"] == "text/plain")
        #expect(headers["X-ONE"] == "1")
        #expect(headers.values(for: "X-One") == ["1", "2"])
        #expect(headers["Missing"] == nil)
        #expect(headers.map(\.name) == ["Content-Type", "X-One", "x-one"])
    }

    @Test func replaceAndRemove() {
        var headers: HTTPHeaders = ["A": "1", "B": "2"]
        headers.append(name: "a", value: "3")
        headers.replaceOrAppend(name: "A", value: "9")
        #expect(headers.map { "\($0.name)=\($0.value)" } == ["A=9", "B=2"])
        headers.remove(name: "b")
        #expect(headers.count == 1)
        #expect(!headers.contains("B"))
    }

    @Test func textResponse() {
        let response = HTTPResponse.text(404, "not here\n", headers: ["Cache-Control": "no-cache"])
        #expect(response.status == 404)
        #expect(response.headers.map(\.name) == ["Content-Type", "Cache-Control"])
        #expect(response.headers["content-type"] == "text/plain; charset=utf-8")
        guard case .bytes(let bytes) = response.body else {
            Issue.record("expected a bytes body")
            return
        }
        #expect(bytes.array == Array("not here\n".utf8))
    }
}
