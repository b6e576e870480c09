import HLSPlaylist
import Logging
import OriginCore
import PeerRepair
import TestSupport
import Testing

@testable import IngestLoop
@testable import OriginServer

/// Two origins of a redundancy group, each a real HTTP server on loopback on one manual clock, fed the same
/// segments. When one origin's feed misses slots the other received, the `PeerRepairer` fetches them from the peer
/// over HTTP (`PeerClient`, SwiftNIO) before the deadline, and both publish the same playlists.
@Suite("Peer repair: slots one origin missed come from its peer")
struct PeerRepairTests {
    static let renditions = ["360p", "180p"]
    static let logger = Logger(label: "peer-repair-tests", factory: { _ in SwiftLogNoOpLogHandler() })

    struct Pair {
        let clock = ManualClock()
        let a: OriginTestStack
        let b: OriginTestStack
        let repairer: PeerRepairer

        init() throws {
            a = try OriginTestStack(renditions: PeerRepairTests.renditions, clock: clock) {
                $0.origin.channels[0].sharedTimeline = SharedTimeline()
            }
            b = try OriginTestStack(renditions: PeerRepairTests.renditions, clock: clock) {
                $0.origin.channels[0].sharedTimeline = SharedTimeline()
            }
            // A generous wait per answer: the unit tests run in parallel on 2 cores (a repair still waits no longer
            // than its slot's deadline).
            repairer = PeerRepairer(
                origin: a.origin, peers: [PeerURL("http://127.0.0.1:\(b.port)")!], requestTimeout: .seconds(5),
                logger: PeerRepairTests.logger)
        }

        /// `seconds` pass (2 s after the previous segment: 1.6 s after a repair pass); the encoder's next segment of
        /// every rendition reaches B if `toB`, and A if `toA`; both tick. Returns the bytes pushed, by rendition.
        @discardableResult
        func step(toA: Bool = true, toB: Bool = true, after seconds: Double = 2) throws -> [String: [UInt8]] {
            clock.advance(seconds: seconds)
            var pushed: [String: [UInt8]] = [:]
            for rendition in PeerRepairTests.renditions {
                let bytes = b.nextSegment(rendition)
                pushed[rendition] = bytes
                for (stack, send) in [(b, toB), (a, toA)] where send {
                    let response = try stack.push(rendition, bytes)
                    guard response.status == 201 else {
                        throw TestFailure("push to \(rendition) answered \(response.status): \(response.text)")
                    }
                }
            }
            b.origin.tick()
            a.origin.tick()
            return pushed
        }

        /// 400 ms later (the segment is overdue on A), one repair pass; both tick.
        func repair() async -> Int {
            clock.advance(seconds: 0.4)
            let repaired = await repairer.repairOnce()
            b.origin.tick()
            a.origin.tick()
            return repaired
        }
    }

    @Test func slotsOneOriginMissedAreFetchedFromThePeerAndBothListTheSameEntries() async throws {
        let pair = try Pair()
        for _ in 0..<5 { try pair.step() }
        var repaired = 0
        var missed: [[String: [UInt8]]] = []
        for index in 0..<3 {
            missed.append(try pair.step(toA: false, after: index == 0 ? 2 : 1.6))
            repaired += await pair.repair()
        }
        try pair.step(after: 1.6)
        for _ in 0..<2 { try pair.step() }
        #expect(repaired == 6)
        for rendition in Self.renditions {
            let a = try pair.a.playlistText(rendition)
            #expect(a == (try pair.b.playlistText(rendition)))
            #expect(!a.contains("#EXT-X-GAP"))
            #expect(!a.contains("#EXT-X-DISCONTINUITY\n"), "\(a)")
        }
        #expect(pair.repairer.statistics.first?.repairedSegments == 6)
        #expect(pair.repairer.statistics.first?.failedFetches == 0)
        // The repaired bytes are the encoder's: the last slot missed (three before the newest) served by A equals
        // what B got.
        let parsed = try MediaPlaylist.parse(try pair.a.playlistText("360p"))
        let uri = parsed.segments[parsed.segments.count - 4].uri
        let served = try pair.a.get("/live/ch/360p/\(uri)")
        #expect(served.status == 200)
        #expect(served.body == missed[2]["360p"], "the repaired segment is not the encoder's")
    }

