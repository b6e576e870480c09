import TestSupport
import Testing

@testable import HLSPlaylist

@Suite("ProgramDateTime formatting and parsing", .offThePool)
struct ProgramDateTimeTests {
    @Test(
        "formatted is UTC with milliseconds",
        arguments: [
            (Int64(0), "1970-01-01T00:00:00.000Z"),
            (Int64(1), "1970-01-01T00:00:00.001Z"),
            (Int64(-1), "1969-12-31T23:59:59.999Z"),
            (Int64(-86_400_000), "1969-12-31T00:00:00.000Z"),
            (Int64(1_709_164_800_000), "2024-02-29T00:00:00.000Z"),
            (Int64(1_709_251_199_999), "2024-02-29T23:59:59.999Z"),
            (Int64(951_782_400_000), "2000-02-29T00:00:00.000Z"),
            (Int64(1_795_416_545_123), "2026-11-23T06:49:05.123Z"),
            (Int64(253_402_300_799_999), "9999-12-31T23:59:59.999Z"),
            (Int64(-62_167_219_200_000), "0000-01-01T00:00:00.000Z"),
            (Int64(253_402_300_800_000), "+10000-01-01T00:00:00.000Z"),
            (Int64(-62_167_219_200_001), "-0001-12-31T23:59:59.999Z"),
        ])
    func formatted(milliseconds: Int64, expected: String) {
        #expect(ProgramDateTime(millisecondsSince1970: milliseconds).formatted == expected)
    }

    @Test("formatting the extremes of Int64 does not trap")
    func extremes() {
        #expect(!ProgramDateTime(millisecondsSince1970: .max).formatted.isEmpty)
        #expect(!ProgramDateTime(millisecondsSince1970: .min).formatted.isEmpty)
        #expect(!ProgramDateTime(millisecondsSince1970: .max).isRepresentable)
        #expect(ProgramDateTime(millisecondsSince1970: 0).isRepresentable)
    }

    @Test("every day from 1600 to 2400 formats and parses back")
    func calendarRoundTrip() throws {
        var day: Int64 = -135_140  // 1600-01-01
        var previous = ""
        while day < 157_800 {  // 2402
            let date = ProgramDateTime(millisecondsSince1970: day * 86_400_000 + 43_200_123)
            let text = date.formatted
            #expect(text > previous)
            #expect(ProgramDateTime(iso8601: text) == date)
            previous = text
            day += 1
        }
    }

    @Test(
        "parses offsets and fractions",
        arguments: [
            ("2026-11-23T06:49:05.123Z", Int64(1_795_416_545_123)),
            ("2026-11-23T06:49:05Z", Int64(1_795_416_545_000)),
            ("2026-11-23t06:49:05.123z", Int64(1_795_416_545_123)),
            ("2026-11-23T07:49:05.123+01:00", Int64(1_795_416_545_123)),
            ("2026-11-23T07:49:05.123+0100", Int64(1_795_416_545_123)),
            ("2026-11-23T01:19:05.123-05:30", Int64(1_795_416_545_123)),
            ("2026-11-23T06:49:05.123-00:00", Int64(1_795_416_545_123)),
            ("2026-11-23T06:49:05.1Z", Int64(1_795_416_545_100)),
            ("2026-11-23T06:49:05.12Z", Int64(1_795_416_545_120)),
            ("2026-11-23T06:49:05.1234Z", Int64(1_795_416_545_123)),
            ("2026-11-23T06:49:05.1235Z", Int64(1_795_416_545_124)),
            ("2026-11-23T06:49:05.123456789Z", Int64(1_795_416_545_123)),
            ("2026-11-23T06:49:05.999999999Z", Int64(1_795_416_546_000)),
            ("1970-01-01T00:00:00.000Z", Int64(0)),
            ("1969-12-31T23:59:59.999Z", Int64(-1)),
            ("1970-01-01T00:59:59.999+01:00", Int64(-1)),
            ("2024-02-29T00:00:00.000Z", Int64(1_709_164_800_000)),
            ("2000-02-29T00:00:00Z", Int64(951_782_400_000)),
            ("9999-12-31T23:59:59.999Z", Int64(253_402_300_799_999)),
        ])
    func parses(text: String, milliseconds: Int64) {
        #expect(ProgramDateTime(iso8601: text)?.millisecondsSince1970 == milliseconds)
    }

    @Test(
        "refuses invalid dates",
        arguments: [
            "", "2026-11-23", "2026-11-23T06:49:05", "2026-11-23 06:49:05Z", "2026-13-01T00:00:00Z",
            "2026-00-01T00:00:00Z", "2026-02-30T00:00:00Z", "2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z",
            "2026-04-31T00:00:00Z", "2026-11-00T00:00:00Z", "2026-11-23T24:00:00Z", "2026-11-23T06:60:00Z",
            "2026-11-23T06:49:60Z", "2026-11-23T06:49:05.Z", "2026-11-23T06:49:05.1234567890Z",
            "2026-11-23T06:49:05+24:00", "2026-11-23T06:49:05+01:60", "2026-11-23T06:49:05+01",
            "2026-11-23T06:49:05+1:00", "2026-11-23T06:49:05ZZ", "2026-11-23T06:49:05Z ", " 2026-11-23T06:49:05Z",
            "26-11-23T06:49:05Z", "+2026-11-23T06:49:05Z", "2026-1-23T06:49:05Z", "2026-11-23T6:49:05Z",
            "２０２６-11-23T06:49:05Z", "2026-11-23T06:49:05,123Z", "2026/11/23T06:49:05Z",
        ])
    func refuses(text: String) {
        #expect(ProgramDateTime(iso8601: text) == nil)
    }
}
