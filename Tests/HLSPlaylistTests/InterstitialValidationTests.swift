import HLSPlaylist
import TestSupport
import Testing

/// The 8216bis Appendix D rules for an interstitial EXT-X-DATERANGE, checked by `DateRange.validate()`.
@Suite("Interstitial date ranges: 8216bis must-rules", .offThePool)
struct InterstitialValidationTests {
    static func interstitial(_ attributes: [(String, AttributeValue)]) -> DateRange {
        DateRange(
            id: "ad", classAttribute: DateRange.interstitialClass,
            startDate: ProgramDateTime(millisecondsSince1970: 1_767_225_600_000), duration: 30,
            clientAttributes: attributes.map { ClientAttribute(name: $0.0, value: $0.1) })
    }

    static func problem(_ attributes: [(String, AttributeValue)]) -> String? {
        do {
            try interstitial(attributes).validate()
            return nil
        } catch {
            return "\(error.attribute): \(error.message)"
        }
    }

    @Test("a legal interstitial validates; the same X- values under another CLASS are not checked")
    func legal() throws {
        #expect(
            Self.problem([
                ("X-ASSET-LIST", .quotedString("https://ads.example/l.json")), ("X-RESUME-OFFSET", .decimal(0)),
                ("X-PLAYOUT-LIMIT", .decimal(30)), ("X-SNAP", .quotedString("IN,OUT")),
                ("X-RESTRICT", .quotedString("JUMP")), ("X-CONTENT-MAY-VARY", .quotedString("NO")),
                ("X-TIMELINE-OCCUPIES", .quotedString("POINT")), ("X-TIMELINE-STYLE", .quotedString("PRIMARY")),
            ]) == nil)
        var other = Self.interstitial([("X-SNAP", .quotedString("LEFT"))])
        other.classAttribute = "com.example.other"
        try other.validate()
    }

    @Test(
        "refused, naming the attribute",
        arguments: [
            ([], "X-ASSET-URI: an interstitial needs X-ASSET-URI or X-ASSET-LIST"),
            (
                [("X-ASSET-URI", .quotedString("https://a/x.m3u8")), ("X-ASSET-LIST", .quotedString("https://a/l"))],
                "X-ASSET-LIST: an interstitial has X-ASSET-URI or X-ASSET-LIST, not both"
            ),
            ([("X-ASSET-URI", .decimal(1))], "X-ASSET-URI: must be a quoted-string URI (non-empty, no spaces)"),
            ([("X-ASSET-URI", .quotedString(""))], "X-ASSET-URI: must be a quoted-string URI (non-empty, no spaces)"),
            (
                [("X-ASSET-URI", .quotedString("https://a/x.m3u8")), ("X-RESUME-OFFSET", .quotedString("0"))],
                "X-RESUME-OFFSET: must be a decimal number of seconds >= 0"
            ),
            (
                [("X-ASSET-URI", .quotedString("https://a/x.m3u8")), ("X-SNAP", .quotedString("OUT,OUT"))],
                "X-SNAP: OUT given twice"
            ),
            (
                [("X-ASSET-URI", .quotedString("https://a/x.m3u8")), ("X-RESTRICT", .decimal(1))],
                "X-RESTRICT: must be a quoted string (SKIP, JUMP)"
            ),
            (
                [("X-ASSET-URI", .quotedString("https://a/x.m3u8")), ("X-TIMELINE-STYLE", .quotedString("BOLD"))],
                "X-TIMELINE-STYLE: unknown value \"BOLD\" (HIGHLIGHT, PRIMARY)"
            ),
        ] as [([(String, AttributeValue)], String)])
    func refused(attributes: [(String, AttributeValue)], message: String) {
        #expect(Self.problem(attributes) == message)
    }
}
