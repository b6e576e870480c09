import HLSPlaylist
import Markers
import SCTE35
import Testing

/// 2026-01-01T00:00:00.000Z
let markerT0: Int64 = 1_767_225_600_000

func date(_ secondsAfterT0: Double) -> ProgramDateTime {
    ProgramDateTime(millisecondsSince1970: markerT0 + Int64((secondsAfterT0 * 1000).rounded()))
}

/// FNV-1a 32 of the ID: the splice_event_id the book gives a marker (no collisions in these tests).
func fnv(_ text: String) -> UInt32 {
    var hash: UInt32 = 0x811C_9DC5
    for byte in text.utf8 { hash = (hash ^ UInt32(byte)) &* 0x0100_0193 }
    return hash
}

func hex(_ bytes: [UInt8]) -> String { AttributeList.render(.hexadecimal(bytes)) }

/// One listed entry of a window, as the overlay sees it (the live window's `WindowEntry` and the DVR's `DVREntry` are
/// the others).
struct ListedEntry: MarkerOverlayEntry {
    var msn: UInt64
    var programDateTimeMilliseconds: Int64
    var durationMilliseconds: Int64
    var endMilliseconds: Int64 { programDateTimeMilliseconds + durationMilliseconds }
}

func entries(from first: UInt64, count: Int, startSeconds: Double, duration: Int64 = 2000) -> [ListedEntry] {
    (0..<count).map { index in
        ListedEntry(
            msn: first + UInt64(index),
            programDateTimeMilliseconds: markerT0 + Int64(startSeconds * 1000) + Int64(index) * duration,
            durationMilliseconds: duration)
    }
}

@Suite("Marker book: attributes, validation, idempotency, cue-in, overlay, pruning")
struct MarkerBookTests {
    @Test("every attribute is rendered in its form and order")
    func everyAttribute() throws {
        var book = MarkerBook()
        let command = SpliceInfoSection(commandType: 0x00, command: []).bytes
        let request = MarkerRequest(
            id: "ad-1", classAttribute: "com.example.ad", startDate: date(0), cue: ["ONCE"], endDate: date(30),
            duration: 30, plannedDuration: 30.5, scte35: .raw(command: command, out: nil, in: nil),
            clientAttributes: [
                MarkerAttribute(name: "X-PRICE", value: .number(12.5)),
                MarkerAttribute(name: "X-AD-ID", value: .string("abc")),
                MarkerAttribute(name: "X-PAYLOAD", value: .hexadecimal([0x0A, 0x0B])),
            ])
        let (marker, created) = try book.add(request, nowMilliseconds: markerT0)
        #expect(created)
        #expect(
            marker.renderedTag
                == "#EXT-X-DATERANGE:ID=\"ad-1\",CLASS=\"com.example.ad\",START-DATE=\"2026-01-01T00:00:00.000Z\","
                + "CUE=\"ONCE\",END-DATE=\"2026-01-01T00:00:30.000Z\",DURATION=30,PLANNED-DURATION=30.5,"
                + "X-AD-ID=\"abc\",X-PAYLOAD=0x0A0B,X-PRICE=12.5,SCTE35-CMD=\(hex(command))")

