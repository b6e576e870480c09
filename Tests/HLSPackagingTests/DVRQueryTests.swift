import HLSPackaging
import HLSPlaylist
import LiveTimeline
import TestSupport
import Testing

@Suite("DVR query: start and end arguments", .offThePool)
struct DVRQueryTests {
    /// 2026-11-23T06:49:05.123Z.
    static let t0: Int64 = 1_795_416_545_123

    @Test(
        "times in every accepted form",
        arguments: [
            ("2026-11-23T06:49:05.123Z", DVRTime.absolute(milliseconds: t0)),
            ("2026-11-23T06:49:05Z", .absolute(milliseconds: t0 - 123)),
            ("2026-11-23T06:49:05.1234567Z", .absolute(milliseconds: t0)),
            ("2026-11-23T07:49:05.123+01:00", .absolute(milliseconds: t0)),
            // A `+` that the query decoding turned into a space.
            ("2026-11-23T07:49:05.123 01:00", .absolute(milliseconds: t0)),
            ("2026-11-23T05:49:05.123-0100", .absolute(milliseconds: t0)),
            ("2026-11-23T06:49:05.123", .absolute(milliseconds: t0)),
            ("2026-11-23T06:49:05", .absolute(milliseconds: t0 - 123)),
            ("1795416545", .absolute(milliseconds: t0 - 123)),
            ("1795416545.123", .absolute(milliseconds: t0)),
            ("1795416545.1225", .absolute(milliseconds: t0)),
            ("1795416545.", .absolute(milliseconds: t0 - 123)),
            ("0", .absolute(milliseconds: 0)),
            ("-3600", .beforeNow(milliseconds: 3_600_000)),
            ("-90.25", .beforeNow(milliseconds: 90_250)),
            ("-0", .beforeNow(milliseconds: 0)),
        ])
    func acceptedTimes(text: String, expected: DVRTime) throws {
        #expect(try DVRQuery.time(text, argument: "start") == expected)
    }

