import Foundation
import HLSPackaging
import LiveTimeline
import MicroHTTPD
import OriginCore
import TestSupport
import Testing

@testable import OriginServer

/// CMSD on every answer and CMCD counted per channel, over real HTTP (docs/cmsd-cmcd.md).
@Suite("CMSD and CMCD on the routes", .offThePool)
struct CMSDCMCDRouteTests {
    static let id = #"n="hlsorigin""#

    @Test func everyAnswerTypeCarriesItsObjectAndStreamType() throws {
        let stack = try OriginTestStack()
        try stack.slots(3)
        let expected: [(String, String)] = [
            ("/live/ch/index.m3u8", "\(Self.id),ot=m,sf=h,st=l"),
            ("/live/ch/360p/index.m3u8", "\(Self.id),ot=m,sf=h,st=l"),
            ("/live/ch/360p/1.ts", "\(Self.id),ot=av,sf=h,st=l"),  // H.264 and AAC in one TS
            ("/live/ch/360p/99.ts", "\(Self.id),ot=av,sf=h,st=l"),  // the 404 of a segment URL
            ("/live/ch/360p/1.2.ts", "\(Self.id),ot=av,sf=h,st=l"),  // a part URL on a regular rendition: 404
            ("/live/ch/key-1.key", "\(Self.id),ot=k,sf=h,st=l"),  // no encryption: 404
            ("/live/ch/other.txt", "\(Self.id),ot=o,sf=h,st=l"),
            ("/live/nope/index.m3u8", "\(Self.id),ot=m,sf=h,st=l"),
            ("/live/ch/nope/1.ts", "\(Self.id),sf=h,st=l"),  // unknown rendition: the type is unknown, left out
            ("/vod/nope/index.m3u8", "\(Self.id),ot=m,sf=h,st=v"),
            ("/vod/nope/360p/1.ts", "\(Self.id),sf=h,st=v"),  // unknown recording: its tracks are unknown
            ("/live/ch/index.m3u8?start=-600&end=-60", "\(Self.id),ot=m,sf=h,st=v"),  // catch-up
            ("/live/ch/360p/index.m3u8?start=-600", "\(Self.id),ot=m,sf=h,st=l"),  // start-over
            ("/live/ch/index.m3u8?start=x&end=-60", "\(Self.id),ot=m,sf=h,st=l"),  // malformed: 400
            ("/metrics", "\(Self.id),ot=o"),
            ("/healthz", "\(Self.id),ot=o"),
            ("/nowhere", "\(Self.id),ot=o"),
        ]
        for (path, value) in expected {
            // Twice: the second plain GET of a /live answer comes from the thread's prepared answers.
            for round in 0..<2 {
                let answer = try stack.get(path)
                #expect(answer.headerValues("CMSD-Static") == [value], "\(path) \(round): \(answer.status)")
                #expect(answer.header("CMSD-Dynamic") == nil, "\(path)")
            }
        }
        let gzipped = try stack.get("/live/ch/360p/index.m3u8", headers: [("Accept-Encoding", "gzip")])
        #expect(gzipped.header("Content-Encoding") == "gzip")
        #expect(gzipped.header("CMSD-Static") == "\(Self.id),ot=m,sf=h,st=l")
        let head = try stack.request("HEAD", "/live/ch/360p/2.ts")
        #expect(head.header("CMSD-Static") == "\(Self.id),ot=av,sf=h,st=l")
        let ranged = try stack.get("/live/ch/360p/2.ts", headers: [("Range", "bytes=0-99")])
        #expect(ranged.status == 206)
        #expect(ranged.header("CMSD-Static") == "\(Self.id),ot=av,sf=h,st=l")
        let push = try stack.push("360p", stack.nextSegment("360p"))
        #expect(push.header("CMSD-Static") == "\(Self.id),ot=o")
    }

    @Test func theOriginIdComesFromTheConfigurationAndOffMeansNone() throws {
        let named = try OriginTestStack { $0.delivery.originID = "edge \"7\"" }
        try named.slots(1)
        #expect(try named.get("/live/ch/360p/index.m3u8").header("CMSD-Static") == #"n="edge \"7\"",ot=m,sf=h,st=l"#)

        let off = try OriginTestStack { $0.delivery.cmsd = false }
        try off.slots(2)
        for path in ["/live/ch/index.m3u8", "/live/ch/360p/index.m3u8", "/live/ch/360p/0.ts", "/live/ch/360p/9.ts", "/metrics"]
        {
            for _ in 0..<2 {
                let answer = try off.get(path)
                #expect(answer.header("CMSD-Static") == nil, "\(path)")
                #expect(answer.header("CMSD-Dynamic") == nil, "\(path)")
            }
        }
    }

