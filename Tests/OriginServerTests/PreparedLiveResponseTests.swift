import Testing

@testable import OriginServer

/// The server-side store of prepared `/live` answers follows what the core publishes.
@Suite("Prepared live answers: kept per published version, freed with retention")
struct PreparedLiveResponseTests {
    @Test func preparedSegmentsAreFreedOnceTheirSegmentsLeaveRetention() throws {
        let stack = try OriginTestStack()
        try stack.slots(3)
        let connection = try stack.connect()
        for msn in 0..<3 {
            #expect(try connection.request("GET", "/live/ch/360p/\(msn).ts").status == 200)
        }
        #expect(stack.handler.preparedLive.segmentUsage.count == 3)
        // Slide segments 0-2 out of the window and out of retention; the next playlist read prunes them.
        try stack.slots(40)
        #expect(try connection.request("GET", "/live/ch/360p/index.m3u8").status == 200)
        #expect(stack.handler.preparedLive.segmentUsage.count == 0)
    }

    @Test func pruningToTheLatestSnapshotFreesSegmentsNobodyAskedForSince() throws {
        let stack = try OriginTestStack()
        try stack.slots(3)
        let connection = try stack.connect()
        #expect(try connection.request("GET", "/live/ch/180p/0.ts").status == 200)
        #expect(stack.handler.preparedLive.segmentUsage.count == 1)
        try stack.slots(40)
        let channel = try #require(stack.origin.channel(named: OriginTestStack.channel))
        stack.handler.preparedLive.prune(to: channel.snapshot)
        #expect(stack.handler.preparedLive.segmentUsage.count == 0)
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
