import Foundation
import LiveTimeline
import TestSupport
import Testing

@testable import HLSPackaging

@Suite("Steering manifest", .offThePool)
struct SteeringManifestTests {
    static let steering = ContentSteeringConfiguration(
        pathways: [
            .init(id: "a", baseURI: "http://10.0.0.1:8080", origins: ["http://10.0.0.1:8080"]),
            .init(id: "b", baseURI: "http://10.0.0.2:8080", origins: ["http://10.0.0.2:8080"]),
            .init(id: "cdn", baseURI: "https://cdn.example/hls"),
        ], ttlSeconds: 4, selfURL: "http://10.0.0.1:8080")

    static func answer(_ health: [String: PathwayHealth], pathway: String? = nil) -> SteeringManifest {
        SteeringManifest.answer(steering, channel: "news", health: health, query: SteeringQuery(pathway: pathway))
    }

    @Test func healthyPathwaysKeepTheirOrderAndTheReloadGoesToTheNextHealthyOne() {
        let manifest = Self.answer([:])
        #expect(manifest.pathwayPriority == ["a", "b", "cdn"])
        #expect(manifest.reloadURI == "http://10.0.0.2:8080/live/news/steering.json?steered=a")
        #expect(manifest.ttlSeconds == 4)
    }

    @Test func unhealthyPathwaysMoveLastBySeverityThenConfiguredOrder() {
        let manifest = Self.answer(["a": .down("gone"), "b": .stale("late"), "cdn": .healthy])
        #expect(manifest.pathwayPriority == ["cdn", "b", "a"])
        // No healthy pathway after the first: the reload stays on the first.
        #expect(manifest.reloadURI == "https://cdn.example/hls/live/news/steering.json?steered=cdn")
        #expect(Self.answer(["a": .failing("catching up"), "b": .stale("late")]).pathwayPriority == ["cdn", "b", "a"])
        #expect(
            Self.answer(["a": .stale("x"), "b": .failing("y"), "cdn": .down("z")]).pathwayPriority == ["a", "b", "cdn"])
    }

    @Test func thePlayersPathwayLeadsOnlyWhileItIsHealthy() {
        #expect(Self.answer([:], pathway: "cdn").pathwayPriority == ["cdn", "a", "b"])
        // The player streams from cdn: its reload goes to another healthy pathway, a.
        #expect(
            Self.answer([:], pathway: "cdn").reloadURI == "http://10.0.0.1:8080/live/news/steering.json?steered=cdn")
        // On the first pathway: the reload goes elsewhere, so that a's failure leaves the player a steering server.
        #expect(Self.answer([:], pathway: "a").reloadURI == "http://10.0.0.2:8080/live/news/steering.json?steered=a")
        #expect(
            Self.answer(["a": .down("x")], pathway: "b").reloadURI
                == "https://cdn.example/hls/live/news/steering.json?steered=b")
        #expect(
            Self.answer(["a": .down("x"), "cdn": .stale("y")], pathway: "b").reloadURI
                == "http://10.0.0.2:8080/live/news/steering.json?steered=b")
        #expect(Self.answer(["cdn": .down("x")], pathway: "cdn").pathwayPriority == ["a", "b", "cdn"])
        // A pathway ID the channel does not have (hls.js sends "." before it knows one) changes nothing.
        #expect(Self.answer([:], pathway: ".").pathwayPriority == ["a", "b", "cdn"])
    }

    @Test func aPlayerThatFailedOverReloadsFromAnotherPathwayOnceTheFirstRecovers() {
        // The player fled a for b while a was down: it streams from b, its reload goes to cdn.
        let during = Self.answer(["a": .down("gone")], pathway: "b")
        #expect(during.pathwayPriority == ["b", "cdn", "a"])
        #expect(during.reloadURI == "https://cdn.example/hls/live/news/steering.json?steered=b")
        // a recovers: the player stays on b, and its steering server is not b (b's death must not strand it).
        let after = Self.answer([:], pathway: "b")
        #expect(after.pathwayPriority == ["b", "a", "cdn"])
        #expect(after.reloadURI == "http://10.0.0.1:8080/live/news/steering.json?steered=b")
        // Only b healthy: the reload stays on b, the one steering server left.
        #expect(
            Self.answer(["a": .down("x"), "cdn": .down("y")], pathway: "b").reloadURI
                == "http://10.0.0.2:8080/live/news/steering.json?steered=b")
    }

    @Test func aPlayerThatHasJustFledAPathwayIsNotSentBackThereToReload() {
        // a was killed: its last report still counts it healthy, but this origin's last read of it failed.
        func answer(_ health: [String: PathwayHealth]) -> SteeringManifest {
            SteeringManifest.answer(
                Self.steering, channel: "news", health: health, query: SteeringQuery(pathway: "b"), unconfirmed: ["a"])
        }
        #expect(answer([:]).pathwayPriority == ["b", "a", "cdn"])
        #expect(answer([:]).reloadURI == "https://cdn.example/hls/live/news/steering.json?steered=b")
        #expect(answer(["cdn": .down("x")]).reloadURI == "http://10.0.0.2:8080/live/news/steering.json?steered=b")
    }

    /// The next request a player sends for `manifest`, as hls.js builds it: the RELOAD-URI's own arguments, with
    /// `_HLS_pathway` set to the pathway it streams from now.
    static func reload(_ manifest: SteeringManifest, streamingFrom pathway: String) throws -> SteeringQuery {
        let components = try #require(URLComponents(string: manifest.reloadURI))
        let own = (components.queryItems ?? []).filter { $0.name != "_HLS_pathway" }
            .map { (name: $0.name, value: $0.value) }
        return try SteeringQuery(query: own + [(name: "_HLS_pathway", value: pathway)])
    }

    @Test func aPlayerThatFledThePathwayItWasSentToIsNotSentBackThereToReloadBeforeItsDeathIsRead() throws {
        // Two origins, no CDN. The player streams from a, its reloads go to b.
        var steering = Self.steering
        steering.pathways.removeLast()
        let before = SteeringManifest.answer(steering, channel: "news", health: [:], query: SteeringQuery(pathway: "a"))
        #expect(before.pathwayPriority == ["a", "b"])
        #expect(before.reloadURI.hasPrefix("http://10.0.0.2:8080/live/news/steering.json"))
        // a is killed; hls.js's own error handling moves the player to b at once, before b has read a since: a's
        // reports still count it healthy and b's last read of it succeeded (nothing unconfirmed). Sending the player
        // back to a for its reloads would leave it without a steering server for good.
        let fled = SteeringManifest.answer(
            steering, channel: "news", health: [:], query: try Self.reload(before, streamingFrom: "b"))
        #expect(fled.pathwayPriority == ["b", "a"])
        #expect(fled.reloadURI.hasPrefix("http://10.0.0.2:8080/live/news/steering.json"), "\(fled.reloadURI)")
        // With a third pathway, the reload goes there.
        let three = Self.answer([:], pathway: "a")
        let fledOfThree = SteeringManifest.answer(
            Self.steering, channel: "news", health: [:], query: try Self.reload(three, streamingFrom: "b"))
        #expect(fledOfThree.reloadURI.hasPrefix("https://cdn.example/hls/live/news/steering.json"))
        // Only for that one answer: a player that stays on b while a still answers this origin's reads (a failure a
        // met alone, or a recovered since) gets its reload on a again, so b's death would not strand it.
        let stayed = SteeringManifest.answer(
            steering, channel: "news", health: [:], query: try Self.reload(fled, streamingFrom: "b"))
        #expect(stayed.pathwayPriority == ["b", "a"])
        #expect(stayed.reloadURI.hasPrefix("http://10.0.0.1:8080/live/news/steering.json"), "\(stayed.reloadURI)")
        // A player that moved where the answer sent it has fled nothing.
        let moved = SteeringManifest.answer(
            steering, channel: "news", health: ["a": .failing("x")], query: SteeringQuery(pathway: "a"))
        #expect(moved.pathwayPriority == ["b", "a"])
        let afterMove = SteeringManifest.answer(
            steering, channel: "news", health: [:], query: try Self.reload(moved, streamingFrom: "b"))
        #expect(afterMove.reloadURI.hasPrefix("http://10.0.0.1:8080/live/news/steering.json"))
    }

    @Test func aConfiguredReloadBaseIsEveryRELOADURI() {
        var steering = Self.steering
        steering.reloadBaseURI = "https://edge.example"
        for (health, pathway) in [([:], "b"), (["a": PathwayHealth.down("x")], "b"), ([:], nil)] as [([String: PathwayHealth], String?)] {
            let manifest = SteeringManifest.answer(
                steering, channel: "news", health: health, query: SteeringQuery(pathway: pathway))
            #expect(manifest.reloadURI == "https://edge.example/live/news/steering.json")
        }
    }

    @Test func theDocumentIsVersion1JSONWithTheFourKeys() throws {
        let text = Self.answer(["a": .down("gone")], pathway: "b").render()
        #expect(
            text
                == #"{"VERSION":1,"TTL":4,"RELOAD-URI":"https://cdn.example/hls/live/news/steering.json?steered=b","PATHWAY-PRIORITY":["b","cdn","a"]}"#
                + "\n")
        let object = try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["VERSION", "TTL", "RELOAD-URI", "PATHWAY-PRIORITY"])
        #expect(object["VERSION"] as? Int == 1)
        #expect(object["TTL"] as? Int == 4)
        #expect(object["PATHWAY-PRIORITY"] as? [String] == ["b", "cdn", "a"])
        #expect(SteeringManifest.quoted("a\"b\\c\u{1}") == #""a\"b\\c\u0001""#)
    }

    @Test func theQueryIsReadStrictly() throws {
        let query = try SteeringQuery(query: [
            ("_HLS_pathway", "cdn"), ("_HLS_throughput", "5200000"), ("CMCD", "br=800"), ("flag", nil),
        ])
        #expect(query == SteeringQuery(pathway: "cdn", throughput: 5_200_000))
        // The origin's own argument of a RELOAD-URI comes back; a malformed one is ignored, never refused.
        #expect(
            try SteeringQuery(query: [("steered", "a"), ("_HLS_pathway", "b")])
                == SteeringQuery(pathway: "b", steered: "a"))
        for bad: [(name: String, value: String?)] in [
            [("steered", nil)], [("steered", "")], [("steered", "a b")], [("steered", "a"), ("steered", "b")],
        ] {
            #expect(try SteeringQuery(query: bad + [("_HLS_pathway", "b")]) == SteeringQuery(pathway: "b"))
        }
        #expect(try SteeringQuery(query: []) == SteeringQuery())
        #expect(try SteeringQuery(query: [("_HLS_pathway", ".")]).pathway == ".")
        let refused: [([(name: String, value: String?)], String)] = [
            ([("_HLS_pathway", "a"), ("_HLS_pathway", "b")], "_HLS_pathway is given twice"),
            ([("_HLS_pathway", nil)], "_HLS_pathway has no value"),
            ([("_HLS_pathway", "a b")], "_HLS_pathway must be a Pathway ID"),
            ([("_HLS_pathway", String(repeating: "a", count: 65))], "_HLS_pathway must be a Pathway ID"),
        ]
        for (arguments, reason) in refused {
            #expect {
                try SteeringQuery(query: arguments)
            } throws: { error in
                (error as? SteeringQueryError)?.description.hasPrefix(reason) == true
            }
        }
    }

    @Test func aMalformedThroughputIsIgnoredNotRefused() throws {
        // hls.js sends `bandwidthEstimate|0`: negative above 2.147 Gbit/s. A 400 would end its steering.
        let ignored: [[(name: String, value: String?)]] = [
            [("_HLS_throughput", "-1")], [("_HLS_throughput", "")], [("_HLS_throughput", nil)],
            [("_HLS_throughput", "1e6")], [("_HLS_throughput", "99999999999999999999")],
            [("_HLS_throughput", "10000000000001")], [("_HLS_throughput", "5"), ("_HLS_throughput", "6")],
        ]
        for arguments in ignored {
            #expect(try SteeringQuery(query: arguments + [("_HLS_pathway", "b")]) == SteeringQuery(pathway: "b"))
        }
        #expect(try SteeringQuery(query: [("_HLS_throughput", "10000000000000")]).throughput == 10_000_000_000_000)
    }

    @Test func aChannelIsStaleAfterOneAndAHalfTargetDurationsWithoutANewSlot() {
        func judge(_ since: Int64?, catchingUp: Bool = false, storage: String? = nil) -> String {
            ChannelHealthReport.judge(
                sinceNewestSlotMilliseconds: since, targetDurationMilliseconds: 2000, catchingUp: catchingUp,
                storageFailure: storage
            ).state
        }
        #expect(judge(3000) == "healthy")
        #expect(judge(3001) == "stale")
        #expect(judge(nil) == "failing")
        #expect(judge(100, catchingUp: true) == "failing")
        #expect(judge(100, storage: "ENOSPC") == "failing")
    }

    static let peerReport = OriginHealthReport(
        origin: "http://10.0.0.2:8080", channels: ["news": ChannelHealthReport(state: "stale", reason: "late")])

    @Test func aPeerIsDownOnlyWithoutAFreshReportOverHTTPOrInTheDatabase() {
        let lifetime = ChannelHealthReport.lifetimeMilliseconds
        // Reached over HTTP: its own judgement.
        #expect(OriginObservation(http: (Self.peerReport, 900)).health(channel: "news") == .stale("late"))
        // Not reached for longer than the lifetime, no database: down.
        let unreachable = OriginObservation(http: (Self.peerReport, lifetime + 1))
        #expect(unreachable.health(channel: "news").severity == 3)
        #expect(OriginObservation().health(channel: "news").severity == 3)
        // Not reached, but its heartbeat in the database is fresh: its report there counts, not down.
        let beating = OriginObservation(
            http: (Self.peerReport, lifetime + 1), database: (Self.peerReport, 1200), databaseConfigured: true)
        #expect(beating.health(channel: "news") == .stale("late"))
        // Neither: down, and the reason says both were looked at.
        let gone = OriginObservation(
            http: (Self.peerReport, lifetime + 1), database: (Self.peerReport, lifetime + 1), databaseConfigured: true)
        #expect(gone.health(channel: "news").reason?.contains("no heartbeat in the group database") == true)
        // The freshest report wins; a channel it does not report is failing there.
        let fresher = OriginHealthReport(origin: "b", channels: ["news": ChannelHealthReport(state: "healthy")])
        #expect(
            OriginObservation(http: (Self.peerReport, 2000), database: (fresher, 100), databaseConfigured: true)
                .health(channel: "news") == .healthy)
        #expect(OriginObservation(http: (Self.peerReport, 10)).health(channel: "sport").severity == 2)
    }

    @Test func aPeerNotReadYetRanksWithTheHealthyOnesOnBothOrigins() {
        // Origin a has just started and is catching up (failing); it has not read b yet. b has read a.
        let catchingUp = OriginHealthReport(
            origin: "http://10.0.0.1:8080", channels: ["news": ChannelHealthReport(state: "failing", reason: "x")])
        let healthB = OriginHealthReport(
            origin: "http://10.0.0.2:8080", channels: ["news": ChannelHealthReport(state: "healthy")])
        var onB = Self.steering
        onB.selfURL = "http://10.0.0.2:8080"
        let healthOnA = Self.steering.pathwayHealth(
            channel: "news", own: catchingUp.channels["news"],
            peers: ["http://10.0.0.2:8080": OriginObservation(watchedMilliseconds: 200)])
        let healthOnB = onB.pathwayHealth(
            channel: "news", own: healthB.channels["news"],
            peers: ["http://10.0.0.1:8080": OriginObservation(http: (catchingUp, 300), watchedMilliseconds: 60_000)])
        #expect(healthOnA["b"] == .healthy)
        let query = SteeringQuery(pathway: "a")
        let onA = SteeringManifest.answer(Self.steering, channel: "news", health: healthOnA, query: query)
        #expect(onA.pathwayPriority == ["b", "cdn", "a"])
        #expect(onA == SteeringManifest.answer(onB, channel: "news", health: healthOnB, query: query))
        // Still no report once watched for longer than the lifetime: down.
        let lifetime = ChannelHealthReport.lifetimeMilliseconds
        #expect(OriginObservation(watchedMilliseconds: lifetime + 1).health(channel: "news").severity == 3)
    }

    @Test func aPathwayIsAsHealthyAsTheBestOfItsOrigins() {
        var steering = Self.steering
        steering.pathways[2].origins = ["http://10.0.0.1:8080", "http://10.0.0.2:8080"]
        let health = steering.pathwayHealth(
            channel: "news", own: ChannelHealthReport(state: "healthy"),
            peers: ["http://10.0.0.2:8080": OriginObservation()])
        #expect(health["a"] == .healthy)
        #expect(health["b"]?.severity == 3)
        #expect(health["cdn"] == .healthy)
        let unchecked = Self.steering.pathwayHealth(channel: "news", own: nil, peers: [:])
        #expect(unchecked["cdn"] == nil)
        #expect(unchecked["a"]?.severity == 2)
    }

    @Test func twoOriginsWithTheSameKnowledgeAnswerTheSameBytes() {
        // Origin A judges itself and reads B's report; B judges itself and reads A's. Same reports, same answer.
        let reportA = OriginHealthReport(
            origin: "http://10.0.0.1:8080", channels: ["news": ChannelHealthReport(state: "healthy")])
        let reportB = Self.peerReport
        var onB = Self.steering
        onB.selfURL = "http://10.0.0.2:8080"
        let healthOnA = Self.steering.pathwayHealth(
            channel: "news", own: reportA.channels["news"],
            peers: ["http://10.0.0.2:8080": OriginObservation(http: (reportB, 500))])
        let healthOnB = onB.pathwayHealth(
            channel: "news", own: reportB.channels["news"],
            peers: ["http://10.0.0.1:8080": OriginObservation(http: (reportA, 700))])
        #expect(healthOnA == healthOnB)
        for pathway in [nil, "a", "b", "cdn"] {
            let query = SteeringQuery(pathway: pathway, throughput: 1_000_000)
            #expect(
                SteeringManifest.answer(Self.steering, channel: "news", health: healthOnA, query: query).render()
                    == SteeringManifest.answer(onB, channel: "news", health: healthOnB, query: query).render())
        }
    }
}
