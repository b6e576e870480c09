import Foundation
import IngestLoop
import OriginServer
import TestSupport
import Testing

@testable import OriginCore

/// Media pushes to a Low-Latency channel over HTTP: the body is cut into parts while it arrives.
@Suite("Streamed ingest over HTTP")
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

    @Test func aSegmentPostedInPiecesListsPartsBeforeItsBodyEnds() throws {
        let stack = try Self.lowLatencyStack()
        stack.clock.advance(seconds: 2)
        try Self.pushWholeSegment(stack)
        let bytes = stack.nextSegment("360p")
        let ends = TestSourceFeed.videoFrameEnds(bytes)
        let connection = try stack.connect()
        try Self.startPost(connection, "0.ts")
        try Self.sendFrames(connection, stack, bytes, ends, 0..<25)
        try waitUntil("parts listed while the body arrives") {
            try stack.playlistText("360p").split(separator: "\n").filter { $0.hasPrefix("#EXT-X-PART:") }.count >= 2
        }
        #expect(try !stack.playlistText("360p").contains("\n1.ts\n"))
        try Self.sendFrames(connection, stack, bytes, ends, 25..<50)
        try connection.send("0\r\n\r\n")
        let answer = try connection.readResponse(method: "POST")
        #expect(answer.status == 201, "\(answer.text)")
        let playlist = try stack.playlistText("360p")
        let uri = try #require(playlist.split(separator: "\n").first { $0.hasSuffix(".ts") && !$0.hasPrefix("#") })
        let segment = try stack.get("/live/ch/360p/\(uri)")
        #expect(segment.status == 200)
        #expect(segment.body == bytes)
    }

    @Test func aSecondConcurrentPushIsRefusedWith409() throws {
        let stack = try Self.lowLatencyStack()
        stack.clock.advance(seconds: 2)
        try Self.pushWholeSegment(stack)
        let bytes = stack.nextSegment("360p")
        let ends = TestSourceFeed.videoFrameEnds(bytes)
        let first = try stack.connect()
        try Self.startPost(first, "0.ts")
        try Self.sendFrames(first, stack, bytes, ends, 0..<12)
        try waitUntil("the first push's first part") {
            stack.origin.channel(named: "ch")?.snapshot.renditions["360p"]?.lowLatency?.lastPart != nil
        }
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
        var connection: RawHTTPConnection? = try stack.connect()
        try Self.startPost(connection!, "0.ts")
        try Self.sendFrames(connection!, stack, bytes, ends, 0..<27)
        try waitUntil("two parts listed") { (rendition()?.lowLatency?.lastPart?.part ?? 0) >= 1 }
        let msn = try #require(rendition()?.lowLatency?.lastPart?.msn)
        connection = nil
        try waitUntil("the abandoned push to close a short segment") {
            rendition()?.entries.contains { $0.msn == msn } == true
        }
        let entry = try #require(rendition()?.entries.first { $0.msn == msn })
        #expect(entry.durationMilliseconds < 2000)
        #expect(entry.durationMilliseconds >= 800)
        let served = try #require(entry.bytes?.array)
        #expect(served == Array(bytes[0..<served.count]))
    }

    @Test func regularChannelsStillTakePushesWhole() throws {
        let stack = try OriginTestStack(renditions: ["360p"])
        try stack.slot(chunkSize: 1000)
        #expect(try stack.playlistText("360p").contains("#EXTINF:2.000,"))
        #expect(try !stack.playlistText("360p").contains("#EXT-X-PART"))
    }
}
