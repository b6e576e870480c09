import TestSupport
import Testing

@testable import HLSPlaylist

@Suite("DateRange rendering and validation", .offThePool)
struct DateRangeTests {
    static let start = ProgramDateTime(millisecondsSince1970: 1_795_416_545_123)

    @Test("every attribute, in the documented order")
    func everyAttribute() {
        let dateRange = DateRange(
            id: "splice-6FFFFFF0", classAttribute: "com.apple.hls.interstitial", startDate: Self.start, cue: ["ONCE"],
            endDate: Self.start.adding(milliseconds: 30_500), duration: 30.5, plannedDuration: 30,
            clientAttributes: [
                ClientAttribute(name: "X-ASSET-URI", value: .quotedString("https://ads.example/ad.m3u8")),
                ClientAttribute(name: "X-COUNT", value: .decimal(2.002)),
                ClientAttribute(name: "X-BLOB", value: .hexadecimal([0x0A, 0xFF])),
            ],
            scte35Command: [0xFC, 0x30, 0x00], scte35Out: [0xFC, 0x30, 0x01], scte35In: [0xFC, 0x30, 0x02])
        #expect(
            dateRange.renderedTag
                == "#EXT-X-DATERANGE:ID=\"splice-6FFFFFF0\",CLASS=\"com.apple.hls.interstitial\","
                + "START-DATE=\"2026-11-23T06:49:05.123Z\",CUE=\"ONCE\",END-DATE=\"2026-11-23T06:49:35.623Z\","
                + "DURATION=30.5,PLANNED-DURATION=30,X-ASSET-URI=\"https://ads.example/ad.m3u8\",X-COUNT=2.002,"
                + "X-BLOB=0x0AFF,SCTE35-CMD=0xFC3000,SCTE35-OUT=0xFC3001,SCTE35-IN=0xFC3002")
        #expect(throws: Never.self) { try dateRange.validate() }
    }

    @Test("minimal, END-ON-NEXT, multi-value CUE")
    func smallTags() throws {
        #expect(
            DateRange(id: "a", startDate: Self.start).renderedTag
                == "#EXT-X-DATERANGE:ID=\"a\",START-DATE=\"2026-11-23T06:49:05.123Z\"")
        let chained = DateRange(
            id: "b", classAttribute: "c", startDate: Self.start, cue: ["PRE", "ONCE"], endOnNext: true)
        #expect(
            chained.renderedTag
                == "#EXT-X-DATERANGE:ID=\"b\",CLASS=\"c\",START-DATE=\"2026-11-23T06:49:05.123Z\",CUE=\"PRE,ONCE\","
                + "END-ON-NEXT=YES")
        try chained.validate()
    }

    static let invalid: [(DateRange, String, String)] = [
        (DateRange(id: "", startDate: start), "ID", "empty quoted string"),
        (DateRange(id: "a\"b", startDate: start), "ID", "quoted string contains '\"', CR or LF"),
        (DateRange(id: "a\nb", startDate: start), "ID", "quoted string contains '\"', CR or LF"),
        (DateRange(id: "a", classAttribute: "x\r", startDate: start), "CLASS", "quoted string contains '\"', CR or LF"),
        (DateRange(id: "a", classAttribute: "", startDate: start), "CLASS", "empty quoted string"),
        (
            DateRange(id: "a", startDate: ProgramDateTime(millisecondsSince1970: 253_402_300_800_000)), "START-DATE",
            "year outside 0000-9999"
        ),
        (DateRange(id: "a", startDate: start, cue: ["MID"]), "CUE", "unknown value \"MID\" (PRE, POST, ONCE)"),
        (DateRange(id: "a", startDate: start, cue: ["PRE", "POST"]), "CUE", "PRE and POST together"),
        (DateRange(id: "a", startDate: start, cue: ["ONCE", "ONCE"]), "CUE", "ONCE given twice"),
        (
            DateRange(id: "a", startDate: start, endDate: start.adding(milliseconds: -1)), "END-DATE",
            "2026-11-23T06:49:05.122Z is before START-DATE 2026-11-23T06:49:05.123Z"
        ),
        (DateRange(id: "a", startDate: start, duration: -0.5), "DURATION", "must be a finite number >= 0"),
        (DateRange(id: "a", startDate: start, duration: .nan), "DURATION", "must be a finite number >= 0"),
        (
            DateRange(id: "a", startDate: start, plannedDuration: -1), "PLANNED-DURATION",
            "must be a finite number >= 0"
        ),
        (
            DateRange(id: "a", startDate: start, plannedDuration: .infinity), "PLANNED-DURATION",
            "must be a finite number >= 0"
        ),
        (
            DateRange(id: "a", startDate: start, duration: 9_223_372_000_000_000), "DURATION",
            "9.223372e+15 s would end after the year 9999"
        ),
        (
            DateRange(id: "a", startDate: start, plannedDuration: 1e300), "PLANNED-DURATION",
            "1e+300 s would end after the year 9999"
        ),
        (
            DateRange(id: "a", startDate: start, endDate: start.adding(milliseconds: 30_000), duration: 31),
            "DURATION", "DURATION 31 disagrees with END-DATE - START-DATE (30)"
        ),
        (DateRange(id: "a", startDate: start, endOnNext: true), "END-ON-NEXT", "requires CLASS"),
        (
            DateRange(id: "a", classAttribute: "c", startDate: start, duration: 1, endOnNext: true), "END-ON-NEXT",
            "forbids DURATION"
        ),
        (
            DateRange(id: "a", classAttribute: "c", startDate: start, endDate: start, endOnNext: true),
            "END-ON-NEXT", "forbids END-DATE"
        ),
        (
            DateRange(id: "a", startDate: start, clientAttributes: [ClientAttribute(name: "FOO", value: .decimal(1))]),
            "FOO", "client attribute names are X-[A-Z0-9-]+"
        ),
        (
            DateRange(
                id: "a", startDate: start, clientAttributes: [ClientAttribute(name: "X-foo", value: .decimal(1))]),
            "X-foo", "client attribute names are X-[A-Z0-9-]+"
        ),
        (
            DateRange(id: "a", startDate: start, clientAttributes: [ClientAttribute(name: "X-", value: .decimal(1))]),
            "X-", "client attribute names are X-[A-Z0-9-]+"
        ),
        (
            DateRange(
                id: "a", startDate: start,
                clientAttributes: [
                    ClientAttribute(name: "X-A", value: .decimal(1)), ClientAttribute(name: "X-A", value: .decimal(2)),
                ]), "X-A", "given twice"
        ),
        (
            DateRange(
                id: "a", startDate: start,
                clientAttributes: [ClientAttribute(name: "X-A", value: .quotedString("\""))]),
            "X-A", "quoted string contains '\"', CR or LF"
        ),
        (
            DateRange(
                id: "a", startDate: start, clientAttributes: [ClientAttribute(name: "X-A", value: .hexadecimal([]))]),
            "X-A", "empty hexadecimal sequence"
        ),
        (
            DateRange(
                id: "a", startDate: start, clientAttributes: [ClientAttribute(name: "X-A", value: .decimal(.nan))]),
            "X-A", "decimal must be finite"
        ),
        (
            DateRange(
                id: "a", startDate: start, clientAttributes: [ClientAttribute(name: "X-A", value: .enumerated("YES"))]),
            "X-A", "client attribute values are quoted strings, hexadecimal or decimal"
        ),
        (DateRange(id: "a", startDate: start, scte35Command: []), "SCTE35-CMD", "empty hexadecimal sequence"),
        (DateRange(id: "a", startDate: start, scte35Out: []), "SCTE35-OUT", "empty hexadecimal sequence"),
        (DateRange(id: "a", startDate: start, scte35In: []), "SCTE35-IN", "empty hexadecimal sequence"),
    ]

    @Test("every validation error names its attribute", arguments: invalid)
    func validationErrors(dateRange: DateRange, attribute: String, message: String) {
        #expect(throws: PlaylistValidationError(attribute: attribute, message: message)) { try dateRange.validate() }
    }

    @Test("DURATION and END-DATE agreeing within a millisecond pass")
    func agreeingDuration() throws {
        try DateRange(id: "a", startDate: Self.start, endDate: Self.start.adding(milliseconds: 2002), duration: 2.002)
            .validate()
        try DateRange(id: "a", startDate: Self.start, endDate: Self.start.adding(milliseconds: 2003), duration: 2.002)
            .validate()
        try DateRange(id: "a", startDate: Self.start, endDate: Self.start, duration: 0).validate()
        try DateRange(
            id: "a", startDate: Self.start, clientAttributes: [ClientAttribute(name: "X-E", value: .quotedString(""))]
        )
        .validate()
    }

    @Test("error description")
    func errorDescription() {
        #expect(
            PlaylistValidationError(attribute: "CUE", message: "PRE and POST together").description
                == "CUE: PRE and POST together")
    }
}