    @Test func theEncoderPushArrivingAfterTheRepairIsAnsweredAsAlreadyListed() async throws {
        let pair = try Pair()
        for _ in 0..<4 { try pair.step() }
        let late = try pair.step(toA: false)
        #expect(await pair.repair() == 2)
        let response = try pair.a.push("360p", late["360p"]!)
        #expect(response.status == 200)
        #expect(response.text.contains("already taken"))
        try pair.step(after: 1.6)
        #expect(try pair.a.playlistText("360p") == (try pair.b.playlistText("360p")))
    }

    @Test func aSlotNoPeerHasClosesAsTheSameGapOnBoth() async throws {
        let pair = try Pair()
        for _ in 0..<4 { try pair.step() }
        try pair.step(toA: false, toB: false)
        #expect(await pair.repair() == 0)
        try pair.step(after: 1.6)
        for _ in 0..<2 { try pair.step() }
        let a = try pair.a.playlistText("360p")
        #expect(a == (try pair.b.playlistText("360p")))
        #expect(a.contains("#EXT-X-GAP"))
    }

    @Test func theAgreementCheckSaysWhetherBothListTheSameAndShowsTheFirstDifference() async throws {
        let pair = try Pair()
        for _ in 0..<5 { try pair.step() }
        await pair.repairer.checkAgreement()
        let agreeing = try #require(pair.repairer.agreements(channel: "ch").first)
        #expect(agreeing.agrees, "\(agreeing.difference ?? "")")
        #expect(agreeing.newestCommonMSN != nil && agreeing.newestCommonMSN == agreeing.peerNewestMSN)
        var metrics = MetricsExposition.render(
            origin: pair.a.origin, requests: RequestMetrics(), peerRepairer: pair.repairer)
        #expect(metrics.contains("hlsorigin_peer_agreement{channel=\"ch\",peer=\"\(agreeing.peer)\"} 1"))

        // A slot B received and A missed, not repaired: a GAP here, a segment on the peer.
        try pair.step(toA: false)
        for _ in 0..<3 { try pair.step() }
        for _ in 0..<2 { await pair.repairer.checkAgreement() }  // both renditions, in turn
        let disagreeing = pair.repairer.agreements(channel: "ch")
        #expect(disagreeing.count == 1)
        #expect(disagreeing.first?.agrees == false)
        #expect(disagreeing.first?.difference?.contains("GAP here, segment on the peer") == true)
        metrics = MetricsExposition.render(
            origin: pair.a.origin, requests: RequestMetrics(), peerRepairer: pair.repairer)
        #expect(metrics.contains("hlsorigin_peer_agreement{channel=\"ch\",peer=\"\(agreeing.peer)\"} 0"))
    }

    @Test func anUnreachablePeerIsCountedAndTheSlotClosesAsAGap() async throws {
        let clock = ManualClock()
        let stack = try OriginTestStack(renditions: ["360p"], clock: clock) {
            $0.origin.channels[0].sharedTimeline = SharedTimeline()
        }
        let port = try OriginTestStack(renditions: ["360p"]).port  // a server that goes away
        let repairer = PeerRepairer(
            origin: stack.origin, peers: [PeerURL("http://127.0.0.1:\(port)")!], logger: Self.logger)
        try stack.slots(4)
        clock.advance(seconds: 2.4)
        stack.origin.tick()
        #expect(await repairer.repairOnce() == 0)
        #expect(repairer.statistics.first?.failedFetches == 1)
        #expect(repairer.statistics.first?.lastError?.contains("cannot connect") == true)
    }

    @Test(arguments: [
        ("http://10.0.0.2:8080", "10.0.0.2", 8080, "/"),
        ("http://origin-b", "origin-b", 80, "/"),
        ("http://origin-b:81/prefix", "origin-b", 81, "/prefix"),
    ])
    func peerURLsAreRead(text: String, host: String, port: Int, path: String) throws {
        let url = try #require(PeerURL(text))
        #expect(url.host == host && url.port == port && url.path == path)
    }

    @Test(arguments: ["https://b:8443", "http://", "http://user@b", "http://b:0", "http://b:x", "b:8080"])
    func otherURLsAreRefused(text: String) {
        #expect(PeerURL(text) == nil)
    }

    @Test func segmentURIsResolveAgainstThePlaylist() throws {
        let playlist = try #require(PeerURL("http://b:8080")?.with(path: "/live/ch/360p/index.m3u8"))
        #expect(playlist.resolving("12.ts")?.description == "http://b:8080/live/ch/360p/12.ts")
        #expect(playlist.resolving("/x/1.ts")?.description == "http://b:8080/x/1.ts")
        #expect(playlist.resolving("https://c/1.ts") == nil)
    }
}
