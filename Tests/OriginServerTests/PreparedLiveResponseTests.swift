import OriginCore
import TestSupport
import Testing

@testable import OriginServer

/// The server-side store of prepared `/live` answers follows what the core publishes.
@Suite("Prepared live answers: kept per published version, freed with retention", .offThePool)
struct PreparedLiveResponseTests {
    @Test func preparedSegmentsAreFreedOnceTheirSegmentsLeaveRetention() throws {
        let stack = try OriginTestStack()
        try stack.slots(3)
        let connection = try stack.connect()
        for msn in 0..<3 {
            #expect(try connection.request("GET", "/live/ch/360p/\(msn).ts").status == 200)
        }
        #expect(stack.handler.live.prepared.segmentUsage.count == 3)
        // Slide segments 0-2 out of the window and out of retention; the next playlist read prunes them.
        try stack.slots(40)
        #expect(try connection.request("GET", "/live/ch/360p/index.m3u8").status == 200)
        #expect(stack.handler.live.prepared.segmentUsage.count == 0)
    }

    @Test func pruningToTheLatestSnapshotFreesSegmentsNobodyAskedForSince() throws {
        let stack = try OriginTestStack()
        try stack.slots(3)
        let connection = try stack.connect()
        #expect(try connection.request("GET", "/live/ch/180p/0.ts").status == 200)
        #expect(stack.handler.live.prepared.segmentUsage.count == 1)
        try stack.slots(40)
        let channel = try #require(stack.origin.channel(named: OriginTestStack.channel))
        stack.handler.live.prepared.prune(to: channel.snapshot)
        #expect(stack.handler.live.prepared.segmentUsage.count == 0)
    }

    @Test func aPartIsAnsweredFromOnePreparedAnswerFreedOnceItsPartStopsAnswering() throws {
        let stack = try LowLatencyChannelServingTests.lowLatencyStack()
        for _ in 0..<3 { try stack.slot(chunkSize: 1316) }
        let playlist = try stack.get("/live/ch/360p/index.m3u8")
        let uri = try #require(LowLatencyChannelServingTests.edge(playlist.text).lastPart)
        let before = stack.handler.live.prepared.segmentUsage.count
        let first = try stack.get("/live/ch/360p/\(uri)")
        let second = try stack.get("/live/ch/360p/\(uri)")
        #expect(first.status == 200 && second.status == 200)
        #expect(!first.body.isEmpty && first.body == second.body)
        #expect(first.header("Cache-Control") == second.header("Cache-Control"))
        #expect(first.header("ETag") != nil && first.header("ETag") == second.header("ETag"))
        #expect(stack.handler.live.prepared.segmentUsage.count == before + 1)
        // A range is cut from the same bytes, not from the prepared answer.
        let range = try stack.get("/live/ch/360p/\(uri)", headers: [("Range", "bytes=0-187")])
        #expect(range.status == 206)
        #expect(range.body == Array(first.body.prefix(188)))
        // Once the part's segment leaves retention (and its parts stop answering), the prepared answer goes.
        try stack.slots(40)
        #expect(try stack.get("/live/ch/360p/index.m3u8").status == 200)
        #expect(try stack.get("/live/ch/360p/\(uri)").status == 404)
        #expect(stack.handler.live.prepared.segmentUsage.count == 0)
    }

    @Test func aNewPlaylistVersionReplacesThePreparedOne() throws {
        let stack = try OriginTestStack()
        try stack.slots(3)
        let connection = try stack.connect()
        let first = try connection.request("GET", "/live/ch/360p/index.m3u8")
        try stack.slot()
        let second = try connection.request("GET", "/live/ch/360p/index.m3u8")
        #expect(first.text != second.text)
        #expect(second.text.hasSuffix("\n3.ts\n"))
    }
}
