import Foundation
import HLSPlaylist
import Markers
import SCTE35
import Testing

/// A time_signal section with one segmentation descriptor (program segmentation, no UPID), built from the field table
/// of SCTE 35 10.3.3.1.
func timeSignalSection(
    eventId: UInt32, type: UInt8, pts: UInt64?, durationTicks: UInt64? = nil, cancel: Bool = false
) -> [UInt8] {
    var command: [UInt8] = []
    if let pts {
        command = [0xFE | UInt8(pts >> 32 & 1)] + (0..<4).map { UInt8(truncatingIfNeeded: pts >> (24 - 8 * UInt64($0))) }
    } else {
        command = [0x7F]
    }
    var body: [UInt8] = Array("CUEI".utf8)
    body += (0..<4).map { UInt8(truncatingIfNeeded: eventId >> (24 - 8 * UInt32($0))) }
    body.append(cancel ? 0xFF : 0x7F)
    if !cancel {
        body.append(0x80 | (durationTicks == nil ? 0 : 0x40) | 0x3F)  // program segmentation, not restricted
        if let durationTicks { body += (0..<5).map { UInt8(truncatingIfNeeded: durationTicks >> (32 - 8 * UInt64($0))) } }
        body += [0x00, 0x00, type, 0x01, 0x01]  // upid type 0, length 0, type, segment_num, segments_expected
        if [0x30, 0x32, 0x34, 0x36].contains(type) { body += [0, 0] }
    }
    let descriptors = [0x02, UInt8(body.count)] + body
    return SpliceInfoSection(commandType: 0x06, command: command, descriptors: descriptors).bytes
}

func spliceInsertSection(
    eventId: UInt32, out: Bool, pts: UInt64? = nil, durationSeconds: Double? = nil, autoReturn: Bool = true
) -> [UInt8] {
    SpliceInfoSection(
        spliceInsert: SpliceInsert(
            eventId: eventId, outOfNetwork: out, breakDuration: durationSeconds.map { SpliceInsert.ticks(seconds: $0) },
            autoReturn: autoReturn, spliceTime: pts)
    ).bytes
}

@Suite("Markers from SCTE-35 cues in the stream")
struct InbandCueTests {
    /// A segment starting at PTS 900000 (10 s) listed at markerT0.
    static let segmentPTS: Int64 = 900_000

    /// The cues of `section` read from a 2 s segment (by default the one starting at PTS 900000, listed at markerT0).
    static func cues(
        _ section: [UInt8], segmentPTS: Int64 = segmentPTS, at pdt: Int64 = markerT0, duration: Int64 = 2000
    ) throws -> [InbandCue] {
        try InbandCue.cues(
            section: section, segmentStartPTS: segmentPTS, segmentMilliseconds: pdt, segmentDurationMilliseconds: duration)
    }

    @Test("a timed splice maps through the segment's first PTS onto its PDT")
    func timedSplice() throws {
        let cue = try #require(try Self.cues(spliceInsertSection(eventId: 7, out: true, pts: 900_000 + 270_000)).first)
        #expect(cue.spliceMilliseconds == markerT0 + 3000)
        #expect(cue.splicePTS == 1_170_000)
    }

