import Foundation
import HLSPackaging
import LiveTimeline
import MicroHTTPD
import OriginCore
import SharedBytes
import TestSupport
import Testing

@testable import OriginServer

/// Content Steering's configuration (checked strictly), the steered multivariant playlist, the steering manifest
/// route and the health report peers read (docs/content-steering.md).
@Suite("Content Steering: configuration, playlist and routes", .offThePool)
struct ContentSteeringTests {
    static let group = """
        redundancy:
          peers: [http://10.0.0.2:8080]
        steering:
          self: http://10.0.0.1:8080/
          ttl: 6
          pathways:
            - {id: origin-a, uri: "http://10.0.0.1:8080", origins: [http://10.0.0.1:8080]}
            - {id: origin-b, uri: "http://10.0.0.2:8080/", origins: [http://10.0.0.2:8080]}
            - {id: cdn, uri: "https://cdn.example/hls", origins: [http://10.0.0.1:8080, http://10.0.0.2:8080]}

        """

    @Test func everyChannelIsSteeredUnlessItSaysNot() throws {
        let configuration = try ConfigurationFile.parse(
            Self.group + """
                ingest: {autoCreate: true}
                channels:
                  - {name: news}
                  - {name: sport, steering: false}
                """, environment: [:])
        let steering = try #require(configuration.steering)
        #expect(steering.ttlSeconds == 6)
        #expect(steering.selfURL == "http://10.0.0.1:8080")
        #expect(
            steering.pathways == [
                .init(id: "origin-a", baseURI: "http://10.0.0.1:8080", origins: ["http://10.0.0.1:8080"]),
                .init(id: "origin-b", baseURI: "http://10.0.0.2:8080", origins: ["http://10.0.0.2:8080"]),
                .init(
                    id: "cdn", baseURI: "https://cdn.example/hls",
                    origins: ["http://10.0.0.1:8080", "http://10.0.0.2:8080"]),
            ])
        #expect(configuration.origin.channels.map { $0.steering != nil } == [true, false])
        #expect(configuration.origin.ingest.autoCreatedChannel.steering == steering)
        let off = try ConfigurationFile.parse(
            Self.group.replacingOccurrences(of: "ttl: 6", with: "ttl: 6\n  enabled: false") + "channels: [{name: n}]",
            environment: [:])
        #expect(off.steering == nil && off.origin.channels[0].steering == nil)
        #expect(steering.reloadBaseURI == nil)
        let withBase = try ConfigurationFile.parse(
            Self.group.replacingOccurrences(of: "ttl: 6", with: "ttl: 6\n  reloadBase: https://edge.example/hls/")
                + "channels: [{name: n}]", environment: [:])
        #expect(withBase.steering?.reloadBaseURI == "https://edge.example/hls")
    }

    @Test(arguments: [
        ("ttl: 6", "ttl: 0", "steering.ttl must be 1-3600 seconds (got 0)"),
        ("id: cdn,", "id: \"c dn\",", "steering.pathways[2].id 'c dn' must be 1 to 64 of A-Z a-z 0-9 . - _"),
        ("id: cdn,", "id: origin-a,", "steering.pathways[2].id 'origin-a' is given twice"),
        ("https://cdn.example/hls", "https://cdn.example/hls?x=1", "may hold no query"),
        ("https://cdn.example/hls", "ftp://cdn.example", "must start with http:// or https://"),
        (
            "https://cdn.example/hls", "http://10.0.0.2:8080",
            "steering.pathways[2].uri 'http://10.0.0.2:8080' is another pathway's"
        ),
        (
            "origins: [http://10.0.0.1:8080, http://10.0.0.2:8080]", "origins: [http://10.0.0.9:8080]",
            "'http://10.0.0.9:8080' is neither steering.self nor one of redundancy.peers"
        ),
        (
            "self: http://10.0.0.1:8080/", "self: http://10.0.0.2:8080",
            "steering.self: 'http://10.0.0.2:8080' is one of redundancy.peers"
        ),
        (
            "self: http://10.0.0.1:8080/", "self: https://10.0.0.1",
            "steering.self: 'https://10.0.0.1' is not an http://host[:port] URL"
        ),
        ("ttl: 6", "ttl: 6\n  colour: red", "colour"),
        ("ttl: 6", "ttl: 6\n  reloadBase: edge.example", "steering.reloadBase 'edge.example' must start with http://"),
    ])
    func aBadSteeringBlockIsRefusedWithItsReason(original: String, replacement: String, reason: String) {
        let text = Self.group.replacingOccurrences(of: original, with: replacement)
        #expect(text != Self.group)
        #expect {
            try ConfigurationFile.parse(text, environment: [:])
        } throws: { error in
            "\(error)".contains(reason)
        }
    }

    @Test func noPathwaysOrTooManyAreRefused() {
        #expect(throws: (any Error).self) {
            try ConfigurationFile.parse("steering: {pathways: []}", environment: [:])
        }
        let nine = (1...9).map { "    - {id: p\($0), uri: \"http://h\($0)\"}" }.joined(separator: "\n")
        #expect {
            try ConfigurationFile.parse("steering:\n  pathways:\n" + nine + "\n", environment: [:])
        } throws: { error in
            "\(error)".contains("at most 8")
        }
    }

    static let steering = ContentSteeringConfiguration(
        pathways: [
            .init(id: "origin-a", baseURI: "http://10.0.0.1:8080", origins: ["http://10.0.0.1:8080"]),
            .init(id: "origin-b", baseURI: "http://10.0.0.2:8080", origins: ["http://10.0.0.2:8080"]),
        ], ttlSeconds: 3, selfURL: "http://10.0.0.1:8080")

    /// The route table's harness with channel `ch` steered (and `plain`, not steered), one slot pushed.
    static func steeredHarness() throws -> RouteTableTests.Harness {
        let harness = try RouteTableTests.Harness { configuration in
            configuration.steering = steering
            configuration.origin.channels[0].steering = steering
            configuration.origin.channels.append(
                ChannelConfiguration(name: "plain", renditions: [RenditionConfiguration(name: "360p")]))
        }
        try harness.pushSlot(file: "0.ts")
        return harness
    }

    static func get(
        _ harness: RouteTableTests.Harness, _ path: String, _ query: [(String, String?)] = []
    ) throws
        -> HTTPResponse
    {
        let head = HTTPRequestHead(
            method: "GET", path: path, query: query.map { (name: $0.0, value: $0.1) }, remoteAddress: "192.0.2.7")
        switch harness.handler.handle(head) {
        case .respond(let response): return response
        case .respondPrepared(let prepared): return prepared.response
        default:
            Issue.record("\(path) was not answered at once")
            throw CancellationError()
        }
    }

    @Test func theMultivariantPlaylistListsEveryVariantPerPathway() throws {
        let harness = try Self.steeredHarness()
        let text = try Self.get(harness, "/live/ch/index.m3u8").text
        let lines = text.split(separator: "\n")
        #expect(lines.contains(#"#EXT-X-CONTENT-STEERING:SERVER-URI="steering.json",PATHWAY-ID="origin-a""#))
        let variants = lines.filter { $0.hasPrefix("#EXT-X-STREAM-INF:") }
        #expect(variants.count == 4)
        #expect(variants.filter { $0.hasSuffix(#"PATHWAY-ID="origin-a""#) }.count == 2)
        #expect(variants.filter { $0.hasSuffix(#"PATHWAY-ID="origin-b""#) }.count == 2)
        #expect(lines.contains("http://10.0.0.2:8080/live/ch/360p/index.m3u8"))
        // Time-shift keeps the plain form; a channel without steering has none.
        #expect(try !Self.get(harness, "/live/plain/index.m3u8").text.contains("PATHWAY-ID"))
        let plain = try #require(harness.origin.channel(named: "ch")?.snapshot.multivariantPlaylist)
        #expect(!String(decoding: plain.array, as: UTF8.self).contains("PATHWAY-ID"))
    }

    @Test func theSteeringManifestRouteAnswersJSONOr400Or404() throws {
        let harness = try Self.steeredHarness()
        let answer = try Self.get(
            harness, "/live/ch/steering.json", [("_HLS_pathway", "origin-b"), ("_HLS_throughput", "2400000")])
        #expect(answer.status == 200)
        #expect(answer.headers["Content-Type"] == "application/json")
        #expect(answer.headers["Cache-Control"] == "no-cache")
        #expect(
            answer.text
                == #"{"VERSION":1,"TTL":3,"RELOAD-URI":"http://10.0.0.1:8080/live/ch/steering.json?steered=origin-b","PATHWAY-PRIORITY":["origin-b","origin-a"]}"#
                + "\n")
        // A malformed throughput (hls.js overflows to a negative one above 2.147 Gbit/s) is ignored; a bad pathway is not.
        let negative = try Self.get(
            harness, "/live/ch/steering.json", [("_HLS_pathway", "origin-b"), ("_HLS_throughput", "-2147483648")])
        #expect(negative.status == 200 && negative.text == answer.text)
        let bad = try Self.get(harness, "/live/ch/steering.json", [("_HLS_pathway", "a b")])
        #expect(bad.status == 400)
        #expect(bad.text.contains("_HLS_pathway must be a Pathway ID"))
        let twice = try Self.get(harness, "/live/ch/steering.json", [("_HLS_pathway", "a"), ("_HLS_pathway", "b")])
        #expect(twice.status == 400 && twice.text.contains("_HLS_pathway is given twice"))
        let unsteered = try Self.get(harness, "/live/plain/steering.json")
        #expect(unsteered.status == 404 && unsteered.text.contains("not steered"))
        #expect(try Self.get(harness, "/live/nope/steering.json").status == 404)
    }

    @Test func peersReadEachChannelsOwnJudgement() throws {
        let harness = try Self.steeredHarness()
        let answer = try Self.get(harness, "/peer/health")
        #expect(answer.status == 200)
        let report = try JSONDecoder().decode(OriginHealthReportShape.self, from: Data(answer.text.utf8))
        #expect(report.channels["ch"]?.state == "healthy")
        // The route is open: a channel that is not steered is not listed.
        #expect(report.channels["plain"] == nil)
        // Nothing new for longer than 1.5 target durations: stale, without the reason.
        harness.clock.advance(seconds: 3.5)
        let later = try JSONDecoder().decode(
            OriginHealthReportShape.self, from: Data(try Self.get(harness, "/peer/health").text.utf8))
        #expect(later.channels["ch"]?.state == "stale")
        #expect(later.channels["ch"]?.reason == nil)
    }

    @Test func aReportOutlivesOneMissedReadOfAPeer() {
        // The longest gap between two reads of a peer: the pause, then a connect and an answer each up to the timeout
        // (the round gives up on a read that outlives them by the margin).
        let longestRound =
            SteeringHealthMonitor.interval + SteeringHealthMonitor.requestTimeout * 2
            + SteeringHealthMonitor.deadlineMargin
        #expect(.milliseconds(ChannelHealthReport.lifetimeMilliseconds) >= longestRound * 2)
    }

    /// The JSON of `GET /peer/health`, read as a peer reads it.
    struct OriginHealthReportShape: Decodable {
        struct Channel: Decodable {
            var state: String
            var reason: String?
        }
        var origin: String
        var channels: [String: Channel]
    }
}
