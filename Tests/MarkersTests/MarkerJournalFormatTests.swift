import Foundation
import HLSPlaylist
import Markers
import Testing

@Suite("Marker journal format")
struct MarkerJournalFormatTests {
    /// A marker as journals written before the date range schema was declared once hold it: every attribute under
    /// its property name, flat beside the request and the times.
    static let journaled =
        #"{"classAttribute":"ad","clientAttributes":[{"name":"X-AD-ID","value":{"string":{"_0":"abc"}}}],"#
        + #""createdMilliseconds":1767225600000,"cue":["ONCE"],"duration":30.5,"endDate":{"millisecondsSince1970":"#
        + #"1767225630500},"endOnNext":false,"id":"brk","plannedDuration":30.5,"request":{"classAttribute":"ad","#
        + #""clientAttributes":[{"name":"X-AD-ID","value":{"string":{"_0":"abc"}}}],"cue":["ONCE"],"endOnNext":false,"#
        + #""id":"brk","plannedDuration":30.5,"scte35":{"out":{}}},"scte35In":[252,1],"scte35Out":[252,0],"#
        + #""spliceEventId":7,"startDate":{"millisecondsSince1970":1767225600000},"updatedMilliseconds":1767225630500}"#

    @Test("a journaled marker reads back with every attribute and is written again byte for byte")
    func roundTrip() throws {
        let marker = try JSONDecoder().decode(Marker.self, from: Data(Self.journaled.utf8))
        #expect(marker.id == "brk")
        #expect(marker.classAttribute == "ad")
        #expect(marker.startDate == ProgramDateTime(millisecondsSince1970: 1_767_225_600_000))
        #expect(marker.cue == ["ONCE"])
        #expect(marker.endDate == ProgramDateTime(millisecondsSince1970: 1_767_225_630_500))
        #expect(marker.duration == 30.5)
        #expect(marker.plannedDuration == 30.5)
        #expect(marker.scte35Out == [252, 0])
        #expect(marker.scte35In == [252, 1])
        #expect(marker.scte35Command == nil)
        #expect(!marker.endOnNext)
        #expect(marker.clientAttributes == [MarkerAttribute(name: "X-AD-ID", value: .string("abc"))])
        #expect(marker.spliceEventId == 7)
        #expect(marker.request.scte35 == .out)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(String(decoding: try encoder.encode(marker), as: UTF8.self) == Self.journaled)
    }
}
