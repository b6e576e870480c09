import HLSPlaylist
import Markers
import TestSupport
import Testing

@testable import HLSPackaging
@testable import LiveTimeline

@Suite("Low-Latency HLS: cue tags on the parent segment, never between parts", .offThePool)
struct LowLatencyCueTagTests {
    @Test func aBreakStartingWithTheSegmentInProgressIsAnnouncedBeforeItsFirstPartAndStaysThere() throws {
        var channel = try LowLatencyChannel(renditions: ["720p", "audio"], cueTags: .cue)
        for _ in 0..<4 { channel.slot() }
        // A 4 s break from the start of segment 1004, posted before its first part.
        _ = try channel.markers.add(
            MarkerRequest(
                id: "brk", startDate: ProgramDateTime(millisecondsSince1970: LowLatencyChannel.start + 8000),
                duration: 4, scte35: .out),
            nowMilliseconds: channel.now)
        channel.state.markersChanged()
        channel.publish()
        channel.begin("720p")
        channel.begin("audio")
        for _ in 0..<2 {
            channel.now += 400
            channel.step("720p")
            channel.step("audio")
        }
        let inProgress = channel.playlist("720p")
        #expect(inProgress.segmentInProgress?.extraTags == ["#EXT-X-CUE-OUT:4.000"])
        let lines = inProgress.render().split(separator: "\n").map(String.init)
        let cueOut = try #require(lines.firstIndex(of: "#EXT-X-CUE-OUT:4.000"))
        let firstPart = try #require(lines.firstIndex { $0.hasPrefix("#EXT-X-PART:") && $0.contains("\"1004.0.ts\"") })
        #expect(cueOut < firstPart)
        #expect(lines[(cueOut + 1)..<firstPart].allSatisfy { !$0.hasPrefix("#EXT-X-PART:") && !$0.hasPrefix("#EXTINF") })
        // The segment completes and two more follow: the CUE-OUT stays on 1004, CONT on 1005, CUE-IN on 1006, and
        // no cue line sits between two parts.
        for _ in 0..<3 {
            channel.now += 400
            channel.step("720p")
            channel.step("audio")
        }
        for _ in 0..<3 { channel.slot() }
        let after = channel.playlist("720p")
        for (offset, segment) in after.segments.enumerated() {
            let msn = after.mediaSequence + UInt64(offset)
            let expected: [String] =
                switch msn {
                case 1004: ["#EXT-X-CUE-OUT:4.000"]
                case 1005: ["#EXT-X-CUE-OUT-CONT:ElapsedTime=2.000,Duration=4.000"]
                case 1006: ["#EXT-X-CUE-IN"]
                default: []
                }
            #expect(segment.extraTags == expected, "msn \(msn)")
        }
        let text = after.render().split(separator: "\n").map(String.init)
        for (index, line) in text.enumerated() where line.hasPrefix("#EXT-X-CUE") {
            let previous = text[..<index].last { $0.hasPrefix("#EXT-X-PART:") || $0.hasPrefix("#EXTINF") || !$0.hasPrefix("#") }
            #expect(previous.map { !$0.hasPrefix("#EXT-X-PART:") } ?? true, "\(line) follows a part of the same segment")
        }
    }
}