    @Test("a splice past the 33-bit wrap maps forward, one before the segment start backward")
    func wrapAndBefore() throws {
        let nearWrap: Int64 = (1 << 33) - 90_000  // one second before the wrap
        let after = try #require(
            try Self.cues(spliceInsertSection(eventId: 1, out: true, pts: 45_000), segmentPTS: nearWrap, duration: 1000)
                .first)
        #expect(after.spliceMilliseconds == markerT0 + 1500)
        // Before the segment start: mapped backward, then placed at the carrying segment's end as a late cue.
        #expect(
            InbandCue.milliseconds(pts: (1 << 33) - 45_000, segmentStartPTS: 45_000, segmentMilliseconds: markerT0)
                == markerT0 - 1000)
        let before = try #require(
            try Self.cues(spliceInsertSection(eventId: 2, out: false, pts: (1 << 33) - 45_000), segmentPTS: 45_000)
                .first)
        #expect(before.late)
        #expect(before.spliceMilliseconds == markerT0 + 2000)
        // A segment start given unwrapped (above 2^33) is the same point.
        let unwrapped = try #require(
            try Self.cues(
                spliceInsertSection(eventId: 1, out: true, pts: 45_000), segmentPTS: nearWrap + (1 << 33), duration: 1000
            ).first)
        #expect(unwrapped.spliceMilliseconds == markerT0 + 1500)
    }

    @Test("pts_adjustment is added before mapping, modulo 2^33")
    func adjustment() throws {
        var section = try SpliceInfoSection(validating: spliceInsertSection(eventId: 3, out: true, pts: (1 << 33) - 90_000))
        section.ptsAdjustment = 180_000  // the splice lands 1 s past the wrap: PTS 90000
        let cue = try #require(try Self.cues(section.bytes, segmentPTS: 0, duration: 1000).first)
        #expect(cue.splicePTS == 90_000)
        #expect(cue.spliceMilliseconds == markerT0 + 1000)
    }

    @Test("across a discontinuity the cue follows the segment it came in, not the timeline before")
    func discontinuity() throws {
        // Before the discontinuity the stream ran at PTS 50 000 000; after it, it restarts near 0 and the segment
        // is listed at markerT0 + 60 s. The cue's PTS is on the new timeline.
        let section = spliceInsertSection(eventId: 4, out: true, pts: 180_000)
        let cue = try #require(try Self.cues(section, segmentPTS: 90_000, at: markerT0 + 60_000, duration: 1000).first)
        #expect(cue.spliceMilliseconds == markerT0 + 61_000)
    }

    @Test("an immediate splice is placed at the end of the segment it came in (its ID keeps that segment's start PTS)")
    func immediate() throws {
        let cue = try #require(try Self.cues(spliceInsertSection(eventId: 5, out: true, durationSeconds: 30)).first)
        #expect(cue.spliceMilliseconds == markerT0 + 2000)
        #expect(cue.splicePTS == UInt64(Self.segmentPTS))
        #expect(!cue.late)
    }

    @Test("a timed splice before the end of the segment that carried it is late: placed at that end")
    func lateSplice() throws {
        // Splice 0.5 s into the carrying segment (0.5 s after its start PTS).
        let cue = try #require(try Self.cues(spliceInsertSection(eventId: 6, out: true, pts: 900_000 + 45_000)).first)
        #expect(cue.late)
        #expect(cue.spliceMilliseconds == markerT0 + 2000)
        #expect(cue.splicePTS == 945_000)
        // A splice exactly at the end (the next segment's start) is on time.
        let onTime = try #require(try Self.cues(spliceInsertSection(eventId: 6, out: true, pts: 900_000 + 180_000)).first)
        #expect(!onTime.late)
        #expect(onTime.spliceMilliseconds == markerT0 + 2000)
    }

    @Test("two auto-return breaks of one event id are both listed: an ended break is not open")
    func autoReturnBreaksReuseTheirEventId() throws {
        var book = MarkerBook()
        // Event 40: a 10 s auto-return break at 3 s, then another at 63 s (encoders reuse the id).
        let first = try #require(
            try Self.cues(spliceInsertSection(eventId: 40, out: true, pts: 1_170_000, durationSeconds: 10)).first)
        let second = try #require(
            try Self.cues(
                spliceInsertSection(eventId: 40, out: true, pts: 1_170_000 + 5_400_000, durationSeconds: 10),
                segmentPTS: 900_000 + 5_400_000, at: markerT0 + 60_000
            ).first)
        #expect(book.apply(first, nowMilliseconds: markerT0) == .created(first.markerId))
        #expect(book.apply(second, nowMilliseconds: markerT0 + 60_000) == .created(second.markerId))
        #expect(book.markers.count == 2)
        #expect(book.markers[second.markerId]?.startDate == date(63))
        // The second's cue-in (sent though it auto-returns) closes the second, not nothing.
        let cueIn = try #require(
            try Self.cues(
                spliceInsertSection(eventId: 40, out: false, pts: 1_170_000 + 6_300_000),
                segmentPTS: 900_000 + 6_300_000, at: markerT0 + 70_000
            ).first)
        #expect(book.apply(cueIn, nowMilliseconds: markerT0 + 70_000) == .closed(second.markerId))
        #expect(book.markers[first.markerId]?.scte35In == nil)
    }

    @Test("a cue read from the newest listed segment never changes a line already listed, in any tag mode")
    func cueTagsLandOnSegmentsNotYetListed() throws {
        let sections = [
            spliceInsertSection(eventId: 21, out: true, durationSeconds: 30),  // immediate
            spliceInsertSection(eventId: 22, out: true, pts: 900_000 + 45_000, durationSeconds: 30),  // late
        ]
        for section in sections {
            for mode in [CueTagMode.daterange, .cue, .both] {
                let options = CueTagOptions(mode: mode)
                // Segment 14 (PDT markerT0, PTS 900000) carries the cue and is the newest listed.
                let published = entries(from: 10, count: 5, startSeconds: -8)
                var book = MarkerBook()
                let before = book.overlay(entries: published, cueTags: options)
                for cue in try Self.cues(section) { _ = book.apply(cue, nowMilliseconds: markerT0) }
                let after = book.overlay(entries: published, cueTags: options)
                #expect(after == before, "mode \(mode)")
                // The break shows up on the next segment.
                let next = book.overlay(entries: entries(from: 10, count: 6, startSeconds: -8), cueTags: options)
                #expect(next.dateRanges[15] != nil || next.extraTags[15] != nil, "mode \(mode)")
                #expect(next.dateRanges.keys.allSatisfy { $0 == 15 } && next.extraTags.keys.allSatisfy { $0 == 15 })
            }
        }
    }

    @Test("an out-point makes one marker with the section as SCTE35-OUT; repeats and re-pushes change nothing")
    func dedupe() throws {
        let section = spliceInsertSection(eventId: 0xABCD, out: true, pts: 1_170_000, durationSeconds: 30)
        var book = MarkerBook()
        let cue = try #require(try Self.cues(section).first)
        #expect(book.apply(cue, nowMilliseconds: markerT0) == .created("scte35-0000abcd-00011da50"))
        // The same cue in the next segment (encoders repeat it until the splice), in another rendition, pushed again.
        let repeated = try #require(try Self.cues(section, segmentPTS: 1_080_000, at: markerT0 + 2000).first)
        #expect(book.apply(repeated, nowMilliseconds: markerT0 + 2000) == .unchanged)
        #expect(book.apply(cue, nowMilliseconds: markerT0 + 4000) == .unchanged)
        #expect(book.markers.count == 1)
        let marker = try #require(book.markers["scte35-0000abcd-00011da50"])
        #expect(marker.scte35Out == section)
        #expect(marker.startDate == date(3))
        #expect(marker.duration == 30)
        #expect(marker.source == .inband)
        #expect(marker.spliceEventId == 0xABCD)
    }

    @Test("an immediate out repeated in later segments (other start PTS) is one marker")
    func immediateRepeat() throws {
        let section = spliceInsertSection(eventId: 9, out: true, durationSeconds: 20)
        var book = MarkerBook()
        for index in 0..<3 {
            let cue = try #require(
                try Self.cues(section, segmentPTS: 900_000 + Int64(index) * 180_000, at: markerT0 + Int64(index) * 2000)
                    .first)
            _ = book.apply(cue, nowMilliseconds: markerT0)
        }
        #expect(book.markers.count == 1)
    }

    @Test("a cue-in closes the open out-point of its event: SCTE35-IN, END-DATE and DURATION")
    func cueInCloses() throws {
        var book = MarkerBook()
        let out = spliceInsertSection(eventId: 11, out: true, pts: 1_170_000)
        let cueIn = spliceInsertSection(eventId: 11, out: false, pts: 1_170_000 + 2_700_000)
        _ = book.apply(try #require(try Self.cues(out).first), nowMilliseconds: markerT0)
        let closing = try #require(try Self.cues(cueIn, segmentPTS: 3_600_000, at: markerT0 + 30_000).first)
        #expect(book.apply(closing, nowMilliseconds: markerT0) == .closed("scte35-0000000b-00011da50"))
        #expect(book.apply(closing, nowMilliseconds: markerT0) == .unchanged)
        #expect(book.markers.count == 1)
        let marker = try #require(book.markers.values.first)
        #expect(marker.scte35In == cueIn)
        #expect(marker.endDate == date(33))
        #expect(marker.duration == 30)
    }

    @Test("time_signal: break start then break end make one closed marker; PLANNED-DURATION from the segmentation")
    func segmentationBreak() throws {
        var book = MarkerBook()
        let start = timeSignalSection(eventId: 0x2001, type: 0x22, pts: 1_170_000, durationTicks: 5_400_000)
        let end = timeSignalSection(eventId: 0x2001, type: 0x23, pts: 1_170_000 + 5_400_000)
        _ = book.apply(try #require(try Self.cues(start).first), nowMilliseconds: markerT0)
        _ = book.apply(try #require(try Self.cues(end, segmentPTS: 6_300_000, at: markerT0 + 60_000).first), nowMilliseconds: markerT0)
        #expect(book.markers.count == 1)
        let marker = try #require(book.markers.values.first)
        #expect(marker.segmentationTypeId == 0x22)
        #expect(marker.plannedDuration == 60)
        #expect(marker.scte35Out == start)
        #expect(marker.scte35In == end)
        #expect(marker.endDate == date(63))
    }

    @Test("program and chapter cues become SCTE35-CMD markers that end: DURATION from the segmentation, else 0")
    func commands() throws {
        var book = MarkerBook()
        let chapter = timeSignalSection(eventId: 0x3001, type: 0x20, pts: 1_170_000, durationTicks: 900_000)
        let outcome = book.apply(try #require(try Self.cues(chapter).first), nowMilliseconds: markerT0)
        guard case .created(let id) = outcome else { Issue.record("\(outcome)"); return }
        #expect(book.markers[id]?.scte35Command == chapter)
        #expect(book.markers[id]?.duration == 10)
        // Without a segmentation duration: a point (DURATION=0), so it leaves the window.
        let start = timeSignalSection(eventId: 0x3002, type: 0x10, pts: 1_170_000)
        guard case .created(let point) = book.apply(try #require(try Self.cues(start).first), nowMilliseconds: 0) else {
            Issue.record("program start made no marker")
            return
        }
        #expect(book.markers[point]?.duration == 0)
        #expect(book.prune(windowStartMilliseconds: markerT0 + 10_000, graceMilliseconds: 0, nowMilliseconds: 0)
            .contains(point))
        #expect(book.markers[id]?.scte35Out == nil)
    }

    @Test("a cancel before the splice withdraws the marker for good; after the splice it ends it")
    func cancel() throws {
        var book = MarkerBook()
        let out = spliceInsertSection(eventId: 21, out: true, pts: 1_170_000 + 900_000)  // splice at +13 s
        let outCue = try #require(try Self.cues(out).first)
        _ = book.apply(outCue, nowMilliseconds: markerT0)
        let cancel = SpliceInfoSection(
            commandType: 0x05, command: [0, 0, 0, 21, 0xFF])  // splice_event_id 21, cancel indicator
        let cancelCue = try #require(try Self.cues(cancel.bytes, segmentPTS: 1_080_000, at: markerT0 + 2000).first)
        #expect(cancelCue.cue.cancelled)
        #expect(book.apply(cancelCue, nowMilliseconds: markerT0) == .cancelled(outCue.markerId))
        #expect(book.markers.isEmpty)
        // The out still repeated by the encoder does not come back.
        #expect(book.apply(outCue, nowMilliseconds: markerT0) == .unchanged)
        #expect(book.markers.isEmpty)

        // Cancelled once the break has started: it ends at the cancel.
        let started = try #require(
            try Self.cues(spliceInsertSection(eventId: 22, out: true, pts: 900_000)).first)
        _ = book.apply(started, nowMilliseconds: markerT0)
        let late = try #require(
            try Self.cues(SpliceInfoSection(commandType: 0x05, command: [0, 0, 0, 22, 0xFF]).bytes,
                segmentPTS: 1_800_000, at: markerT0 + 10_000).first)
        #expect(book.apply(late, nowMilliseconds: markerT0) == .cancelled(started.markerId))
        // A cancel has no splice time: like an immediate cue it takes effect at the end of its carrying segment.
        #expect(book.markers[started.markerId]?.endDate == date(12))
    }

    @Test("two origins fed the same segments list identical tags")
    func redundantBooksAgree() throws {
        let sections = [
            (spliceInsertSection(eventId: 31, out: true, pts: 1_170_000, durationSeconds: 15), Int64(900_000), markerT0),
            (spliceInsertSection(eventId: 31, out: true, pts: 1_170_000, durationSeconds: 15), 1_080_000, markerT0 + 2000),
            (timeSignalSection(eventId: 32, type: 0x30, pts: 1_500_000, durationTicks: 900_000), 1_440_000, markerT0 + 6000),
            (timeSignalSection(eventId: 32, type: 0x31, pts: 2_400_000), 2_340_000, markerT0 + 16_000),
        ]
        var first = MarkerBook()
        var second = MarkerBook()
        for (section, pts, pdt) in sections {
            for cue in try Self.cues(section, segmentPTS: pts, at: pdt) { _ = first.apply(cue, nowMilliseconds: 1) }
        }
        // The second origin gets the segments late and twice (a retry), at another clock.
        for (section, pts, pdt) in sections + sections {
            for cue in try Self.cues(section, segmentPTS: pts, at: pdt) { _ = second.apply(cue, nowMilliseconds: 99) }
        }
        #expect(first.sortedMarkers.map(\.renderedTag) == second.sortedMarkers.map(\.renderedTag))
        #expect(first.markers.count == 2)
    }

    @Test("the placement error is the start of the first segment at or after the splice minus the splice")
    func placement() throws {
        var book = MarkerBook()
        // Segments of 2 s from markerT0; splices at +3 s (placed on the segment at +4 s) and +6 s (on a boundary).
        _ = book.apply(
            try #require(try Self.cues(spliceInsertSection(eventId: 41, out: true, pts: 1_170_000)).first),
            nowMilliseconds: 0)
        _ = book.apply(
            try #require(try Self.cues(spliceInsertSection(eventId: 42, out: true, pts: 1_440_000)).first),
            nowMilliseconds: 0)
        let segments = (0..<5).map { (start: markerT0 + Int64($0) * 2000, duration: Int64(2000)) }
        let placement = try #require(book.inbandPlacement(segments: segments))
        #expect(placement.markers == 2)
        #expect(placement.lastErrorMilliseconds == 0)
        #expect(placement.maxErrorMilliseconds == 1000)
    }

    @Test("the status places an out-point on the segment its CUE-OUT is on, within the same PDT rounding allowance")
    func placementMatchesTheCueTag() throws {
        var book = MarkerBook()
        // A splice 5 ms after the segment at +4 s starts (within the 10 ms rounding): CUE-OUT goes on that segment.
        _ = book.apply(
            try #require(try Self.cues(spliceInsertSection(eventId: 43, out: true, pts: 900_000 + 360_450)).first),
            nowMilliseconds: 0)
        let listed = entries(from: 0, count: 5, startSeconds: 0)
        let overlay = book.overlay(entries: listed, cueTags: CueTagOptions(mode: .cue))
        #expect(overlay.extraTags[2] == ["#EXT-X-CUE-OUT"])
        let placement = try #require(
            book.inbandPlacement(segments: listed.map { (start: $0.programDateTimeMilliseconds, duration: 2000) }))
        #expect(placement.markers == 1)
        #expect(placement.lastErrorMilliseconds == -5)
    }

    @Test("a posted marker cannot take a reserved id: scte35-... (in-band cues) or {id}/interstitial")
    func reservedIdsAreRefused() throws {
        var book = MarkerBook()
        let cue = try #require(try Self.cues(spliceInsertSection(eventId: 44, out: true, pts: 1_170_000)).first)
        for id in [cue.markerId, "brk/interstitial"] {
            #expect(throws: MarkerError.self, "\(id)") {
                try book.add(MarkerRequest(id: id, startDate: date(3), duration: 30), nowMilliseconds: markerT0)
            }
        }
        do {
            _ = try book.add(MarkerRequest(id: cue.markerId, startDate: date(3)), nowMilliseconds: markerT0)
            Issue.record("the reserved id was taken")
        } catch {
            #expect(error.reason == .invalid)
            #expect("\(error)".contains("'scte35-', reserved"), "\(error)")
        }
        // The stream's cue still makes its marker.
        #expect(book.apply(cue, nowMilliseconds: markerT0) == .created(cue.markerId))
    }

    @Test("a marker made from a cue keeps its source and segmentation type through the journal")
    func journalRoundTrip() throws {
        var book = MarkerBook()
        _ = book.apply(
            try #require(try Self.cues(timeSignalSection(eventId: 51, type: 0x34, pts: 1_170_000)).first),
            nowMilliseconds: 0)
        let encoded = try JSONEncoder().encode(book)
        let decoded = try JSONDecoder().decode(MarkerBook.self, from: encoded)
        #expect(decoded == book)
        #expect(decoded.markers.values.first?.source == .inband)
        #expect(decoded.markers.values.first?.segmentationTypeId == 0x34)
    }
}
