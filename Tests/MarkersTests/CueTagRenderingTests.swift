import Foundation
import HLSPlaylist
import Markers
import SCTE35
import Testing

@Suite("Cue tag modes: DATERANGE, EXT-X-CUE-OUT/-CONT/-IN on segment boundaries, EXT-OATCLS-SCTE35")
struct CueTagRenderingTests {
    /// A book with a 5 s break (SCTE35-OUT) spliced at `splice` seconds and a plain chapter marker.
    func book(splice: Double, duration: Double? = 5, plannedDuration: Double? = nil) throws -> MarkerBook {
        var book = MarkerBook()
        _ = try book.add(
            MarkerRequest(
                id: "brk", startDate: date(splice), duration: duration, plannedDuration: plannedDuration, scte35: .out),
            nowMilliseconds: markerT0)
        _ = try book.add(MarkerRequest(id: "chapter", startDate: date(splice), duration: 5), nowMilliseconds: markerT0)
        return book
    }

    @Test("daterange mode (the default) renders the date ranges only, as before the setting")
    func daterangeModeIsTodaysOutput() throws {
        let book = try book(splice: 101)
        let listed = entries(from: 10, count: 6, startSeconds: 100)
        let overlay = book.overlay(entries: listed)
        #expect(overlay == book.overlay(entries: listed, cueTags: CueTagOptions(mode: .daterange)))
        #expect(overlay.extraTags.isEmpty)
        #expect(overlay.dateRanges[10]?.map(\.id) == ["brk", "chapter"])
        #expect(overlay.dateRanges.count == 1)
    }

    @Test("cue mode: CUE-OUT on the first segment starting at or after the splice, never on the one it splits")
    func cueOutNeverSplitsASegment() throws {
        // Segments start at 100, 102, 104, ...; the splice at 101 falls inside segment 10.
        let overlay = try book(splice: 101).overlay(
            entries: entries(from: 10, count: 6, startSeconds: 100), cueTags: CueTagOptions(mode: .cue))
        #expect(overlay.extraTags[10] == nil)
        #expect(overlay.extraTags[11] == ["#EXT-X-CUE-OUT:5.000"])
        #expect(overlay.extraTags[12] == ["#EXT-X-CUE-OUT-CONT:ElapsedTime=3.000,Duration=5.000"])
        // The break ends at 106: segment 13 starts there.
        #expect(overlay.extraTags[13] == ["#EXT-X-CUE-IN"])
        #expect(overlay.extraTags.count == 3)
        // The break's DATERANGE gives way to the cue tags; the chapter (no SCTE-35) keeps its own.
        #expect(overlay.dateRanges.values.flatMap { $0 }.map(\.id) == ["chapter"])
    }

    @Test("a splice on a segment boundary (or within the PDT rounding before it) puts CUE-OUT on that segment")
    func spliceOnABoundary() throws {
        for splice in [102.0, 101.995] {
            let overlay = try book(splice: splice).overlay(
                entries: entries(from: 10, count: 6, startSeconds: 100), cueTags: CueTagOptions(mode: .cue))
            #expect(overlay.extraTags[11] == ["#EXT-X-CUE-OUT:5.000"], "splice \(splice)")
            #expect(overlay.extraTags[12]?.first?.hasPrefix("#EXT-X-CUE-OUT-CONT:ElapsedTime=") == true)
            #expect(overlay.extraTags[13]?.first?.hasPrefix("#EXT-X-CUE-OUT-CONT:ElapsedTime=") == true)
            #expect(overlay.extraTags[14] == ["#EXT-X-CUE-IN"], "splice \(splice)")
        }
    }

    @Test("both mode renders the DATERANGE and the cue tags")
    func bothMode() throws {
        let book = try book(splice: 102)
        let listed = entries(from: 10, count: 6, startSeconds: 100)
        let both = book.overlay(entries: listed, cueTags: CueTagOptions(mode: .both))
        #expect(both.dateRanges == book.overlay(entries: listed).dateRanges)
        #expect(both.extraTags == book.overlay(entries: listed, cueTags: CueTagOptions(mode: .cue)).extraTags)
        #expect(both.extraTags[11] == ["#EXT-X-CUE-OUT:5.000"])
    }

