import Foundation
import HLSPackaging
import LiveTimeline
import OriginServer
import SharedBytes
import TestSourceInput
import TestSupport
import Testing

@testable import OriginCore

/// Media pushes to a Low-Latency channel over HTTP: the body is cut into parts while it arrives.
@Suite("Streamed ingest over HTTP", .offThePool)
struct StreamingIngestTests {
    static func lowLatencyStack() throws -> OriginTestStack {
        try OriginTestStack(renditions: ["360p"]) { configuration in
            configuration.origin.channels[0].lowLatency = LowLatencyConfiguration(partTarget: 0.4)
            configuration.origin.channels[0].targetDuration = 2
        }
    }

    /// Streams one whole segment (one chunk per frame) so the rendition lists parts from then on.
    static func pushWholeSegment(_ stack: OriginTestStack, file: String = "first.ts") throws {
        let bytes = stack.nextSegment("360p")
        let connection = try stack.connect()
        try startPost(connection, file)
        try sendFrames(connection, stack, bytes, TestSourceFeed.videoFrameEnds(bytes), 0..<50)
        try connection.send("0\r\n\r\n")
        let answer = try connection.readResponse(method: "POST")
        guard answer.status == 201 else { throw TestFailure("first segment answered \(answer.status): \(answer.text)") }
    }

    /// One HTTP chunk of bytes.
    static func chunk<S: Collection<UInt8>>(_ bytes: S) -> [UInt8] {
        Array(String(bytes.count, radix: 16).utf8) + [13, 10] + Array(bytes) + [13, 10]
    }

    /// Starts a chunked POST of a segment (the head only).
    static func startPost(_ connection: RawHTTPConnection, _ file: String) throws {
        try connection.send(
            "POST /ingest/ch/360p/\(file) HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n")
    }

    /// Sends frames `range` of a segment as one chunk each, the clock moving 10 ms before each (less than a frame:
    /// the server may read a burst of pieces late, and must not take the clock's run for a stalled push).
    static func sendFrames(
        _ connection: RawHTTPConnection, _ stack: OriginTestStack, _ bytes: [UInt8], _ ends: [Int], _ range: Range<Int>
    ) throws {
        for frame in range {
            stack.clock.advance(seconds: 0.01)
            try connection.send(chunk(bytes[(frame == 0 ? 0 : ends[frame - 1])..<ends[frame]]))
        }
    }

    /// The EXT-X-PART lines after the playlist's last segment URI: the parts of the segment still being pushed (the
    /// parts of closed segments stay listed as well).
    static func partsInProgress(_ playlist: String) -> Int {
        let lines = playlist.split(separator: "\n")
        let lastURI = lines.lastIndex { !$0.hasPrefix("#") } ?? -1
        return lines[(lastURI + 1)...].filter { $0.hasPrefix("#EXT-X-PART:") }.count
    }

    /// The MSN of the newest part listed in the rendition (the whole first segment's, before the next push).
    static func lastPartMSN(_ stack: OriginTestStack) -> UInt64? {
        stack.origin.channel(named: "ch")?.snapshot.renditions["360p"]?.lowLatency?.lastPart?.msn
    }

    /// Byte arrays compared outside `#expect`: on a mismatch swift-testing diffs the operands element by element
    /// (Myers, quadratic in the differences), which takes minutes on a segment's megabyte.
    static func sameBytes(_ served: [UInt8], _ expected: ArraySlice<UInt8>) -> Bool { served[...] == expected }

