import FoundationEssentials
@testable import HLSPackaging
import HLSPlaylist
import Logging
import OriginCore
import PeerRepair
import TestSupport
import Testing

@testable import LiveTimeline
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

        /// - Parameter configure: changes both origins' channel (and B's grace period when `peerGracePeriod`).
        init(configure: (inout ChannelConfiguration) -> Void = { _ in }, peerGracePeriod: Double? = nil) throws {
            a = try OriginTestStack(renditions: PeerRepairTests.renditions, clock: clock) {
                $0.origin.channels[0].sharedTimeline = SharedTimeline()
                configure(&$0.origin.channels[0])
            }
            b = try OriginTestStack(renditions: PeerRepairTests.renditions, clock: clock) {
                $0.origin.channels[0].sharedTimeline = SharedTimeline()
                configure(&$0.origin.channels[0])
                if let peerGracePeriod { $0.origin.channels[0].gracePeriod = peerGracePeriod }
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

    @Test func aPeersSlateIsNeverTakenAsMediaAndBothListTheSameSlate() async throws {
        // B closes its slots 0.2 s after their end, A after 1 s: when A asks, B already lists its slate.
        let pair = try Pair(configure: { $0.outage = .slate }, peerGracePeriod: 0.2)
        for _ in 0..<4 { try pair.step() }
        try pair.step(toA: false, toB: false)
        pair.clock.advance(seconds: 0.4)
        pair.b.origin.tick()
        #expect(try pair.b.playlistText("360p").contains("#EXT-X-DISCONTINUITY\n"), "B lists no slate yet")
        #expect(await pair.repairer.repairOnce() == 0)
        pair.a.origin.tick()
        try pair.step(after: 1.6)
        for _ in 0..<2 { try pair.step() }
        #expect(pair.repairer.statistics.first?.repairedSegments == 0)
        for rendition in Self.renditions {
            let a = try pair.a.playlistText(rendition)
            #expect(a == (try pair.b.playlistText(rendition)))
            #expect(!a.contains("#EXT-X-GAP"))
            #expect(a.components(separatedBy: "#EXT-X-DISCONTINUITY\n").count == 3, "\(a)")
        }
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

    /// Origin A (with a durable store) stops after 5 slots; B gets 3 more while A is down; A restarts on the same
    /// store and catches up from B before its ingest loop writes GAPs for the slots it missed.
    struct Restart {
        let clock = ManualClock()
        let b: OriginTestStack
        /// A after its restart.
        let a: OriginTestStack
        /// The segments pushed to B while A was down, by rendition.
        private(set) var missed: [[String: [UInt8]]] = []

        /// - Parameters:
        ///   - catchUp: A's `SharedTimeline.catchUpMilliseconds`.
        ///   - peerMisses: which of the 3 slots A misses B's feed misses too (B lists a GAP).
        init(catchUp: Int64 = 3000, peerMisses: Set<Int> = []) throws {
            let directory = try TemporaryDirectory.make("peer-restart").path
            b = try OriginTestStack(renditions: PeerRepairTests.renditions, clock: clock) {
                $0.origin.channels[0].sharedTimeline = SharedTimeline()
            }
            var first: OriginTestStack? = try Self.originA(clock: clock, directory: directory, catchUp: catchUp)
            for _ in 0..<5 { try Self.push(clock: clock, to: [b, first!]) }
            first = nil  // stops its server; what it acknowledged is in the store
            for index in 0..<3 {
                missed.append(try Self.push(clock: clock, to: peerMisses.contains(index) ? [] : [b], generator: b))
                b.origin.tick()
            }
            clock.advance(seconds: 0.5)
            a = try Self.originA(clock: clock, directory: directory, catchUp: catchUp)
        }

        static func originA(clock: ManualClock, directory: String, catchUp: Int64) throws -> OriginTestStack {
            try OriginTestStack(renditions: PeerRepairTests.renditions, clock: clock) {
                $0.origin.dataDirectory = directory
                $0.origin.channels[0].sharedTimeline = SharedTimeline(catchUpMilliseconds: catchUp)
            }
        }

        /// 2 s pass; the encoder's next segment of every rendition (from B's generator) reaches `stacks`, which
        /// tick. Returns the bytes, by rendition.
        @discardableResult
        static func push(
            clock: ManualClock, to stacks: [OriginTestStack], generator: OriginTestStack? = nil
        ) throws
            -> [String: [UInt8]]
        {
            clock.advance(seconds: 2)
            var pushed: [String: [UInt8]] = [:]
            for rendition in PeerRepairTests.renditions {
                let bytes = (generator ?? stacks.first)?.nextSegment(rendition) ?? []
                pushed[rendition] = bytes
                for stack in stacks {
                    let response = try stack.push(rendition, bytes)
                    guard response.status == 201 else {
                        throw TestFailure("push to \(rendition) answered \(response.status): \(response.text)")
                    }
                }
            }
            for stack in stacks { stack.origin.tick() }
            return pushed
        }

        /// The next slot reaches both origins.
        func pushToBoth() throws { try Self.push(clock: clock, to: [b, a]) }

        /// A repairer of A from B.
        func repairer() -> PeerRepairer {
            PeerRepairer(
                origin: a.origin, peers: [PeerURL("http://127.0.0.1:\(b.port)")!], requestTimeout: .seconds(5),
                logger: PeerRepairTests.logger)
        }

        /// Repair passes until one repairs nothing (what `PeerRepairer.run` does), then A ticks. Returns the total.
        func catchUp(_ repairer: PeerRepairer) async -> Int {
            var repaired = 0
            while true {
                let pass = await repairer.repairOnce()
                guard pass > 0 else { break }
                repaired += pass
            }
            a.origin.tick()
            return repaired
        }
    }

    @Test func aRestartedOriginTakesTheSlotsItMissedWhileDownFromItsPeer() async throws {
        let restart = try Restart()
        // Catching up: the playlists still show the window of before the restart, so they are not served; the
        // encoder's push would take the oldest missing slot, so it is refused; both say to come back in a second.
        let playlist = try restart.a.get("/live/ch/360p/index.m3u8")
        #expect(playlist.status == 503)
        #expect(playlist.header("Retry-After") == "1")
        #expect(playlist.text.contains("catching up with its peers"))
        let early = try restart.a.push("360p", restart.missed[2]["360p"]!)
        #expect(early.status == 503)
        #expect(early.text.contains("catching up with its peers"))
        // (Read before #expect: its capture of a whole ChannelStatus overflowed a debug build's task stack.)
        let waitAtRestart = restart.a.origin.channel(named: "ch")?.status().peerWait
        #expect(waitAtRestart == "catching up")
        let repairer = restart.repairer()
        #expect(await restart.catchUp(repairer) == 6)  // 3 slots of 2 renditions
        let waitAfter = restart.a.origin.channel(named: "ch")?.status().peerWait
        #expect(waitAfter == nil)
        #expect(repairer.statistics.first?.repairedSegments == 6)
        try restart.pushToBoth()
        try restart.pushToBoth()
        for rendition in Self.renditions {
            let a = try restart.a.playlistText(rendition)
            #expect(a == (try restart.b.playlistText(rendition)))
            #expect(!a.contains("#EXT-X-GAP"), "\(a)")
            #expect(!a.contains("#EXT-X-DISCONTINUITY\n"), "\(a)")
        }
        // The bytes of the first slot A missed are the encoder's.
        let parsed = try MediaPlaylist.parse(try restart.a.playlistText("360p"))
        let uri = parsed.segments[parsed.segments.count - 5].uri
        #expect(try restart.a.get("/live/ch/360p/\(uri)").body == restart.missed[0]["360p"])
    }

    @Test func aSlotThePeerListsAsAGapIsAGapOnTheRestartedOriginToo() async throws {
        let restart = try Restart(peerMisses: [0])
        #expect(await restart.catchUp(restart.repairer()) == 6)  // 2 GAPs, then 4 segments
        try restart.pushToBoth()
        for rendition in Self.renditions {
            let a = try restart.a.playlistText(rendition)
            #expect(a == (try restart.b.playlistText(rendition)))
            #expect(a.components(separatedBy: "#EXT-X-GAP").count - 1 == 1, "\(a)")
        }
    }

    @Test func withoutCatchUpTheSlotsMissedWhileDownAreGapsAndDifferFromThePeer() async throws {
        // The negative control: with catch-up off, the first tick closes the slots missed while down as GAPs.
        let restart = try Restart(catchUp: 0)
        #expect(try restart.a.get("/live/ch/360p/index.m3u8").status == 200)
        try restart.pushToBoth()
        let a = try restart.a.playlistText("360p")
        #expect(a.contains("#EXT-X-GAP"))
        #expect(a != (try restart.b.playlistText("360p")))
    }

    @Test func anUnreachablePeerEndsTheCatchUpAtItsBoundAndTheMissedSlotsAreGaps() async throws {
        let restart = try Restart()
        let unreachable = PeerRepairer(
            origin: restart.a.origin, peers: [PeerURL("http://127.0.0.1:\(try OriginTestStack().port)")!],
            logger: Self.logger)
        #expect(await restart.catchUp(unreachable) == 0)
        #expect(try restart.a.get("/live/ch/360p/index.m3u8").status == 503)
        restart.clock.advance(seconds: 3)
        restart.a.origin.tick()
        // 4 GAPs: the 3 slots missed while down, and the next one, whose deadline passed during the 3 s.
        let a = try restart.a.playlistText("360p")
        #expect(a.components(separatedBy: "#EXT-X-GAP").count - 1 == 4, "\(a)")
    }

    /// MSN -> (discontinuity sequence number, URI, PDT, GAP) of every entry a media playlist lists.
    static func entries(_ text: String) throws -> [UInt64: String] {
        let playlist = try MediaPlaylist.parse(text)
        var sequence = playlist.discontinuitySequence
        var entries: [UInt64: String] = [:]
        for (offset, segment) in playlist.segments.enumerated() {
            if segment.discontinuity { sequence += 1 }
            entries[playlist.mediaSequence + UInt64(offset)] =
                "dsn \(sequence) \(segment.uri) \(segment.programDateTime?.millisecondsSince1970 ?? -1) "
                + "gap=\(segment.gap)"
        }
        return entries
    }

    /// B runs with an encoder outage (a GAP, then a discontinuity: B counts 1); A starts afterwards, fed from then on.
    /// Returns A's and B's media playlists of 360p after 3 slots fed to both.
    static func joinLate(catchUp: Int64) async throws -> (a: String, b: String) {
        let clock = ManualClock()
        let b = try OriginTestStack(renditions: renditions, clock: clock) {
            $0.origin.channels[0].sharedTimeline = SharedTimeline()
        }
        for _ in 0..<3 { try Restart.push(clock: clock, to: [b]) }
        try Restart.push(clock: clock, to: [], generator: b)
        b.origin.tick()
        for _ in 0..<3 { try Restart.push(clock: clock, to: [b]) }
        #expect(try b.playlistText("360p").contains("#EXT-X-DISCONTINUITY\n"))
        let a = try OriginTestStack(renditions: renditions, clock: clock) {
            $0.origin.channels[0].sharedTimeline = SharedTimeline(catchUpMilliseconds: catchUp)
        }
        let repairer = PeerRepairer(
            origin: a.origin, peers: [PeerURL("http://127.0.0.1:\(b.port)")!], requestTimeout: .seconds(5),
            logger: logger)
        for _ in 0..<3 {
            try Restart.push(clock: clock, to: [b, a], generator: b)
            _ = await repairer.repairOnce()
        }
        return (try a.playlistText("360p"), try b.playlistText("360p"))
    }

    @Test func anOriginJoiningLateTakesTheDiscontinuitySequenceItsPeerCounted() async throws {
        let (a, b) = try await Self.joinLate(catchUp: 3000)
        let (onA, onB) = (try Self.entries(a), try Self.entries(b))
        #expect(onA.count == 3)
        for (msn, entry) in onA { #expect(entry == onB[msn], "msn \(msn)") }
        #expect(a.contains("#EXT-X-DISCONTINUITY-SEQUENCE:1\n"), "\(a)")
    }

    @Test func withoutWaitingForItsPeerALateJoinerCountsFromZero() async throws {
        // The negative control: no hold, so the late joiner's first slot counts its own (no) discontinuities.
        let (a, b) = try await Self.joinLate(catchUp: 0)
        let (onA, onB) = (try Self.entries(a), try Self.entries(b))
        #expect(onA.keys.contains { onA[$0] != onB[$0] })
        #expect(a.contains("#EXT-X-DISCONTINUITY-SEQUENCE:0\n"), "\(a)")
    }

    @Test func originsStartingTogetherBothCountFromZero() async throws {
        let clock = ManualClock()
        let stacks = try (0..<2).map { _ in
            try OriginTestStack(renditions: Self.renditions, clock: clock) {
                $0.origin.channels[0].sharedTimeline = SharedTimeline(catchUpMilliseconds: 3000)
            }
        }
        let repairers = [(0, 1), (1, 0)].map { from, to in
            PeerRepairer(
                origin: stacks[from].origin, peers: [PeerURL("http://127.0.0.1:\(stacks[to].port)")!],
                requestTimeout: .seconds(5), logger: Self.logger)
        }
        try Restart.push(clock: clock, to: stacks)
        // Held: nothing listed until the peers are asked (each has no media yet, so each counts on its own).
        #expect(try stacks[0].get("/live/ch/360p/index.m3u8").status == 404)
        let wait = stacks[0].origin.channel(named: "ch")?.status().peerWait
        #expect(wait == "joining")
        for repairer in repairers { _ = await repairer.repairOnce() }
        for _ in 0..<2 { try Restart.push(clock: clock, to: stacks) }
        let (a, b) = (try stacks[0].playlistText("360p"), try stacks[1].playlistText("360p"))
        #expect(a == b)
        #expect(try Self.entries(a).count == 3, "\(a)\n\(b)")
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