    @Test func aCatchUpListingIsVODAndAStartOverIsLive() {
        let now: Int64 = 1_800_000_000_000
        func request(_ query: [(String, String?)]) -> DVRQuery? {
            (try? DVRQuery.parse(query.map { ($0.0, $0.1) })) ?? nil
        }
        #expect(OriginHTTPHandler.isCatchUp(request([("start", "-600"), ("end", "-60")]), now: now))
        #expect(OriginHTTPHandler.isCatchUp(request([("start", "1799999000"), ("end", "1799999500")]), now: now))
        #expect(!OriginHTTPHandler.isCatchUp(request([("start", "-600")]), now: now))
        #expect(!OriginHTTPHandler.isCatchUp(request([("start", "1799999000"), ("end", "1800000500")]), now: now))
        #expect(!OriginHTTPHandler.isCatchUp(request([("start", "x"), ("end", "-1")]), now: now))
    }

    @Test func aHeldBlockingReloadSaysHowLongItWasHeld() throws {
        let stack = try LowLatencyChannelServingTests.lowLatencyStack()
        for _ in 0..<3 { try stack.slot(chunkSize: 1316) }
        let hint = try #require(
            LowLatencyChannelServingTests.edge(try stack.playlistText("360p")).hint.flatMap {
                OriginHTTPHandler.partName($0)?.position
            })
        let path = "/live/ch/360p/index.m3u8?_HLS_msn=\(hint.msn)&_HLS_part=\(hint.part)"
        let requests: [[(String, String)]] = [[], [], [("Accept-Encoding", "gzip")], [("If-None-Match", "\"x\"")]]
        let waiting = try requests.map { headers in
            let connection = try RawHTTPConnection(port: stack.port, timeout: .seconds(5))
            try connection.send(RawHTTPConnection.requestBytes("GET", path, headers: headers))
            return connection
        }
        let channel = try #require(stack.origin.channel(named: "ch"))
        try waitUntil("the reloads wait") { channel.lowLatencyServing.waitingReloads == requests.count }
        try stack.slot(chunkSize: 1316)  // 2 s of the manual clock pass before the part is listed
        for (index, connection) in waiting.enumerated() {
            let answer = try connection.readResponse()
            #expect(answer.status == 200, "\(index)")
            #expect(answer.headerValues("CMSD-Static") == ["ht=2000,\(Self.id),ot=m,sf=h,st=l"], "\(index)")
            #expect(answer.headerValues("CMSD-Dynamic") == [#""hlsorigin";rd=2000"#], "\(index)")
        }
        // Answered at once: no held time.
        let now = try stack.get(path)
        #expect(now.header("CMSD-Static") == "\(Self.id),ot=m,sf=h,st=l")
        #expect(now.header("CMSD-Dynamic") == nil)
        let part = try stack.get("/live/ch/360p/\(hint.msn).\(hint.part).ts")
        #expect(part.status == 200)
        #expect(part.header("CMSD-Static") == "\(Self.id),ot=av,sf=h,st=l")
    }

    @Test func cmcdFromQueryAndHeadersIsCountedPerChannel() throws {
        let stack = try OriginTestStack()
        try stack.slots(3)
        let cmcd = #"bl=2500,br=800,cid="ch",mtp=4000,ot=m,sf=h,sid="session-a",st=l,su"#
        let encoded = try #require(cmcd.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        #expect(try stack.get("/live/ch/360p/index.m3u8?CMCD=\(encoded)").status == 200)
        #expect(try stack.get("/live/ch/360p/1.ts?CMCD=\(encoded)").status == 200)
        // Headers on a plain GET (no query): counted too, although such a GET is otherwise answered before routing.
        for _ in 0..<2 {
            let answer = try stack.get(
                "/live/ch/360p/2.ts",
                headers: [("CMCD-Request", "bl=40000,mtp=120000"), ("CMCD-Session", #"sid="session-b""#), ("CMCD-Status", "bs")])
            #expect(answer.status == 200)
        }
        // Malformed and unknown channels: not counted, never echoed.
        #expect(try stack.get("/live/ch/360p/index.m3u8?CMCD=bl%3D%22x").status == 200)
        #expect(try stack.get("/live/zz/360p/index.m3u8?CMCD=\(encoded)").status == 404)
        let metrics = try stack.get("/metrics").text
        for line in [
            "hlsorigin_cmcd_requests_total{channel=\"ch\"} 4",
            "hlsorigin_cmcd_sessions{channel=\"ch\"} 2",
            "hlsorigin_cmcd_buffer_starvations_total{channel=\"ch\"} 2",
            "hlsorigin_cmcd_buffer_length_seconds_bucket{channel=\"ch\",le=\"2\"} 0",
            "hlsorigin_cmcd_buffer_length_seconds_bucket{channel=\"ch\",le=\"4\"} 2",
            "hlsorigin_cmcd_buffer_length_seconds_bucket{channel=\"ch\",le=\"30\"} 2",
            "hlsorigin_cmcd_buffer_length_seconds_bucket{channel=\"ch\",le=\"60\"} 4",
            "hlsorigin_cmcd_buffer_length_seconds_bucket{channel=\"ch\",le=\"+Inf\"} 4",
            "hlsorigin_cmcd_buffer_length_seconds_sum{channel=\"ch\"} 85",
            "hlsorigin_cmcd_buffer_length_seconds_count{channel=\"ch\"} 4",
            "hlsorigin_cmcd_measured_throughput_bytes_per_second_bucket{channel=\"ch\",le=\"500000\"} 2",
            "hlsorigin_cmcd_measured_throughput_bytes_per_second_bucket{channel=\"ch\",le=\"12500000\"} 2",
            "hlsorigin_cmcd_measured_throughput_bytes_per_second_bucket{channel=\"ch\",le=\"+Inf\"} 4",
            "hlsorigin_cmcd_measured_throughput_bytes_per_second_sum{channel=\"ch\"} 31000000",
            "# TYPE hlsorigin_cmcd_buffer_length_seconds histogram",
            "# TYPE hlsorigin_cmcd_sessions gauge",
        ] {
            #expect(metrics.contains(line + "\n"), "\(line)")
        }
        #expect(!metrics.contains("zz"))
        #expect(!metrics.contains("session-a"))
    }

    @Test func cmcdOfARequestRefusedForItsPlaybackTokenIsNotCounted() throws {
        // A client without a valid token must not move the channel's CMCD figures (nor fill its session table).
        let stack = try PlaybackRoutesTests.stack()
        let cmcd = try #require(#"bl=2500,sid="refused""#.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        #expect(try stack.get("/live/ch/index.m3u8?CMCD=\(cmcd)").status == 403)
        #expect(try stack.get("/live/ch/index.m3u8?token=tomorrow&CMCD=\(cmcd)").status == 403)
        let accepted = try #require(#"bl=2500,sid="accepted""#.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        let token = PlaybackRoutesTests.token(stack)
        #expect(try stack.get("/live/ch/index.m3u8?token=\(token)&CMCD=\(accepted)").status == 200)
        let metrics = try stack.get("/metrics").text
        #expect(metrics.contains("hlsorigin_cmcd_requests_total{channel=\"ch\"} 1\n"))
        #expect(metrics.contains("hlsorigin_cmcd_sessions{channel=\"ch\"} 1\n"))
    }

    @Test func cmcdMetricsCanBeTurnedOff() throws {
        let stack = try OriginTestStack { $0.delivery.cmcdMetrics = false }
        try stack.slots(2)
        #expect(try stack.get("/live/ch/360p/index.m3u8?CMCD=bl%3D100").status == 200)
        #expect(!(try stack.get("/metrics").text.contains("hlsorigin_cmcd_requests_total{")))
    }

    @Test func theDeliverySectionIsReadAndChecked() throws {
        let configuration = try ConfigurationFile.parse(
            "delivery:\n  cmsd: false\n  originId: eu-west-a\n  cmcd:\n    metrics: false\n    log: true\n",
            source: "test.yaml")
        #expect(!configuration.delivery.cmsd)
        #expect(configuration.delivery.originID == "eu-west-a")
        #expect(!configuration.delivery.cmcdMetrics)
        #expect(configuration.delivery.cmcdLog)
        let defaults = try ConfigurationFile.parse("logLevel: info\n", source: "test.yaml").delivery
        #expect(defaults == DeliveryConfiguration())
        for bad in ["delivery:\n  originId: \"\"\n", "delivery:\n  originId: \"caf\u{e9}\"\n",
            "delivery:\n  originId: \(String(repeating: "a", count: 65))\n", "delivery:\n  cmsd: maybe\n",
            "delivery:\n  cmcd:\n    logs: true\n"]
        {
            #expect(throws: ConfigurationError.self, "\(bad)") { try ConfigurationFile.parse(bad, source: "test.yaml") }
        }
    }
}
