import MediaProbe
import SharedBytes
import TestSupport
import Testing

@testable import LiveTimeline

/// Two origins of a redundancy group fed the same segments: each is a `ChannelState` on the manual clock, receiving
/// the encoder's segments with its own arrival jitter and ticking at its own phase. Whatever each saw first, the
/// entries both list (MSN, PDT, EXTINF, discontinuity, GAP, discontinuity sequence) must be identical.
@Suite("Shared timeline: redundant origins number and time the same segments the same way", .offThePool)
struct SharedTimelineTests {
    /// An encoder cutting 2 s segments of 90 kHz MPEG-TS for renditions `hi` and `lo` (same timestamps, as ffmpeg's
    /// variant streams have), whose n-th segment is complete at `start + (n + 1) * 2 s` of wall time.
    struct Encoder {
        /// Wall time (ms) when the encoder's media time `firstPTS` was live.
        var start: Int64
        var firstPTS: Int64 = 126_000  // ffmpeg's MPEG-TS muxer starts at 1.4 s
        static let segmentTicks: Int64 = 180_000

        func info(_ n: Int64, ptsOffset: Int64 = 0) -> SegmentInfo {
            SegmentInfo(
                container: .mpegTS,
                tracks: [TrackInfo(kind: .video, codec: "avc1.42c01e", trackID: 256, timescale: 90_000)],
                startTime: MediaTime(ticks: firstPTS + ptsOffset + n * Self.segmentTicks, timescale: 90_000),
                duration: MediaTime(ticks: Self.segmentTicks, timescale: 90_000), startsWithKeyframe: true,
                byteCount: 188)
        }

        func completedAt(_ n: Int64) -> Int64 { start + (n + 1) * 2000 }
    }

    /// One origin: a channel state with two renditions, its arrival jitter and its tick phase.
    struct Origin {
        var state: ChannelState
        /// Arrival delay of segment n (ms), as a function of n: the network and this origin's place in a tee.
        let delay: (Int64) -> Int64
        /// This origin's ingest loop ticks at `phase + k * 100` ms.
        let phase: Int64
        var now: Int64 = 0

        init(shared: Bool, phase: Int64, delay: @escaping (Int64) -> Int64) {
            var configuration = ChannelConfiguration(
                name: "c", renditions: [.init(name: "hi"), .init(name: "lo")], window: .segments(400))
            configuration.gracePeriod = 1
            if shared { configuration.sharedTimeline = SharedTimeline() }
            state = ChannelState(configuration: configuration, firstMSN: 0)
            state.addRendition("hi")
            state.addRendition("lo")
            self.phase = phase
            self.delay = delay
        }

        /// Runs the ingest loop up to `time`, tick by tick.
        mutating func run(until time: Int64) {
            var tick = now == 0 ? time - 100 : now
            tick = tick - ((tick - phase) % 100 + 100) % 100 + 100
            while tick <= time {
                _ = state.tick(nowMilliseconds: tick)
                tick += 100
            }
            now = time
        }

        /// Segment n of both renditions arrives (`lo` 3 ms after `hi`).
        mutating func receive(_ n: Int64, from encoder: Encoder, ptsOffset: Int64 = 0) {
            let arrival = encoder.completedAt(n) + delay(n)
            for (rendition, lag) in [("hi", Int64(0)), ("lo", Int64(3))] {
                run(until: arrival + lag)
                let result = state.accept(
                    rendition: rendition, bytes: SharedBytes([0x47]), info: encoder.info(n, ptsOffset: ptsOffset),
                    nowMilliseconds: arrival + lag
                ).result
                if case .failure(let error) = result { Issue.record("segment \(n) of \(rendition) refused: \(error)") }
            }
        }

        /// (MSN, PDT, EXTINF, discontinuity, GAP, discontinuity sequence) of every listed entry of `rendition`.
        func listed(_ rendition: String) -> [UInt64: Listed] {
            let window = state.renditions[state.index[rendition]!].window
            var sequence = window.discontinuitySequence
            var listed: [UInt64: Listed] = [:]
            for entry in window.entries {
                if entry.discontinuity { sequence += 1 }
                listed[entry.msn] = Listed(
                    pdt: entry.programDateTimeMilliseconds, extinf: entry.durationMilliseconds,
                    discontinuity: entry.discontinuity, gap: entry.isGap, discontinuitySequence: sequence)
            }
            return listed
        }
    }