    @Test("a window that starts mid-break lists CUE-OUT-CONT with the elapsed time on its first segment")
    func midBreakJoin() throws {
        let book = try book(splice: 101, duration: 30)
        let late = book.overlay(
            entries: entries(from: 15, count: 4, startSeconds: 110), cueTags: CueTagOptions(mode: .cue))
        #expect(late.extraTags[15] == ["#EXT-X-CUE-OUT-CONT:ElapsedTime=9.000,Duration=30.000"])
        #expect(late.extraTags[18] == ["#EXT-X-CUE-OUT-CONT:ElapsedTime=15.000,Duration=30.000"])
        #expect(!late.extraTags.values.joined().contains { $0.hasPrefix("#EXT-X-CUE-OUT:") })
        // The same segments carry the same text in a window that still lists the break's start.
        let early = book.overlay(
            entries: entries(from: 10, count: 9, startSeconds: 100), cueTags: CueTagOptions(mode: .cue))
        for msn in UInt64(15)...18 { #expect(early.extraTags[msn] == late.extraTags[msn]) }
        // A window whose first segment starts at the splice shows the CUE-OUT there.
        let atSplice = try self.book(splice: 110, duration: 30).overlay(
            entries: entries(from: 15, count: 4, startSeconds: 110), cueTags: CueTagOptions(mode: .cue))
        #expect(atSplice.extraTags[15] == ["#EXT-X-CUE-OUT:30.000"])
        // A break over before the window's first segment leaves no cue tag.
        let after = try self.book(splice: 90, duration: 5).overlay(
            entries: entries(from: 15, count: 4, startSeconds: 110), cueTags: CueTagOptions(mode: .cue))
        #expect(after.extraTags.isEmpty)
    }

    @Test("a break without a duration: CUE-OUT without one, CONT without Duration, CUE-IN once the cue-in closes it")
    func openBreakClosedByCueIn() throws {
        var book = MarkerBook()
        _ = try book.add(MarkerRequest(id: "open", startDate: date(102), scte35: .out), nowMilliseconds: markerT0)
        let listed = entries(from: 10, count: 8, startSeconds: 100)
        let open = book.overlay(entries: listed, cueTags: CueTagOptions(mode: .cue))
        #expect(open.extraTags[11] == ["#EXT-X-CUE-OUT"])
        #expect(open.extraTags[12] == ["#EXT-X-CUE-OUT-CONT:ElapsedTime=2.000"])
        #expect(open.extraTags[17] == ["#EXT-X-CUE-OUT-CONT:ElapsedTime=12.000"])
        // The cue-in (PATCH) at 108: the tags already shown keep their text, CUE-IN follows.
        var closed = book
        _ = try closed.close(id: "open", patch: MarkerPatch(endDate: date(108)), nowMilliseconds: markerT0)
        let after = closed.overlay(entries: listed, cueTags: CueTagOptions(mode: .cue))
        for msn in UInt64(11)...13 { #expect(after.extraTags[msn] == open.extraTags[msn]) }
        #expect(after.extraTags[14] == ["#EXT-X-CUE-IN"])
        #expect(after.extraTags.count == 4)
        // An explicit cue-in marker (SCTE35-IN only) at 107 ends it on the first segment at or after it.
        var separate = book
        _ = try separate.add(MarkerRequest(id: "in", startDate: date(107), scte35: .in), nowMilliseconds: markerT0)
        let ended = separate.overlay(entries: listed, cueTags: CueTagOptions(mode: .cue, oatcls: true))
        #expect(ended.extraTags[13] == ["#EXT-X-CUE-OUT-CONT:ElapsedTime=4.000"])
        let section = try #require(separate.markers["in"]?.scte35In)
        #expect(
            ended.extraTags[14] == ["#EXT-OATCLS-SCTE35:" + Data(section).base64EncodedString(), "#EXT-X-CUE-IN"])
        #expect(ended.dateRanges.isEmpty, "cue mode shows the cue-in marker by its CUE-IN")
    }

    @Test("a PLANNED-DURATION is announced; the end still comes from the cue-in")
    func plannedDurationIsAnnounced() throws {
        var book = try book(splice: 102, duration: nil, plannedDuration: 20)
        _ = try book.close(id: "brk", patch: MarkerPatch(duration: 4), nowMilliseconds: markerT0)
        let overlay = book.overlay(
            entries: entries(from: 10, count: 6, startSeconds: 100), cueTags: CueTagOptions(mode: .cue))
        #expect(overlay.extraTags[11] == ["#EXT-X-CUE-OUT:20.000"])
        #expect(overlay.extraTags[12] == ["#EXT-X-CUE-OUT-CONT:ElapsedTime=2.000,Duration=20.000"])
        #expect(overlay.extraTags[13] == ["#EXT-X-CUE-IN"])
    }

    @Test("elapsed time and duration have three decimals, also for uneven segment lengths")
    func elapsedTimeFormatting() throws {
        var book = MarkerBook()
        _ = try book.add(
            MarkerRequest(id: "b", startDate: date(100), duration: 10.5, scte35: .out), nowMilliseconds: markerT0)
        let overlay = book.overlay(
            entries: entries(from: 0, count: 7, startSeconds: 100, duration: 2002), cueTags: CueTagOptions(mode: .cue))
        #expect(
            overlay.extraTags.sorted { $0.key < $1.key }.flatMap(\.value) == [
                "#EXT-X-CUE-OUT:10.500",
                "#EXT-X-CUE-OUT-CONT:ElapsedTime=2.002,Duration=10.500",
                "#EXT-X-CUE-OUT-CONT:ElapsedTime=4.004,Duration=10.500",
                "#EXT-X-CUE-OUT-CONT:ElapsedTime=6.006,Duration=10.500",
                "#EXT-X-CUE-OUT-CONT:ElapsedTime=8.008,Duration=10.500",
                "#EXT-X-CUE-OUT-CONT:ElapsedTime=10.010,Duration=10.500",
                "#EXT-X-CUE-IN",
            ])
    }