        let next = try book.add(
            MarkerRequest(id: "break", classAttribute: "com.example.break", startDate: date(40), endOnNext: true),
            nowMilliseconds: markerT0
        ).marker
        #expect(
            next.renderedTag
                == "#EXT-X-DATERANGE:ID=\"break\",CLASS=\"com.example.break\",START-DATE=\"2026-01-01T00:00:40.000Z\","
                + "END-ON-NEXT=YES")
    }

    @Test("START-DATE defaults to now on the shared clock")
    func defaultStart() throws {
        var book = MarkerBook()
        let marker = try book.add(MarkerRequest(id: "now"), nowMilliseconds: markerT0 + 1234).marker
        #expect(marker.renderedTag == "#EXT-X-DATERANGE:ID=\"now\",START-DATE=\"2026-01-01T00:00:01.234Z\"")
    }

    @Test("scte35 out and in are encoded splice_inserts with the marker's event id and break duration")
    func generatedSCTE35() throws {
        var book = MarkerBook()
        let out = try book.add(
            MarkerRequest(id: "ad-2", startDate: date(0), duration: 30, scte35: .out), nowMilliseconds: markerT0
        ).marker
        let expected = SpliceInfoSection(
            spliceInsert: SpliceInsert(eventId: fnv("ad-2"), outOfNetwork: true, breakDuration: 2_700_000)
        ).bytes
        #expect(out.scte35Out == expected)
        #expect(out.spliceEventId == fnv("ad-2"))
        #expect(out.renderedTag.hasSuffix(",DURATION=30,SCTE35-OUT=\(hex(expected))"))

        let planned = try book.add(
            MarkerRequest(id: "ad-3", startDate: date(0), plannedDuration: 15, scte35: .out), nowMilliseconds: markerT0
        ).marker
        let plannedInsert = try #require(try SpliceInfoSection(validating: planned.scte35Out!).spliceInsert)
        #expect(plannedInsert.breakDuration == 1_350_000)
        #expect(plannedInsert.outOfNetwork)

        let open = try book.add(MarkerRequest(id: "ad-4", startDate: date(0), scte35: .out), nowMilliseconds: markerT0)
            .marker
        #expect(try SpliceInfoSection(validating: open.scte35Out!).spliceInsert?.breakDuration == nil)

        let cueIn = try book.add(MarkerRequest(id: "ad-5", startDate: date(0), scte35: .in), nowMilliseconds: markerT0)
            .marker
        #expect(
            cueIn.scte35In
                == SpliceInfoSection(spliceInsert: SpliceInsert(eventId: fnv("ad-5"), outOfNetwork: false)).bytes)
        #expect(cueIn.renderedTag.hasSuffix(",SCTE35-IN=\(hex(cueIn.scte35In!))"))
    }

    @Test("a repeated post is idempotent; a different post with the same ID is a conflict that changes nothing")
    func idempotency() throws {
        var book = MarkerBook()
        let request = MarkerRequest(id: "x", startDate: date(0), duration: 10)
        let first = try book.add(request, nowMilliseconds: markerT0)
        let again = try book.add(request, nowMilliseconds: markerT0 + 5000)
        #expect(first.created && !again.created)
        #expect(first.marker == again.marker)
        // Without START-DATE the repeat is still the same request even though "now" moved.
        let implicit = MarkerRequest(id: "y", duration: 10)
        let y1 = try book.add(implicit, nowMilliseconds: markerT0)
        let y2 = try book.add(implicit, nowMilliseconds: markerT0 + 9000)
        #expect(!y2.created && y2.marker.startDate == y1.marker.startDate)

        let before = book
        var conflicting = request
        conflicting.duration = 20
        #expect(throws: MarkerError.self) { try book.add(conflicting, nowMilliseconds: markerT0) }
        do {
            _ = try book.add(conflicting, nowMilliseconds: markerT0)
        } catch {
            #expect(error.reason == .conflict)
            #expect(error.field == "id")
        }
        #expect(book == before)
    }

    static let invalidRequests: [(MarkerRequest, String, String)] = [
        (MarkerRequest(id: "a", startDate: date(10), endDate: date(5)), "endDate", "is before START-DATE"),
        (MarkerRequest(id: "a", startDate: date(0), duration: -1), "duration", "DURATION"),
        (MarkerRequest(id: "a", startDate: date(0), plannedDuration: -0.5), "plannedDuration", "PLANNED-DURATION"),
        (MarkerRequest(id: "a", startDate: date(0), endOnNext: true), "endOnNext", "requires CLASS"),
        (
            MarkerRequest(id: "a", classAttribute: "c", startDate: date(0), duration: 5, endOnNext: true), "endOnNext",
            "forbids DURATION"
        ),
        (
            MarkerRequest(id: "a", classAttribute: "c", startDate: date(0), endDate: date(5), endOnNext: true),
            "endOnNext", "forbids END-DATE"
        ),
        (MarkerRequest(id: "a", startDate: date(0), endDate: date(5), duration: 6), "duration", "disagrees"),
        (
            MarkerRequest(
                id: "a", startDate: date(0), clientAttributes: [MarkerAttribute(name: "X-lower", value: .number(1))]),
            "clientAttributes.X-lower", "X-[A-Z0-9-]+"
        ),
        (
            MarkerRequest(
                id: "a", startDate: date(0), clientAttributes: [MarkerAttribute(name: "Y-AD", value: .number(1))]),
            "clientAttributes.Y-AD", "X-[A-Z0-9-]+"
        ),
        (
            MarkerRequest(
                id: "a", startDate: date(0), clientAttributes: [MarkerAttribute(name: "X-", value: .number(1))]),
            "clientAttributes.X-", "X-[A-Z0-9-]+"
        ),
        (
            MarkerRequest(
                id: "a", startDate: date(0), clientAttributes: [MarkerAttribute(name: "X-N", value: .number(-1))]),
            "clientAttributes.X-N", "not negative"
        ),
        (
            MarkerRequest(
                id: "a", startDate: date(0), clientAttributes: [MarkerAttribute(name: "X-S", value: .string("a\"b"))]),
            "clientAttributes.X-S", "'\"'"
        ),
        (
            MarkerRequest(
                id: "a", startDate: date(0), clientAttributes: [MarkerAttribute(name: "X-H", value: .hexadecimal([]))]),
            "clientAttributes.X-H", "empty hexadecimal"
        ),
        (MarkerRequest(id: ""), "id", "empty"),
        (MarkerRequest(id: "a/b"), "id", "'/'"),
        (MarkerRequest(id: "a\nb"), "id", "control character"),
        (MarkerRequest(id: String(repeating: "i", count: 257)), "id", "longer than 256"),
        (MarkerRequest(id: "a", classAttribute: "", startDate: date(0)), "class", "empty"),
        (MarkerRequest(id: "a", startDate: date(0), cue: ["PRE", "POST"]), "cue", "PRE and POST"),
        (
            MarkerRequest(id: "a", startDate: date(0), scte35: .raw(command: nil, out: [0xFC, 0x30], in: nil)),
            "scte35.out", "at least 20 bytes"
        ),
        (
            MarkerRequest(id: "a", startDate: date(0), scte35: .raw(command: nil, out: nil, in: nil)), "scte35",
            "at least one"
        ),
    ]

    @Test("invalid markers are refused as invalid, naming the field", arguments: invalidRequests.indices)
    func invalid(index: Int) throws {
        let (request, field, fragment) = Self.invalidRequests[index]
        var book = MarkerBook()
        do {
            _ = try book.add(request, nowMilliseconds: markerT0)
            Issue.record("accepted \(request)")
        } catch {
            #expect(error.reason == .invalid)
            #expect(error.field == field)
            #expect(error.message.hasPrefix(field))
            #expect(error.message.contains(fragment), "\(error.message)")
        }
        #expect(book.markers.isEmpty)
    }

    @Test("a raw section with a bad CRC is refused; a valid one passes through unchanged")
    func rawSections() throws {
        var book = MarkerBook()
        var section = SpliceInfoSection(spliceInsert: SpliceInsert(eventId: 77, outOfNetwork: true)).bytes
        let marker = try book.add(
            MarkerRequest(id: "raw", startDate: date(0), scte35: .raw(command: nil, out: section, in: nil)),
            nowMilliseconds: markerT0
        ).marker
        #expect(marker.scte35Out == section)
        section[section.count - 1] ^= 0xFF
        do {
            _ = try book.add(
                MarkerRequest(id: "bad", startDate: date(0), scte35: .raw(command: nil, out: nil, in: section)),
                nowMilliseconds: markerT0)
            Issue.record("accepted a bad CRC")
        } catch {
            #expect(error.field == "scte35.in")
            #expect(error.message.contains("CRC_32"))
        }
    }

    @Test("cue-in: END-DATE or DURATION added once, shown values never change")
    func close() throws {
        var book = MarkerBook()
        _ = try book.add(MarkerRequest(id: "open", startDate: date(0), plannedDuration: 30), nowMilliseconds: markerT0)
        let closed = try book.close(
            id: "open", patch: MarkerPatch(endDate: date(28)), nowMilliseconds: markerT0 + 28_000)
        #expect(closed.changed)
        #expect(
            closed.marker.renderedTag
                == "#EXT-X-DATERANGE:ID=\"open\",START-DATE=\"2026-01-01T00:00:00.000Z\","
                + "END-DATE=\"2026-01-01T00:00:28.000Z\",PLANNED-DURATION=30")
        let repeated = try book.close(
            id: "open", patch: MarkerPatch(endDate: date(28)), nowMilliseconds: markerT0 + 29_000)
        #expect(!repeated.changed && repeated.marker == closed.marker)
        let withDuration = try book.close(id: "open", patch: MarkerPatch(duration: 28), nowMilliseconds: markerT0)
        #expect(withDuration.changed && withDuration.marker.duration == 28)

        func failure(_ id: String, _ patch: MarkerPatch) -> MarkerError? {
            do {
                _ = try book.close(id: id, patch: patch, nowMilliseconds: markerT0)
                return nil
            } catch { return error }
        }
        #expect(failure("open", MarkerPatch(endDate: date(29)))?.reason == .conflict)
        #expect(failure("open", MarkerPatch(duration: 29))?.reason == .conflict)
        #expect(failure("missing", MarkerPatch(duration: 1))?.reason == .unknownMarker)
        #expect(failure("open", MarkerPatch())?.reason == .invalid)
        _ = try book.add(MarkerRequest(id: "o2", startDate: date(10)), nowMilliseconds: markerT0)
        #expect(failure("o2", MarkerPatch(endDate: date(5)))?.field == "endDate")
        #expect(failure("o2", MarkerPatch(endDate: date(20), duration: 5))?.field == "duration")
        #expect(failure("o2", MarkerPatch(duration: 1, scte35: .out))?.field == "scte35")
        _ = try book.add(
            MarkerRequest(id: "eon", classAttribute: "c", startDate: date(0), endOnNext: true),
            nowMilliseconds: markerT0)
        #expect(failure("eon", MarkerPatch(duration: 3))?.reason == .conflict)
        #expect(book.markers["o2"]?.endDate == nil)
    }

    @Test("closing a marker whose SCTE35-OUT the origin encoded adds the matching SCTE35-IN")
    func cueInSCTE35() throws {
        var book = MarkerBook()
        let out = try book.add(
            MarkerRequest(id: "brk", startDate: date(0), plannedDuration: 60, scte35: .out), nowMilliseconds: markerT0
        )
        .marker
        let closed = try book.close(id: "brk", patch: MarkerPatch(duration: 45), nowMilliseconds: markerT0).marker
        let cueIn = SpliceInfoSection(spliceInsert: SpliceInsert(eventId: fnv("brk"), outOfNetwork: false)).bytes
        #expect(closed.scte35Out == out.scte35Out)
        #expect(closed.scte35In == cueIn)
        #expect(closed.renderedTag.hasPrefix(String(out.renderedTag.prefix(while: { $0 != "S" }))))
        #expect(
            closed.renderedTag
                == "#EXT-X-DATERANGE:ID=\"brk\",START-DATE=\"2026-01-01T00:00:00.000Z\",DURATION=45,"
                + "PLANNED-DURATION=60,SCTE35-OUT=\(hex(out.scte35Out!)),SCTE35-IN=\(hex(cueIn))")
    }

    @Test("the overlay places markers on the window and leaves out future and ended ones")
    func overlay() throws {
        var book = MarkerBook()
        // Window: msn 10...15, PDT t0+100 s ... t0+112 s.
        let window = entries(from: 10, count: 6, startSeconds: 100)
        for (id, start, duration) in [
            ("before-open", 50.0, nil), ("before-ended", 50.0, 49.0), ("before-overlap", 90.0, 15.0),
            ("inside", 103.5, 1.0), ("at-start", 100.0, 0.0), ("future", 112.0, 5.0), ("last", 111.999, nil),
            ("ended-at-start", 95.0, 5.0),
        ] as [(String, Double, Double?)] {
            _ = try book.add(
                MarkerRequest(id: id, startDate: date(start), duration: duration), nowMilliseconds: markerT0)
        }
        let overlay = book.overlay(entries: window)
        let placed = overlay.dateRanges.mapValues { $0.map(\.id) }
        #expect(placed[10] == ["before-open", "before-overlap", "ended-at-start", "at-start"])
        #expect(placed[11] == ["inside"])
        #expect(placed[15] == ["last"])
        #expect(placed.count == 3)
        #expect(overlay.extraTags.isEmpty)
    }

    @Test("END-ON-NEXT ranges end where the next marker of the class starts")
    func endOnNext() throws {
        var book = MarkerBook()
        for (id, cls, start) in [("a", "c", 0.0), ("b", "other", 5.0), ("c", "c", 10.0), ("d", "c", 20.0)] {
            _ = try book.add(
                MarkerRequest(id: id, classAttribute: cls, startDate: date(start), endOnNext: true),
                nowMilliseconds: markerT0)
        }
        let ends = book.endsMilliseconds()
        #expect(ends["a"] == markerT0 + 10_000)
        #expect(ends["c"] == markerT0 + 20_000)
        #expect(ends["b"] == nil)
        #expect(ends["d"] == nil)
    }

    @Test("cue tags: CUE-OUT on the first segment after the splice, CUE-OUT-CONT while it lasts, CUE-IN after it")
    func cueTagsFollowTheBreak() throws {
        var book = MarkerBook()
        _ = try book.add(
            MarkerRequest(id: "brk", startDate: date(101), duration: 5, scte35: .out), nowMilliseconds: markerT0)
        _ = try book.add(MarkerRequest(id: "plain", startDate: date(101), duration: 5), nowMilliseconds: markerT0)
        let overlay = book.overlay(
            entries: entries(from: 10, count: 6, startSeconds: 100), cueTags: CueTagOptions(mode: .both))
        #expect(overlay.extraTags[11] == ["#EXT-X-CUE-OUT:5.000"])
        #expect(overlay.extraTags[12] == ["#EXT-X-CUE-OUT-CONT:ElapsedTime=3.000,Duration=5.000"])
        #expect(overlay.extraTags[13] == ["#EXT-X-CUE-IN"])
        #expect(overlay.extraTags.count == 3)
        // The same book without the switch adds nothing but the date ranges.
        #expect(book.overlay(entries: entries(from: 10, count: 6, startSeconds: 100)).extraTags.isEmpty)
    }

    @Test("pruning removes ended markers and keeps their IDs reserved for a day")
    func pruning() throws {
        var book = MarkerBook()
        _ = try book.add(MarkerRequest(id: "old", startDate: date(0), duration: 10), nowMilliseconds: markerT0)
        _ = try book.add(MarkerRequest(id: "open", startDate: date(0)), nowMilliseconds: markerT0)
        _ = try book.add(MarkerRequest(id: "recent", startDate: date(0), duration: 97), nowMilliseconds: markerT0)
        let removed = book.prune(
            windowStartMilliseconds: markerT0 + 100_000, graceMilliseconds: 4000, nowMilliseconds: markerT0 + 100_000)
        #expect(removed == ["old"])
        #expect(Set(book.markers.keys) == ["open", "recent"])
        do {
            _ = try book.add(MarkerRequest(id: "old", startDate: date(0), duration: 10), nowMilliseconds: markerT0)
            Issue.record("a retired ID was reused")
        } catch {
            #expect(error.reason == .conflict)
        }
        book.prune(
            windowStartMilliseconds: markerT0, graceMilliseconds: 0,
            nowMilliseconds: markerT0 + 100_001 + MarkerBook.retiredIdLifetimeMilliseconds)
        #expect(book.retiredIds.isEmpty)
    }
}
