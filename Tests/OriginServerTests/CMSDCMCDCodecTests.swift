import MicroHTTPD
import SharedBytes
import TestSupport
import Testing

@testable import OriginServer

/// The RFC 8941 codec under CMCD (read) and CMSD (written): strict parsing, bounds, round trips.
@Suite("CMSD and CMCD codecs", .offThePool)
struct CMSDCMCDCodecTests {
    typealias SF = StructuredField

    @Test func aDictionaryOfEveryItemTypeParses() throws {
        let members = try #require(
            SF.parseDictionary(#"bl=21300, br=3200,bs,cid="faec5fc2",d=4004.5 ,ot=v;x=?0,pr=-1.25,b=:AQID:,l=(1 "a");q"#)
        )
        let values = Dictionary(uniqueKeysWithValues: members.map { ($0.key, $0.value) })
        #expect(values["bl"] == .item(.init(value: .integer(21300))))
        #expect(values["br"] == .item(.init(value: .integer(3200))))
        #expect(values["bs"] == .item(.init(value: .boolean(true))))
        #expect(values["cid"] == .item(.init(value: .string("faec5fc2"))))
        #expect(values["d"] == .item(.init(value: .decimal(thousandths: 4_004_500))))
        #expect(values["ot"] == .item(.init(value: .token("v"), parameters: [("x", .boolean(false))])))
        #expect(values["pr"] == .item(.init(value: .decimal(thousandths: -1250))))
        #expect(values["b"] == .item(.init(value: .byteSequence("AQID"))))
        #expect(
            values["l"]
                == .innerList([.init(value: .integer(1)), .init(value: .string("a"))], parameters: [("q", .boolean(true))]))
        #expect(members.map(\.key) == ["bl", "br", "bs", "cid", "d", "ot", "pr", "b", "l"])
    }

    @Test func aRepeatedKeyTakesTheLastValueInTheFirstPlace() throws {
        let members = try #require(SF.parseDictionary("a=1,b=2,a=3"))
        #expect(members.map(\.key) == ["a", "b"])
        #expect(members[0].value == .item(.init(value: .integer(3))))
    }

    @Test func malformedFieldsAreRefusedWhole() {
        for text in [
            "A=1",  // uppercase key
            "bl=",  // no value
            "bl=1,",  // trailing comma
            ",bl=1",  // leading comma
            "bl=1,,br=2",
            "bl=1 br=2",  // no comma
            "bl=1234567890123456",  // 16 digits
            "d=1234567890123.5",  // 13 integer digits in a decimal
            "d=1.2345",  // 4 fractional digits
            "d=1.",
            "d=--1",
            "sid=\"abc",  // unterminated
            "sid=\"a\\b\"",  // bad escape
            "sid=\"caf\u{e9}\"",  // not ASCII
            "sid=\"a\tb\"",  // control character
            "x=?2",
            "x=:AQ!D:",
            "x=(1 2",
            "x=(1,2)",
            "x=@",
            "x=1;",
            "x=1;Y=2",
            "\u{0}",
        ] {
            #expect(SF.parseDictionary(text) == nil, "\(text)")
        }
    }

    @Test func fieldsBeyondTheBoundsAreRefused() {
        let long = "sid=\"" + String(repeating: "a", count: SF.maximumFieldBytes) + "\""
        #expect(SF.parseDictionary(long) == nil)
        let many = (0...SF.maximumMembers).map { "k\($0)=1" }.joined(separator: ",")
        #expect(SF.parseDictionary(many) == nil)
        let enough = (0..<SF.maximumMembers).map { "k\($0)=1" }.joined(separator: ",")
        #expect(SF.parseDictionary(enough)?.count == SF.maximumMembers)
        // Extreme numbers parse without trapping.
        #expect(
            SF.parseDictionary("a=-999999999999999,b=999999999999.999")?.map(\.value) == [
                .item(.init(value: .integer(-999_999_999_999_999))),
                .item(.init(value: .decimal(thousandths: 999_999_999_999_999))),
            ])
    }

    @Test func stringsSerializeWithEscapesAndParseBack() throws {
        for value in ["hlsorigin", "a \"quoted\" \\ name", "", "edge-1.example.com"] {
            let serialized = try #require(SF.serializeString(value))
            let members = try #require(SF.parseDictionary("n=" + serialized))
            #expect(members.first?.value == .item(.init(value: .string(value))), "\(value)")
        }
        #expect(SF.serializeString("caf\u{e9}") == nil)
        #expect(SF.serializeString("a\nb") == nil)
    }

    // MARK: - CMSD

    @Test func cmsdStaticValuesAreDictionariesWithTheSpecKeys() throws {
        let cmsd = try #require(CMSDHeaders(originID: "origin \"a\""))
        #expect(cmsd.staticValue(.manifest, .live) == #"n="origin \"a\"",ot=m,sf=h,st=l"#)
        #expect(cmsd.staticValue(.muxed, .vod) == #"n="origin \"a\"",ot=av,sf=h,st=v"#)
        #expect(cmsd.staticValue(.other, nil) == #"n="origin \"a\"",ot=o"#)
        #expect(cmsd.staticValue(nil, .live) == #"n="origin \"a\"",sf=h,st=l"#)
        #expect(cmsd.heldStaticValue(.live, heldMilliseconds: 1200) == #"ht=1200,n="origin \"a\"",ot=m,sf=h,st=l"#)
        #expect(cmsd.heldDynamicValue(heldMilliseconds: 1200) == #""origin \"a\"";rd=1200"#)
        // Every value parses back as a Dictionary (Static) with the object and stream types as tokens.
        for object in CMSDObjectType.allCases {
            for stream in CMSDStreamType.allCases {
                let members = try #require(SF.parseDictionary(cmsd.staticValue(object, stream)))
                let values = Dictionary(uniqueKeysWithValues: members.map { ($0.key, $0.value) })
                #expect(values["ot"] == .item(.init(value: .token(object.rawValue))))
                #expect(values["st"] == .item(.init(value: .token(stream.rawValue))))
                #expect(values["sf"] == .item(.init(value: .token("h"))))
                #expect(values["n"] == .item(.init(value: .string("origin \"a\""))))
            }
        }
        #expect(CMSDHeaders(originID: "bad\u{1}") == nil)
    }

    @Test func heldTimesAreRoundedDownToTwoSignificantDigits() {
        #expect(CMSDHeaders.roundedHeldTime(-5) == 0)
        #expect(CMSDHeaders.roundedHeldTime(7) == 7)
        #expect(CMSDHeaders.roundedHeldTime(99) == 99)
        #expect(CMSDHeaders.roundedHeldTime(1234) == 1200)
        #expect(CMSDHeaders.roundedHeldTime(2000) == 2000)
        #expect(CMSDHeaders.roundedHeldTime(5999) == 5900)
        #expect(CMSDHeaders.roundedHeldTime(.max) > 0)
    }

    /// The waiters one publish releases share a prepared answer per rounded held time: every rounded time under
    /// 100 s has its own (before, the 257th distinct time of a playlist version went without `ht`).
    @Test func everyHeldTimeUnderOneHundredSecondsHasItsOwnSharedAnswer() throws {
        let responses = PlaylistResponses(bytes: SharedBytes(string: "#EXTM3U\n"), order: 1, modifiedMilliseconds: 0)
        let rounded = Set((0..<100_000).map { CMSDHeaders.roundedHeldTime(Int64($0)) }).sorted()
        #expect(rounded.count == 370)
        var made: [ObjectIdentifier] = []
        for held in rounded {
            for gzip in [false, true] {
                let form = try #require(
                    responses.preparedHeld(gzip: gzip, heldMilliseconds: held) {
                        PreparedResponse(.text(200, "\(held) \(gzip)\n"))
                    }, "held \(held) ms, gzip \(gzip)")
                #expect(form.response.headers.contains("Content-Type"))
                let again = responses.preparedHeld(gzip: gzip, heldMilliseconds: held) {
                    Issue.record("held \(held) ms made twice")
                    return PreparedResponse(.text(200, "again\n"))
                }
                #expect(again === form)
                made.append(ObjectIdentifier(form))
            }
        }
        #expect(Set(made).count == 2 * rounded.count)
        #expect(responses.preparedHeld(gzip: false, heldMilliseconds: 100_000) { PreparedResponse(.text(200, "")) } == nil)
    }

    // MARK: - CMCD

    static func request(query: [(String, String?)] = [], headers: HTTPHeaders = [:]) -> HTTPRequestHead {
        HTTPRequestHead(method: "GET", path: "/live/ch/360p/1.ts", query: query.map { ($0.0, $0.1) }, headers: headers)
    }

    @Test func cmcdIsReadFromTheQueryArgumentAsHlsJsSendsIt() throws {
        // hls.js 1.6: keys sorted, one `CMCD` argument (decoded here as the server hands it over).
        let report = try #require(
            CMCDReport(
                Self.request(query: [
                    ("CMCD", #"bl=21300,br=3200,bs,cid="movie",d=4004,mtp=25400,ot=av,sf=h,sid="6e2fb550",st=v,su,tb=6000"#)
                ])))
        #expect(report.bufferLengthMilliseconds == 21300)
        #expect(report.measuredThroughputKbps == 25400)
        #expect(report.encodedBitrateKbps == 3200)
        #expect(report.bufferStarvation)
        #expect(report.startup)
        #expect(report.sessionID == "6e2fb550")
        #expect(report.contentID == "movie")
        #expect(report.objectType == "av")
        #expect(report.streamType == "v")
    }

    @Test func cmcdIsReadFromItsFourHeaders() throws {
        let report = try #require(
            CMCDReport(
                Self.request(headers: [
                    "CMCD-Request": "bl=1500,mtp=800", "cmcd-session": #"sid="s1",sf=h"#, "CMCD-Status": "bs",
                    "CMCD-Object": "br=500,ot=v", "CMCD-Other": "bl=99",
                ])))
        #expect(report.bufferLengthMilliseconds == 1500)
        #expect(report.measuredThroughputKbps == 800)
        #expect(report.sessionID == "s1")
        #expect(report.bufferStarvation)
        #expect(report.encodedBitrateKbps == 500)
        #expect(report.objectType == "v")
    }

    @Test func badCMCDIsIgnoredNeverKept() {
        // Fields that do not parse are ignored whole; keys of the wrong type or range alone.
        #expect(CMCDReport(Self.request(query: [("CMCD", "bl=1,")])) == nil)
        #expect(CMCDReport(Self.request(query: [("CMCD", nil)])) == nil)
        #expect(CMCDReport(Self.request(headers: ["CMCD-Request": "bl=\"<script>\""])) == nil)
        #expect(CMCDReport(Self.request(headers: ["CMCD-Request": "bl=-5,mtp=1.5"])) == nil)
        let long = String(repeating: "x", count: CMCDReport.maximumIdentifierLength + 1)
        #expect(CMCDReport(Self.request(query: [("CMCD", "sid=\"\(long)\"")])) == nil)
        #expect(CMCDReport(Self.request(query: [("CMCD", "ot=zz,st=q,bs=?0")])) == nil)
        let partly = CMCDReport(Self.request(query: [("CMCD", "bl=2000,sid=7,mtp=\"fast\"")]))
        #expect(partly?.bufferLengthMilliseconds == 2000)
        #expect(partly?.sessionID == nil)
        #expect(partly?.measuredThroughputKbps == nil)
        #expect(CMCDReport(Self.request(query: [("cmcd", "bl=1")])) == nil, "the argument name is CMCD")
    }

    @Test func theLoggedCMCDHoldsOnlyCheckedValues() throws {
        let report = try #require(
            CMCDReport(
                Self.request(query: [("CMCD", #"bl=1200,bs,sid="s-1",mtp="x",zz=9,ot=av"#)], headers: ["CMCD-Status": "bs,rtp=(1 2)"])))
        let logged = report.logMetadata.mapValues { "\($0)" }
        #expect(logged == ["cmcd.bl": "1200", "cmcd.bs": "true", "cmcd.sid": #""s-1""#, "cmcd.ot": "av"])
    }

    @Test func aLoggedSessionIdCannotForgeKeyValuePairs() throws {
        let report = try #require(
            CMCDReport(Self.request(query: [("CMCD", #"sid="x channel=other cmcd.bs=true \"q\"",cid="a b""#)])))
        let logged = report.logMetadata.mapValues { "\($0)" }
        #expect(logged["cmcd.sid"] == #""x channel=other cmcd.bs=true \"q\"""#)
        #expect(logged["cmcd.cid"] == #""a b""#)
    }

    @Test func histogramsAreCumulativeInBaseUnits() {
        var histogram = FixedHistogram(bounds: [100, 1000])
        for value: Int64 in [50, 100, 500, 5000, .max] { histogram.observe(value) }
        let text = histogram.lines("x_seconds", labels: "channel=\"c\"", format: CMCDStatistics.seconds)
        #expect(
            text == """
                x_seconds_bucket{channel="c",le="0.1"} 2
                x_seconds_bucket{channel="c",le="1"} 3
                x_seconds_bucket{channel="c",le="+Inf"} 5
                x_seconds_sum{channel="c"} 9223372036854775.807
                x_seconds_count{channel="c"} 5

                """)
        #expect(CMCDStatistics.seconds(1500) == "1.5")
        #expect(CMCDStatistics.seconds(60000) == "60")
        #expect(CMCDStatistics.seconds(1005) == "1.005")
        #expect(CMCDStatistics.bytesPerSecond(25400) == "3175000")
        #expect(CMCDStatistics.bytesPerSecond(.max) == "\(Int64.max)")
    }

    @Test func sessionsAreCountedOncePerIdWithinBoundedMemory() {
        let statistics = CMCDStatistics()
        var report = CMCDReport()
        for index in 0..<(CMCDStatistics.maximumSessions + 10) {
            report.sessionID = "s\(index % (CMCDStatistics.maximumSessions + 10))"
            statistics.count(report, channel: "ch", now: 1000)
            statistics.count(report, channel: "ch", now: 1000)
        }
        #expect(statistics.sessions(channel: "ch", now: 1000) == CMCDStatistics.maximumSessions)
        let text = statistics.exposition(channels: ["ch"], now: 1000)
        #expect(text.contains("hlsorigin_cmcd_untracked_requests_total{channel=\"ch\"} 20\n"))
        // Past the window the old ones expire and a new one is remembered again.
        let later = 1000 + CMCDStatistics.sessionWindowMilliseconds
        report.sessionID = "new"
        statistics.count(report, channel: "ch", now: later)
        #expect(statistics.sessions(channel: "ch", now: later) == 1)
        // A channel the origin no longer has is dropped.
        #expect(!statistics.exposition(channels: [], now: later).contains("channel=\"ch\""))
    }

    @Test func aFullSessionTableIsSweptOnlyWhenItsOldestSessionIsDue() {
        let statistics = CMCDStatistics()
        var report = CMCDReport()
        for index in 0..<CMCDStatistics.maximumSessions {
            report.sessionID = "old\(index)"
            statistics.count(report, channel: "ch", now: 1000)
        }
        // Thousands of new sessions against the full table: one pass over it (nothing had expired), not one each.
        for index in 0..<5000 {
            report.sessionID = "new\(index)"
            statistics.count(report, channel: "ch", now: 2000 + Int64(index))
        }
        #expect(statistics.sessionTable(channel: "ch").sweeps == 1)
        #expect(statistics.sessionTable(channel: "ch").remembered == CMCDStatistics.maximumSessions)
        #expect(statistics.exposition(channels: ["ch"], now: 7000).contains(
            "hlsorigin_cmcd_untracked_requests_total{channel=\"ch\"} 5000\n"))
        // Once the old ones are due they are removed, and new sessions are remembered again.
        let due = 1000 + CMCDStatistics.sessionWindowMilliseconds
        report.sessionID = "later"
        statistics.count(report, channel: "ch", now: due)
        #expect(statistics.sessionTable(channel: "ch") == (remembered: 1, sweeps: 2))
        #expect(statistics.sessions(channel: "ch", now: due) == 1)
    }
}
