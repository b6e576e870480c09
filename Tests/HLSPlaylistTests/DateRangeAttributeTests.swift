import HLSPlaylist
import TestSupport
import Testing

@Suite("DateRange attributes: one declaration of names, JSON fields and value types", .offThePool)
struct DateRangeAttributeTests {
    @Test("tag names and JSON fields, in the order the tag renders them")
    func namesAndFields() {
        #expect(
            DateRangeAttribute.allCases.map(\.name) == [
                "ID", "CLASS", "START-DATE", "CUE", "END-DATE", "DURATION", "PLANNED-DURATION", "SCTE35-CMD",
                "SCTE35-OUT", "SCTE35-IN", "END-ON-NEXT",
            ])
        #expect(
            DateRangeAttribute.allCases.map(\.field) == [
                "id", "class", "startDate", "cue", "endDate", "duration", "plannedDuration", "scte35.cmd",
                "scte35.out", "scte35.in", "endOnNext",
            ])
        #expect(DateRangeAttribute.scte35Out.topLevelField == "scte35")
        #expect(DateRangeAttribute.scte35Out.nestedKey == "out")
        #expect(DateRangeAttribute.plannedDuration.topLevelField == "plannedDuration")
        #expect(DateRangeAttribute.plannedDuration.nestedKey == nil)
    }

    @Test("looked up by tag name; client attributes are not among them")
    func lookupByName() {
        for attribute in DateRangeAttribute.allCases {
            #expect(DateRangeAttribute(name: attribute.name) == attribute)
        }
        #expect(DateRangeAttribute(name: "X-AD-ID") == nil)
        #expect(DateRangeAttribute(name: "id") == nil)
    }

    @Test("a date range's values by attribute, nil where the tag leaves one out")
    func valuesByAttribute() {
        let start = ProgramDateTime(millisecondsSince1970: 1_795_416_545_123)
        let minimal = DateRange(id: "a", startDate: start)
        #expect(minimal[.id] == .quotedString("a"))
        #expect(minimal[.startDate] == .quotedString("2026-11-23T06:49:05.123Z"))
        for attribute in DateRangeAttribute.allCases where attribute != .id && attribute != .startDate {
            #expect(minimal[attribute] == nil, "\(attribute.name)")
        }
        let full = DateRange(
            id: "b", classAttribute: "c", startDate: start, cue: ["PRE", "ONCE"], duration: 2.5, plannedDuration: 3,
            endOnNext: true, scte35Out: [0xFC])
        #expect(full[.classAttribute] == .quotedString("c"))
        #expect(full[.cue] == .quotedString("PRE,ONCE"))
        #expect(full[.duration] == .decimal(2.5))
        #expect(full[.plannedDuration] == .decimal(3))
        #expect(full[.scte35Out] == .hexadecimal([0xFC]))
        #expect(full[.endOnNext] == .enumerated("YES"))
        #expect(DateRangeAttribute.allCases.filter { full[$0] == nil } == [.endDate, .scte35Command, .scte35In])
    }
}
