import HLSPackaging
import HLSPlaylist
import Logging
import MediaProbe
import OriginCore
import OriginServer
import PeerRepair
import TestSupport
import Testing

@testable import LiveTimeline

/// Two origins of a redundancy group whose clocks differ by 5 ms (each a real HTTP server on loopback, on its own
/// manual clock), fed the same segments at the same moment, so that the unrounded anchor of the feed falls 2 ms
/// before a line of the 500 ms grid on one and 3 ms after it on the other: alone, each would open the feed half a
/// second apart. Held openings agreed through the peers (`ChannelState+Agreement`, `PeerRepairer`) make them list the
/// same MSNs and PDTs.
@Suite("Openings agreed with the peers: a feed's anchor straddling a grid line")
struct OpeningAgreementTests {
    static let renditions = ["360p", "180p"]
    static let logger = Logger(label: "opening-agreement-tests", factory: { _ in SwiftLogNoOpLogHandler() })

    struct Pair {
        let clocks = [ManualClock(), ManualClock(microseconds: 1_767_225_600_000_000 + 5_000)]
        let stacks: [OriginTestStack]
        let repairers: [PeerRepairer]
        /// The encoder: one generator per rendition (the stacks' own generators stay unused).
        let encoder: OriginTestStack

        /// - Parameter catchUp: how long an opening is held for the peers (0: not at all).
        init(catchUp: Int64) throws {
            let clocks = self.clocks
            stacks = try clocks.map { clock in
                try OriginTestStack(renditions: OpeningAgreementTests.renditions, clock: clock) {
                    $0.origin.channels[0].sharedTimeline = SharedTimeline(catchUpMilliseconds: catchUp)
                }
            }
            let stacks = self.stacks
            repairers = [(0, 1), (1, 0)].map { from, to in
                PeerRepairer(
                    origin: stacks[from].origin, peers: [PeerURL("http://127.0.0.1:\(stacks[to].port)")!],
                    requestTimeout: .seconds(5), logger: OpeningAgreementTests.logger)
            }
            encoder = try OriginTestStack(renditions: OpeningAgreementTests.renditions)
        }

        /// `seconds` pass on both clocks; the encoder's next segment of every rendition reaches both origins (or
        /// none: an outage), which tick. The first call first moves both clocks so that the feed's unrounded anchor
        /// is 2 ms before a grid line on origin 0 (and 3 ms after it on origin 1).
        func step(after seconds: Double = 2, delivered: Bool = true, straddle: Bool = false) throws {
            for clock in clocks { clock.advance(seconds: seconds) }
            var segments: [(String, [UInt8])] = []
            for rendition in OpeningAgreementTests.renditions {
                segments.append((rendition, encoder.nextSegment(rendition)))
            }
            if straddle {
                let info = try MediaProbe.probeSegment(segments[0].1)
                let arrival = clocks[0].nowMilliseconds() - (info.duration.microseconds + 500) / 1000
                let unrounded = arrival - SharedTimeline.milliseconds(info.startTime)
                let move = ((498 - unrounded % 500) + 500) % 500
                for clock in clocks { clock.advance(microseconds: move * 1000) }
            }
            guard delivered else {
                for stack in stacks { stack.origin.tick() }
                return
            }
            for (rendition, bytes) in segments {
                for stack in stacks {
                    let response = try stack.push(rendition, bytes)
                    guard response.status == 201 else {
                        throw TestFailure("push to \(rendition) answered \(response.status): \(response.text)")
                    }
                }
            }
            for stack in stacks { stack.origin.tick() }
        }

        /// Both repairers once (what `PeerRepairer.run` does every 100 ms), origin 0's first; both tick.
        func agree() async {
            for repairer in repairers { _ = await repairer.repairOnce() }
            for stack in stacks { stack.origin.tick() }
        }

        /// MSN -> "PDT URI gap" of every entry each origin lists for 360p.
        func listed() throws -> [[UInt64: String]] {
            try stacks.map { stack in
                let playlist = try MediaPlaylist.parse(try stack.playlistText("360p"))
                var entries: [UInt64: String] = [:]
                for (offset, segment) in playlist.segments.enumerated() {
                    entries[playlist.mediaSequence + UInt64(offset)] =
                        "\(segment.programDateTime?.formatted ?? "-") \(segment.uri) gap=\(segment.gap)"
                }
                return entries
            }
        }
    }

    @Test func originsStartingTogetherAcrossAGridLineListTheSameEntries() async throws {
        let pair = try Pair(catchUp: 3000)
        try pair.step(straddle: true)
        // Each holds its opening, half a second from the other's: nothing is listed yet.
        let held = pair.stacks.compactMap { $0.origin.channel(named: "ch")?.heldOpening }
        #expect(held.count == 2)
        if held.count == 2 {
            #expect(abs(held[0].programDateTimeMilliseconds - held[1].programDateTimeMilliseconds) == 500)
        }
        #expect(try pair.stacks[0].get("/peer/ch/opening").status == 200)
        await pair.agree()
        for _ in 0..<3 { try pair.step() }
        let (a, b) = try {
            let both = try pair.listed(); return (both[0], both[1])
        }()
        #expect(a.count == 4)
        #expect(a == b)
        #expect(try pair.stacks[0].get("/peer/ch/opening").status == 404)
    }

    @Test func withoutHoldingTheOpeningTheyListPDTsHalfASecondApart() async throws {
        // The negative control: the same arrivals with no hold.
        let pair = try Pair(catchUp: 0)
        try pair.step(straddle: true)
        for _ in 0..<3 { try pair.step() }
        let (a, b) = try {
            let both = try pair.listed(); return (both[0], both[1])
        }()
        #expect(!a.isEmpty)
        #expect(a != b)
    }

    /// The encoder starts, stops for 10 s (both write the same GAPs) and comes back with its timestamps going on,
    /// arriving across a grid line. Returns each origin's entries.
    static func returnFromOutage(
        catchUp: Int64, agreed: (Pair) async throws -> Void = { _ in }
    ) async throws
        -> (a: [UInt64: String], b: [UInt64: String])
    {
        let pair = try Pair(catchUp: catchUp)
        try pair.step()
        await pair.agree()
        for _ in 0..<2 { try pair.step() }
        for _ in 0..<5 { try pair.step(delivered: false) }
        try pair.step(straddle: true)
        try await agreed(pair)
        for _ in 0..<2 { try pair.step() }
        let both = try pair.listed()
        return (both[0], both[1])
    }

    @Test func aReturnFromAnOutageAcrossAGridLineListsTheSameEntries() async throws {
        let (a, b) = try await Self.returnFromOutage(catchUp: 3000) { pair in
            let held = pair.stacks.compactMap { $0.origin.channel(named: "ch")?.heldOpening }
            #expect(held.count == 2)
            #expect(held.allSatisfy { !$0.first })
            #expect(pair.stacks[0].origin.channel(named: "ch")?.status().peerWait?.hasPrefix("agreeing") == true)
            await pair.agree()
        }
        #expect(a.values.contains { $0.contains("gap=true") })
        #expect(a == b)
    }

    @Test func withoutHoldingTheReturnTheyListItsPDTHalfASecondApart() async throws {
        let (a, b) = try await Self.returnFromOutage(catchUp: 0)
        #expect(a.values.contains { $0.contains("gap=true") })
        #expect(a != b)
    }
}