    /// Where two byte arrays first differ, for the failure message.
    static func firstDifference(_ served: [UInt8], _ expected: ArraySlice<UInt8>) -> String {
        let index = zip(served, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        let at = index.map(String.init) ?? "none"
        return "\(served.count) bytes served, \(expected.count) expected, first difference at \(at)"
    }

    @Test func aSegmentPostedInPiecesListsPartsBeforeItsBodyEnds() throws {
        let stack = try Self.lowLatencyStack()
        stack.clock.advance(seconds: 2)
        try Self.pushWholeSegment(stack)
        let bytes = stack.nextSegment("360p")
        let ends = TestSourceFeed.videoFrameEnds(bytes)
        let connection = try stack.connect()
        try Self.startPost(connection, "0.ts")
        try Self.sendFrames(connection, stack, bytes, ends, 0..<25)
        try waitUntil("parts of the segment in progress listed while the body arrives") {
            try Self.partsInProgress(stack.playlistText("360p")) >= 2
        }
        #expect(try !stack.playlistText("360p").contains("\n1.ts\n"))
        try Self.sendFrames(connection, stack, bytes, ends, 25..<50)
        try connection.send("0\r\n\r\n")
        let answer = try connection.readResponse(method: "POST")
        #expect(answer.status == 201, "\(answer.text)")
        let playlist = try stack.playlistText("360p")
        let uri = try #require(playlist.split(separator: "\n").last { $0.hasSuffix(".ts") && !$0.hasPrefix("#") })
        let segment = try stack.get("/live/ch/360p/\(uri)")
        #expect(segment.status == 200)
        let same = Self.sameBytes(segment.body, bytes[...])
        #expect(same, "\(Self.firstDifference(segment.body, bytes[...]))")
    }

    @Test func aSecondConcurrentPushIsRefusedWith409() throws {
        let stack = try Self.lowLatencyStack()
        stack.clock.advance(seconds: 2)
        try Self.pushWholeSegment(stack)
        let bytes = stack.nextSegment("360p")
        let ends = TestSourceFeed.videoFrameEnds(bytes)
        let wholeMSN = try #require(Self.lastPartMSN(stack))
        let first = try stack.connect()
        try Self.startPost(first, "0.ts")
        try Self.sendFrames(first, stack, bytes, ends, 0..<12)
        try waitUntil("the first push's first part") { (Self.lastPartMSN(stack) ?? wholeMSN) > wholeMSN }
        let second = try stack.request("POST", "/ingest/ch/360p/1.ts", body: bytes, chunkSize: 4096)
        #expect(second.status == 409, "\(second.text)")
        #expect(second.text.contains("still being pushed"))
        try Self.sendFrames(first, stack, bytes, ends, 12..<50)
        try first.send("0\r\n\r\n")
        let firstAnswer = try first.readResponse(method: "POST")
        #expect(firstAnswer.status == 201, "\(firstAnswer.status) \(firstAnswer.text)")
    }

    @Test func dashManifestPushesAreAnswered204AndIgnored() throws {
        let stack = try Self.lowLatencyStack()
        let answer = try stack.request("PUT", "/ingest/ch/360p/manifest.mpd", body: Array("<MPD/>".utf8))
        #expect(answer.status == 204)
        #expect(answer.body.isEmpty)
        let posted = try stack.request("POST", "/ingest/ch/360p/manifest.mpd", body: Array("<MPD/>".utf8))
        #expect(posted.status == 204)
    }

    @Test func aDisconnectMidBodyLeavesAShortSegment() throws {
        let stack = try Self.lowLatencyStack()
        stack.clock.advance(seconds: 2)
        try Self.pushWholeSegment(stack)
        let bytes = stack.nextSegment("360p")
        let ends = TestSourceFeed.videoFrameEnds(bytes)
        let rendition = { stack.origin.channel(named: "ch")?.snapshot.renditions["360p"] }
        let wholeMSN = try #require(Self.lastPartMSN(stack))
        var connection: RawHTTPConnection? = try stack.connect()
        try Self.startPost(connection!, "0.ts")
        try Self.sendFrames(connection!, stack, bytes, ends, 0..<27)
        try waitUntil("two parts of the pushed segment listed") {
            guard let last = rendition()?.lowLatency?.lastPart else { return false }
            return last.msn > wholeMSN && last.part >= 1
        }
        let msn = try #require(rendition()?.lowLatency?.lastPart?.msn)
        connection = nil
        let closed = { rendition()?.entries.contains { $0.msn == msn } == true }
        // libmicrohttpd usually reports the closed connection at once (abandon); now and then, under a loaded test
        // run, it has not within seconds: then the stall rule (no byte for max(1 s, 3 part targets)) must close the
        // segment the same way. Either way the encoder's vanished push leaves a short segment of its listed parts.
        if (try? waitUntil("the abandoned push to close a short segment", timeout: .seconds(3), closed)) == nil {
            stack.clock.advance(seconds: 1.3)
            stack.origin.tick()
            try waitUntil("the stalled push to close a short segment", closed)
        }
        let entry = try #require(rendition()?.entries.first { $0.msn == msn })
        #expect(entry.durationMilliseconds < 2000)
        #expect(entry.durationMilliseconds >= 800)
        let served = try #require(entry.bytes?.array)
        let isPrefix = Self.sameBytes(served, bytes.prefix(served.count))
        #expect(isPrefix, "\(Self.firstDifference(served, bytes.prefix(served.count)))")
    }

    @Test func regularChannelsStillTakePushesWhole() throws {
        let stack = try OriginTestStack(renditions: ["360p"])
        try stack.slot(chunkSize: 1000)
        #expect(try stack.playlistText("360p").contains("#EXTINF:2.000,"))
        #expect(try !stack.playlistText("360p").contains("#EXT-X-PART"))
    }
}
