@testable import HLSPackaging
import HLSPlaylist
import MediaProbe
import SharedBytes
import TestSupport
import Testing

@testable import LiveTimeline

@Suite("Delivery directives: reading the query", .offThePool)
struct DeliveryDirectivesParsingTests {
    @Test func readsTheThreeDirectivesInAnyOrderAndIgnoresOtherNames() throws {
        let directives = try #require(
            try DeliveryDirectives(query: [
                ("_HLS_skip", "v2"), ("token", "abc"), ("_HLS_part", "3"), ("_HLS_msn", "1008"),
            ]))
        #expect(directives == DeliveryDirectives(msn: 1008, part: 3, skip: .segmentsAndDateRanges))
        #expect(try DeliveryDirectives(query: [("_HLS_skip", "YES")]) == DeliveryDirectives(skip: .segments))
        #expect(try DeliveryDirectives(query: [("_HLS_msn", "0")]) == DeliveryDirectives(msn: 0))
    }

    @Test func noneOfTheThreeIsNil() throws {
        #expect(try DeliveryDirectives(query: []) == nil)
        #expect(try DeliveryDirectives(query: [("start", "10"), ("_hls_msn", "1")]) == nil)
    }

    @Test(
        arguments: [
            [("_HLS_part", "1")],
            [("_HLS_msn", "-1")],
            [("_HLS_msn", "1.0")],
            [("_HLS_msn", "")],
            [("_HLS_msn", nil)],
            [("_HLS_msn", "18446744073709551616")],
            [("_HLS_msn", "0x10")],
            [("_HLS_msn", "1"), ("_HLS_part", "+1")],
            [("_HLS_skip", "yes")],
            [("_HLS_skip", "v3")],
            [("_HLS_skip", nil)],
        ] as [[(String, String?)]])
    func malformedDirectivesGiveA400Reason(query: [(String, String?)]) {
        #expect(throws: DirectiveError.self) {
            try DeliveryDirectives(query: query.map { (name: $0.0, value: $0.1) })
        }
    }
}

extension DeliveryDirectives {
    fileprivate init(msn: UInt64? = nil, part: Int? = nil, skip: SkipRequest? = nil) {
        self = try! DeliveryDirectives(query: [("_HLS_skip", "YES")])!
        self.msn = msn
        self.part = part
        self.skip = skip
    }
}

@Suite("Delivery directives: answer, wait or refuse", .offThePool)
struct DeliveryDirectivesDecisionTests {
    /// A rendition listing segments 1000...`lastSegment` (each with 5 parts) and, when `openParts` > 0, segment
    /// `lastSegment + 1` in progress with that many parts.
    static func rendition(
        lastSegment: UInt64 = 1007, openParts: Int = 2, lowLatency: Bool = true, skip: Bool = true
    ) -> RenditionSnapshot {
        let entries = (1000...lastSegment).map {
            WindowEntry(
                msn: $0, durationMilliseconds: 2000, programDateTimeMilliseconds: Int64($0) * 2000,
                discontinuity: false, content: .gap(filler: nil), container: .mpegTS, initSectionVersion: nil)
        }
        func parts(_ count: Int) -> [PartEntry] {
            (0..<count).map {
                PartEntry(index: $0, durationMilliseconds: 400, independent: $0 == 0, content: .bytes(SharedBytes([1])))
            }
        }
        var byMSN: [UInt64: [PartEntry]] = [:]
        for msn in (lastSegment - 2)...lastSegment { byMSN[msn] = parts(5) }
        var last = PartPosition(msn: lastSegment, part: 4)
        if openParts > 0 {
            byMSN[lastSegment + 1] = parts(openParts)
            last = PartPosition(msn: lastSegment + 1, part: openParts - 1)
        }
        let snapshot = LowLatencySnapshot(
            partTargetMilliseconds: 400, parts: byMSN, lastPart: last,
            preloadHint: PartPosition(msn: last.msn, part: last.part + 1),
            skipPlaylist: skip ? SharedBytes([1]) : nil, skipPlaylistV2: skip ? SharedBytes([2]) : nil,
            maximumPartsPerSegment: 7)
        return RenditionSnapshot(
            name: "720p", playlist: SharedBytes([0]), version: 1, modifiedMilliseconds: 0, targetDuration: 2,
            entries: entries, initSections: [:], currentInitVersion: nil, lowLatency: lowLatency ? snapshot : nil)
    }