    @Test("oatcls puts the base64 SCTE35-OUT before CUE-OUT and the SCTE35-IN before CUE-IN, in every mode")
    func oatcls() throws {
        var book = try book(splice: 102)
        _ = try book.close(id: "brk", patch: MarkerPatch(scte35: .in), nowMilliseconds: markerT0)
        let marker = try #require(book.markers["brk"])
        let out = "#EXT-OATCLS-SCTE35:" + Data(try #require(marker.scte35Out)).base64EncodedString()
        let cueIn = "#EXT-OATCLS-SCTE35:" + Data(try #require(marker.scte35In)).base64EncodedString()
        let listed = entries(from: 10, count: 6, startSeconds: 100)
        let cue = book.overlay(entries: listed, cueTags: CueTagOptions(mode: .cue, oatcls: true))
        #expect(cue.extraTags[11] == [out, "#EXT-X-CUE-OUT:5.000"])
        #expect(cue.extraTags[14] == [cueIn, "#EXT-X-CUE-IN"])
        // The line decodes back to the section.
        let decoded = try #require(Data(base64Encoded: String(out.dropFirst("#EXT-OATCLS-SCTE35:".count))))
        #expect(try SpliceInfoSection(validating: [UInt8](decoded)).bytes == marker.scte35Out)
        let dateranges = book.overlay(entries: listed, cueTags: CueTagOptions(mode: .daterange, oatcls: true))
        #expect(dateranges.extraTags == [11: [out], 14: [cueIn]])
        #expect(dateranges.dateRanges[11]?.map(\.id) == ["brk", "chapter"])
    }

    @Test("GAP entries, the segment in progress and any rendition: tags depend on MSN and PDT alone")
    func sameTagsForTheSameSlots() throws {
        let book = try book(splice: 101, duration: 8)
        // Two renditions list the same slots with different durations recorded (a GAP entry has the nominal one).
        let video = entries(from: 10, count: 7, startSeconds: 100)
        let audio = video.map {
            ListedEntry(
                msn: $0.msn, programDateTimeMilliseconds: $0.programDateTimeMilliseconds,
                durationMilliseconds: $0.msn == 12 ? 2000 : 1990)
        }
        let options = CueTagOptions(mode: .both, oatcls: true)
        #expect(book.overlay(entries: video, cueTags: options) == book.overlay(entries: audio, cueTags: options))
    }
}
