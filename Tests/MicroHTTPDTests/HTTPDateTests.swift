import MicroHTTPD
import TestSupport
import Testing

@Suite("HTTP dates (IMF-fixdate)", .offThePool)
struct HTTPDateTests {
    @Test(arguments: [
        (Int64(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT"),  // RFC 9110's example
        (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
        (1_709_164_800, "Thu, 29 Feb 2024 00:00:00 GMT"),
        (4_102_444_799, "Thu, 31 Dec 2099 23:59:59 GMT"),
    ])
    func formatsAndParsesBack(seconds: Int64, text: String) {
        #expect(HTTPDate.format(secondsSince1970: seconds) == text)
        #expect(HTTPDate.parse(text) == seconds)
    }

    @Test(arguments: [
        "", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "Sun, 06 Nov 1994 25:00:00 GMT",
        "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 UTC",
    ])
    func refusesOtherFormats(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }
}