    static func decide(
        _ query: [(String, String)], _ rendition: RenditionSnapshot = rendition()
    ) throws
        -> DirectiveDecision
    {
        let directives = try #require(try DeliveryDirectives(query: query.map { (name: $0.0, value: $0.1) }))
        return directives.decide(against: rendition)
    }

    @Test func aRenditionWithoutLowLatencyIgnoresTheDirectives() throws {
        let plain = Self.rendition(lowLatency: false)
        #expect(try Self.decide([("_HLS_msn", "2000"), ("_HLS_skip", "YES")], plain) == .answerNow(skip: nil))
        #expect(try Self.decide([("_HLS_msn", "1009"), ("_HLS_part", "3")], plain) == .answerNow(skip: nil))
    }

    @Test func skipAloneAnswersNowWithTheDeltaWhenOneExists() throws {
        #expect(try Self.decide([("_HLS_skip", "YES")]) == .answerNow(skip: .segments))
        #expect(try Self.decide([("_HLS_skip", "v2")]) == .answerNow(skip: .segmentsAndDateRanges))
        #expect(try Self.decide([("_HLS_skip", "YES")], Self.rendition(skip: false)) == .answerNow(skip: nil))
    }

    @Test func anMSNMoreThanTwoAheadIsRefused() throws {
        // Last part is 1008.1: 1010 is allowed (waits), 1011 refused.
        #expect(
            try Self.decide([("_HLS_msn", "1010")])
                == .wait(until: PartPosition(msn: 1010, part: 0), wholeSegment: true, skip: nil))
        guard case .refuse = try Self.decide([("_HLS_msn", "1011")]) else {
            Issue.record("1011 should be refused")
            return
        }
        guard case .refuse = try Self.decide([("_HLS_msn", "1011"), ("_HLS_part", "0")]) else {
            Issue.record("1011.0 should be refused")
            return
        }
    }

    @Test func aPartBeyondWhatASegmentCanHaveIsRefused() throws {
        guard case .refuse = try Self.decide([("_HLS_msn", "1008"), ("_HLS_part", "8")]) else {
            Issue.record("part 8 > 7 should be refused")
            return
        }
        #expect(
            try Self.decide([("_HLS_msn", "1008"), ("_HLS_part", "7")])
                == .wait(until: PartPosition(msn: 1008, part: 7), wholeSegment: false, skip: nil))
    }

    @Test func aListedPartOrALaterOneAnswersNow() throws {
        #expect(try Self.decide([("_HLS_msn", "1008"), ("_HLS_part", "1")]) == .answerNow(skip: nil))
        #expect(try Self.decide([("_HLS_msn", "1008"), ("_HLS_part", "0")]) == .answerNow(skip: nil))
        #expect(
            try Self.decide([("_HLS_msn", "1006"), ("_HLS_part", "3"), ("_HLS_skip", "v2")])
                == .answerNow(skip: .segmentsAndDateRanges))
        // A segment whose parts left the playlist long ago.
        #expect(try Self.decide([("_HLS_msn", "1001"), ("_HLS_part", "2")]) == .answerNow(skip: nil))
    }

    @Test func theNextPartWaits() throws {
        #expect(
            try Self.decide([("_HLS_msn", "1008"), ("_HLS_part", "2"), ("_HLS_skip", "YES")])
                == .wait(until: PartPosition(msn: 1008, part: 2), wholeSegment: false, skip: .segments))
        #expect(
            try Self.decide([("_HLS_msn", "1009"), ("_HLS_part", "0")])
                == .wait(until: PartPosition(msn: 1009, part: 0), wholeSegment: false, skip: nil))
    }

    @Test func aPartBeyondACompleteSegmentMeansPartZeroOfTheNext() throws {
        // 1007 is complete with parts 0...4; 1008.0 is listed, so 1007.5 is satisfied.
        #expect(try Self.decide([("_HLS_msn", "1007"), ("_HLS_part", "5")]) == .answerNow(skip: nil))
        // With no segment in progress (last part 1007.4), 1007.5 waits for 1008.0, as does 1008.0 itself.
        let closed = Self.rendition(openParts: 0)
        let next = DirectiveDecision.wait(until: PartPosition(msn: 1008, part: 0), wholeSegment: false, skip: nil)
        #expect(try Self.decide([("_HLS_msn", "1007"), ("_HLS_part", "5")], closed) == next)
        #expect(try Self.decide([("_HLS_msn", "1007"), ("_HLS_part", "6")], closed) == next)
        #expect(try Self.decide([("_HLS_msn", "1008"), ("_HLS_part", "0")], closed) == next)
        #expect(try Self.decide([("_HLS_msn", "1007"), ("_HLS_part", "4")], closed) == .answerNow(skip: nil))
    }

    @Test func aClientsPositionFromBeforeAnOriginRestartIsAnsweredAtOnce() throws {
        // After a restart the window is restored without parts (they are not stored) and nothing is in progress.
        let full = Self.rendition(openParts: 0)
        let restored = RenditionSnapshot(
            name: full.name, playlist: full.playlist, version: 1, modifiedMilliseconds: 0, targetDuration: 2,
            entries: full.entries, initSections: [:], currentInitVersion: nil,
            lowLatency: LowLatencySnapshot(
                partTargetMilliseconds: 400, parts: [:], lastPart: nil, preloadHint: nil, skipPlaylist: nil,
                skipPlaylistV2: nil, maximumPartsPerSegment: 7))
        #expect(try Self.decide([("_HLS_msn", "1006"), ("_HLS_part", "3")], restored) == .answerNow(skip: nil))
        #expect(try Self.decide([("_HLS_msn", "1007")], restored) == .answerNow(skip: nil))
        // The newest segment lists no parts, so any part of it means part 0 of the next (RFC 8216bis 6.2.5.2): a
        // wait, not a refusal. MSNs far ahead are still refused.
        let next = DirectiveDecision.wait(until: PartPosition(msn: 1008, part: 0), wholeSegment: false, skip: nil)
        #expect(try Self.decide([("_HLS_msn", "1007"), ("_HLS_part", "0")], restored) == next)
        #expect(try Self.decide([("_HLS_msn", "1007"), ("_HLS_part", "5")], restored) == next)
        guard case .refuse = try Self.decide([("_HLS_msn", "1010"), ("_HLS_part", "0")], restored) else {
            Issue.record("1010.0 should be refused: more than 2 beyond 1007")
            return
        }
    }

    @Test func msnAloneWaitsUntilTheSegmentIsComplete() throws {
        #expect(try Self.decide([("_HLS_msn", "1007")]) == .answerNow(skip: nil))
        #expect(try Self.decide([("_HLS_msn", "1003"), ("_HLS_skip", "YES")]) == .answerNow(skip: .segments))
        // 1008 is in progress: its URI line is not listed yet.
        #expect(
            try Self.decide([("_HLS_msn", "1008")])
                == .wait(until: PartPosition(msn: 1008, part: 0), wholeSegment: true, skip: nil))
        #expect(
            try Self.decide([("_HLS_msn", "1009"), ("_HLS_skip", "v2")])
                == .wait(until: PartPosition(msn: 1009, part: 0), wholeSegment: true, skip: .segmentsAndDateRanges))
    }
}