    struct Listed: Equatable, CustomStringConvertible {
        var pdt: Int64
        var extinf: Int64
        var discontinuity: Bool
        var gap: Bool
        var discontinuitySequence: UInt64
        var description: String {
            "pdt \(pdt) extinf \(extinf) disc \(discontinuity) gap \(gap) dsn \(discontinuitySequence)"
        }
    }

    /// Every MSN both list, compared; returns how many were compared.
    @discardableResult
    static func expectSameEntries(_ a: Origin, _ b: Origin, sourceLocation: SourceLocation = #_sourceLocation) -> Int {
        var compared = 0
        for rendition in ["hi", "lo"] {
            let listedA = a.listed(rendition)
            let listedB = b.listed(rendition)
            for msn in Set(listedA.keys).intersection(listedB.keys).sorted() {
                #expect(
                    listedA[msn] == listedB[msn], "\(rendition) msn \(msn): \(listedA[msn]!) vs \(listedB[msn]!)",
                    sourceLocation: sourceLocation)
                compared += 1
            }
        }
        return compared
    }

    /// A deterministic jitter of 0-20 ms per segment (a different sequence per seed).
    static func jitter(seed: Int64) -> (Int64) -> Int64 {
        { n in ((n &* 7919 &+ seed &* 104_729) % 21 + 21) % 21 }
    }

    // Media time 0 was live at 2026-11-24T12:00:00.230Z: the anchor's unrounded value sits 230 ms past a line of
    // the 500 ms grid, far from the 0-25 ms the two origins' arrivals differ by.
    static let encoderStart: Int64 = 1_795_521_600_230 + 1_400

    @Test func twoOriginsFedWithArrivalJitterListTheSameEntries() {
        let encoder = Encoder(start: Self.encoderStart)
        var a = Origin(shared: true, phase: 0, delay: Self.jitter(seed: 1))
        var b = Origin(shared: true, phase: 37, delay: { Self.jitter(seed: 2)($0) + 2 })
        for n in Int64(0)..<200 {
            a.receive(n, from: encoder)
            b.receive(n, from: encoder)
        }
        #expect(Self.expectSameEntries(a, b) == 400)
        // The grid's MSN for 2026-11-24T12:00:01.4Z (2 s slots since 2000-01-01), and PDT = anchor + media start.
        let first = a.listed("hi").keys.min()!
        #expect(first == 424_418_401)
        #expect(a.listed("hi")[first]!.pdt == 1_795_521_600_000 + 1_400)
    }

    /// Without a shared timeline the same two origins differ: each anchors on its own arrival (the test's
    /// comparison can fail).
    @Test func loneOriginsFedWithArrivalJitterListDifferentPDTs() {
        let encoder = Encoder(start: Self.encoderStart)
        var a = Origin(shared: false, phase: 0, delay: Self.jitter(seed: 1))
        var b = Origin(shared: false, phase: 37, delay: { Self.jitter(seed: 2)($0) + 2 })
        for n in Int64(0)..<20 {
            a.receive(n, from: encoder)
            b.receive(n, from: encoder)
        }
        #expect(a.listed("hi")[0]!.pdt != b.listed("hi")[0]!.pdt)
    }

    @Test func anOriginStartedThreeMinutesLateGivesTheSameSegmentsTheSameMSNAndPDT() {
        let encoder = Encoder(start: Self.encoderStart)
        var early = Origin(shared: true, phase: 0, delay: Self.jitter(seed: 3))
        var late = Origin(shared: true, phase: 61, delay: { Self.jitter(seed: 4)($0) + 5 })
        for n in Int64(0)..<180 {
            early.receive(n, from: encoder)
            if n >= 90 { late.receive(n, from: encoder) }
        }
        #expect(Self.expectSameEntries(early, late) == 180)
        #expect(late.listed("hi").keys.min() == early.listed("hi").keys.min()! + 90)
    }

    /// A lone origin started late numbers from 0: the late-join check above is not vacuous.
    @Test func aLoneOriginStartedLateNumbersFromItsOwnCounter() {
        let encoder = Encoder(start: Self.encoderStart)
        var early = Origin(shared: false, phase: 0, delay: { _ in 0 })
        var late = Origin(shared: false, phase: 0, delay: { _ in 0 })
        for n in Int64(0)..<20 {
            early.receive(n, from: encoder)
            if n >= 10 { late.receive(n, from: encoder) }
        }
        #expect(late.listed("hi").keys.min() == 0)
        #expect(early.listed("hi")[0]!.pdt != late.listed("hi")[0]!.pdt)
    }

    @Test func anOutageBothSeeGivesTheSameGapsAndTheSameReturn() {
        let encoder = Encoder(start: Self.encoderStart)
        var a = Origin(shared: true, phase: 0, delay: Self.jitter(seed: 5))
        var b = Origin(shared: true, phase: 50, delay: { Self.jitter(seed: 6)($0) + 1 })
        // 30 segments, 10 s (5 segments) lost, then 30 more on the same timestamps (media went on meanwhile).
        for n in Int64(0)..<65 where !(30..<35).contains(n) {
            a.receive(n, from: encoder)
            b.receive(n, from: encoder)
        }
        a.run(until: encoder.completedAt(66))
        b.run(until: encoder.completedAt(66))
        #expect(Self.expectSameEntries(a, b) >= 120)
        let listed = a.listed("hi")
        let gaps = listed.filter(\.value.gap).count
        #expect((4...6).contains(gaps), "GAP entries: \(gaps)")
        #expect(listed.values.filter(\.discontinuity).count == 1)
    }

    @Test func anEncoderRestartOpensANewFeedAnchoredTheSameWayOnBoth() {
        let encoder = Encoder(start: Self.encoderStart)
        var a = Origin(shared: true, phase: 0, delay: Self.jitter(seed: 7))
        var b = Origin(shared: true, phase: 80, delay: { Self.jitter(seed: 8)($0) + 4 })
        for n in Int64(0)..<20 {
            a.receive(n, from: encoder)
            b.receive(n, from: encoder)
        }
        // The encoder restarts 7 s later: its timestamps start again at 1.4 s (its n-th segment now n - 24).
        let restarted = Encoder(start: encoder.completedAt(23) + 1_000 + 230)
        for n in Int64(0)..<20 {
            a.receive(n, from: restarted)
            b.receive(n, from: restarted)
        }
        #expect(Self.expectSameEntries(a, b) >= 70)
        let listed = a.listed("hi")
        #expect(listed.values.filter(\.discontinuity).count == 1)
        let resumed = listed.first { $0.value.discontinuity }!
        // The new feed starts at its anchor rounded down to the grid, or where the GAP slots of the pause ended,
        // whichever is later: within one slot of the moment its first segment started.
        let previous = listed[resumed.key - 1]!
        #expect(resumed.value.pdt >= previous.pdt + previous.extinf)
        #expect(resumed.value.pdt > restarted.completedAt(0) - 2_000 - 2_000)
        #expect(resumed.value.pdt <= restarted.completedAt(0))
    }

    @Test func theAnchorIsTheArrivalLessTheMediaStartRoundedDownToTheGrid() {
        let timeline = SharedTimeline(toleranceMilliseconds: 500)
        let start = MediaTime(ticks: 126_000, timescale: 90_000)
        // Media time 0 was live at 8,600 (arrival less media start): rounded down to 8,500.
        #expect(timeline.openingProgramDateTime(arrivalMilliseconds: 10_000, mediaStart: start) == 8_500 + 1_400)
        #expect(timeline.openingProgramDateTime(arrivalMilliseconds: 9_899, mediaStart: start) == 8_000 + 1_400)
        #expect(timeline.openingProgramDateTime(arrivalMilliseconds: 9_900, mediaStart: start) == 8_500 + 1_400)
        // A 64-bit fMP4 decode time does not overflow.
        let late = MediaTime(ticks: Int64.max / 2, timescale: 1_000_000)
        _ = timeline.openingProgramDateTime(arrivalMilliseconds: 10_000, mediaStart: late)
    }

    /// The limit stated in docs/redundancy.md: two origins whose arrival straddles a grid line anchor half a second
    /// apart (a test that documents it, so a change of the rule is seen).
    @Test func arrivalsStraddlingAGridLineAnchorOneGridApart() {
        let timeline = SharedTimeline(toleranceMilliseconds: 500)
        let start = MediaTime(ticks: 126_000, timescale: 90_000)
        let a = timeline.openingProgramDateTime(arrivalMilliseconds: 1_899, mediaStart: start)
        let b = timeline.openingProgramDateTime(arrivalMilliseconds: 1_901, mediaStart: start)
        #expect(b - a == 500)
    }
}