    @Test(
        "malformed times answer a message that names the argument and the value",
        arguments: [
            "", "yesterday", "12abc", "--5", "-", "1.2.3", "+5", "1e9", "2026-13-01T00:00:00Z", "2026-11-23",
            "2026-11-23T06:49:05.123Zjunk", "1234567890123", "-1.1234567890",
        ])
    func malformedTimes(text: String) {
        #expect(
            throws: DVRQueryError(
                kind: .malformed,
                message: "end: '\(text)' is not an ISO 8601 date, epoch seconds or negative seconds")
        ) { try DVRQuery.time(text, argument: "end") }
    }

    @Test("a long or binary value is shown shortened and printable")
    func longValueIsShortened() throws {
        let error = #expect(throws: DVRQueryError.self) {
            try DVRQuery.time(String(repeating: "x", count: 100) + "\u{7}", argument: "start")
        }
        #expect(
            error?.message == "start: '\(String(repeating: "x", count: 64))...' is not an ISO 8601 date, "
                + "epoch seconds or negative seconds")
        let control = #expect(throws: DVRQueryError.self) { try DVRQuery.time("a\u{1}\u{e9}", argument: "start") }
        #expect(control?.message.hasPrefix("start: 'a??'") == true)
    }

    @Test("other arguments are ignored; without start or end there is no DVR query")
    func otherArgumentsIgnored() throws {
        #expect(try DVRQuery.parse([]) == nil)
        #expect(try DVRQuery.parse([("token", "abc"), ("_HLS_msn", "12"), ("flag", nil)]) == nil)
        let query = try DVRQuery.parse([("token", "abc"), ("start", "-60"), ("x", nil), ("end", "1795416545.123")])
        #expect(query == DVRQuery(start: .beforeNow(milliseconds: 60_000), end: .absolute(milliseconds: Self.t0)))
        // The first of each name counts.
        #expect(
            try DVRQuery.parse([("start", "-1"), ("start", "junk")]) == DVRQuery(start: .beforeNow(milliseconds: 1000)))
    }

    @Test("end without start, and start without a value, are malformed")
    func missingValues() {
        #expect(throws: DVRQueryError(kind: .malformed, message: "end: needs a start (start=T&end=E)")) {
            try DVRQuery.parse([("end", "-5")])
        }
        #expect(
            throws: DVRQueryError(
                kind: .malformed, message: "start: '' is not an ISO 8601 date, epoch seconds or negative seconds")
        ) { try DVRQuery.parse([("start", nil)]) }
    }

    // MARK: - Resolution

    /// Horizon t0, live edge t0 + 1 h, now 1 s after the edge.
    static let window = DVRWindow(horizonMilliseconds: t0, liveEdgeMilliseconds: t0 + 3_600_000)
    static let now = t0 + 3_601_000

    @Test("start=T: start-over EVENT from T")
    func startOver() throws {
        let interval = try DVRQuery(start: .absolute(milliseconds: Self.t0 + 5000)).resolve(
            in: Self.window, nowMilliseconds: Self.now)
        #expect(interval == DVRInterval(kind: .startOver, startMilliseconds: Self.t0 + 5000))
        #expect(interval.playlistType == .event)
    }

    @Test("start=-S: a sliding window from S seconds before now, no playlist type")
    func sliding() throws {
        let interval = try DVRQuery(start: .beforeNow(milliseconds: 600_000)).resolve(
            in: Self.window, nowMilliseconds: Self.now)
        #expect(interval == DVRInterval(kind: .sliding, startMilliseconds: Self.now - 600_000))
        #expect(interval.playlistType == nil)
    }

    @Test("end at or before the live edge: catch-up VOD; after it: EVENT")
    func catchUpAndEvent() throws {
        let start = DVRTime.absolute(milliseconds: Self.t0 + 1000)
        let vod = try DVRQuery(start: start, end: .absolute(milliseconds: Self.window.liveEdgeMilliseconds))
            .resolve(in: Self.window, nowMilliseconds: Self.now)
        #expect(vod.kind == .catchUp)
        #expect(vod.playlistType == .vod)
        #expect(vod.endMilliseconds == Self.window.liveEdgeMilliseconds)
        let relativeEnd = try DVRQuery(start: start, end: .beforeNow(milliseconds: 60_000))
            .resolve(in: Self.window, nowMilliseconds: Self.now)
        #expect(
            relativeEnd
                == DVRInterval(kind: .catchUp, startMilliseconds: Self.t0 + 1000, endMilliseconds: Self.now - 60_000))
        let event = try DVRQuery(start: start, end: .absolute(milliseconds: Self.window.liveEdgeMilliseconds + 1))
            .resolve(in: Self.window, nowMilliseconds: Self.now)
        #expect(event.kind == .event)
        #expect(event.playlistType == .event)
        // Within the grace after the edge passed E, still an EVENT (a player that started on it keeps its type).
        let justPassed = try DVRQuery(
            start: start, end: .absolute(milliseconds: Self.window.liveEdgeMilliseconds - 999)
        )
        .resolve(in: Self.window, nowMilliseconds: Self.now, eventGraceMilliseconds: 1000)
        #expect(justPassed.kind == .event)
        let longPassed = try DVRQuery(
            start: start, end: .absolute(milliseconds: Self.window.liveEdgeMilliseconds - 1000)
        )
        .resolve(in: Self.window, nowMilliseconds: Self.now, eventGraceMilliseconds: 1000)
        #expect(longPassed.kind == .catchUp)
    }

    @Test("end <= start is malformed")
    func endNotAfterStart() {
        #expect(
            throws: DVRQueryError(
                kind: .malformed,
                message: "end: 2026-11-23T06:49:06.123Z is not after start 2026-11-23T06:49:06.123Z")
        ) {
            try DVRQuery(start: .absolute(milliseconds: Self.t0 + 1000), end: .absolute(milliseconds: Self.t0 + 1000))
                .resolve(in: Self.window, nowMilliseconds: Self.now)
        }
    }

    @Test("a start before the horizon or after now is outside the window, and the message names the window")
    func outsideWindow() throws {
        #expect(
            throws: DVRQueryError(
                kind: .outsideWindow,
                message: "start: 2026-11-23T06:49:05.122Z is before the DVR window "
                    + "(2026-11-23T06:49:05.123Z to 2026-11-23T07:49:05.123Z)")
        ) {
            try DVRQuery(start: .absolute(milliseconds: Self.t0 - 1)).resolve(
                in: Self.window, nowMilliseconds: Self.now)
        }
        #expect(
            throws: DVRQueryError(
                kind: .outsideWindow,
                message: "start: 2026-11-23T07:49:06.124Z is after now (2026-11-23T07:49:06.123Z); the DVR window is "
                    + "2026-11-23T06:49:05.123Z to 2026-11-23T07:49:05.123Z")
        ) {
            try DVRQuery(start: .absolute(milliseconds: Self.now + 1)).resolve(
                in: Self.window, nowMilliseconds: Self.now)
        }
        #expect(throws: DVRQueryError(kind: .outsideWindow, message: "start: the channel has no DVR window yet")) {
            try DVRQuery(start: .beforeNow(milliseconds: 1000)).resolve(in: nil, nowMilliseconds: Self.now)
        }
        // The window's ends themselves are inside.
        #expect(
            try DVRQuery(start: .absolute(milliseconds: Self.t0)).resolve(in: Self.window, nowMilliseconds: Self.now)
                .kind == .startOver)
        #expect(
            try DVRQuery(start: .absolute(milliseconds: Self.now)).resolve(in: Self.window, nowMilliseconds: Self.now)
                .kind == .startOver)
    }

    @Test("the absolute query a multivariant passes on: epoch seconds with three decimals")
    func absoluteQuery() {
        #expect(DVRInterval(kind: .sliding, startMilliseconds: Self.t0).absoluteQuery == "start=1795416545.123")
        #expect(
            DVRInterval(kind: .catchUp, startMilliseconds: 5, endMilliseconds: Self.t0 + 877).absoluteQuery
                == "start=0.005&end=1795416546.000")
    }
}
