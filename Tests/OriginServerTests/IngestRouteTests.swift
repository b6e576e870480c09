import LiveTimeline
import OriginCore
import OriginServer
import TestSupport
import Testing

/// `/ingest/...` over real HTTP: accepted pushes land in the window; refused ones get a 4xx with a clear message and
/// leave the live window exactly as it was.
@Suite("Ingest route: accepted pushes, refused input, tokens", .offThePool)
struct IngestRouteTests {
    /// Every view of the live window a player sees, for before/after comparisons.
    struct WindowView: Equatable {
        let multivariant: [UInt8]
        let playlists: [String: [UInt8]]
    }

    static func window(_ stack: OriginTestStack) throws -> WindowView {
        var playlists: [String: [UInt8]] = [:]
        for rendition in ["360p", "180p"] {
            playlists[rendition] = try stack.get("/live/ch/\(rendition)/index.m3u8").body
        }
        return WindowView(multivariant: try stack.get("/live/ch/index.m3u8").body, playlists: playlists)
    }

    /// The window still moves normally after a refusal: the next slot gets the next MSN, no GAP, no discontinuity.
    static func expectWindowContinues(_ stack: OriginTestStack, nextMSN: Int) throws {
        try stack.slot()
        for rendition in ["360p", "180p"] {
            let text = try stack.playlistText(rendition)
            #expect(text.hasSuffix("\n\(nextMSN).ts\n"), "\(rendition)")
            #expect(!text.contains("#EXT-X-GAP"), "\(rendition)")
            #expect(!text.contains("#EXT-X-DISCONTINUITY\n"), "\(rendition)")
        }
    }

    @Test func chunkedPutIsAcceptedAndItsSegmentIsServed() throws {
        let stack = try OriginTestStack()
        try stack.slots(2)
        stack.clock.advance(seconds: 2)
        let bytes = stack.nextSegment("360p")
        let response = try stack.push("360p", bytes, file: "segment7.ts", chunkSize: 4096)
        #expect(response.status == 201)
        #expect(response.text.hasPrefix("360p: msn 2, 2.0 s, pdt "))
        #expect(response.header("Access-Control-Allow-Origin") == "*")
        // Slot 2 is published once every started rendition has filled it.
        #expect(try !stack.playlistText("360p").hasSuffix("\n2.ts\n"))
        #expect(try stack.push("180p", stack.nextSegment("180p")).status == 201)
        #expect(try stack.playlistText("360p").hasSuffix("\n2.ts\n"))
        #expect(try stack.get("/live/ch/360p/2.ts").body == bytes)
    }

    @Test func postIsAcceptedLikePut() throws {
        let stack = try OriginTestStack(renditions: ["360p"])
        stack.clock.advance(seconds: 2)
        let bytes = stack.nextSegment("360p")
        let response = try stack.request("POST", "/ingest/ch/360p/0.ts", body: bytes)
        #expect(response.status == 201)
        #expect(try stack.get("/live/ch/360p/0.ts").body == bytes)
    }

    @Test func deleteIsAcknowledgedAndRemovesNothing() throws {
        let stack = try OriginTestStack()
        try stack.slots(3)
        let before = try Self.window(stack)
        let delete = try stack.request("DELETE", "/ingest/ch/360p/segment0.ts")
        #expect(delete.status == 204)
        #expect(delete.body.isEmpty)
        #expect(delete.header("Access-Control-Allow-Origin") == "*")
        #expect(try Self.window(stack) == before)
        #expect(try stack.get("/live/ch/360p/0.ts").body == stack.pushed["360p"]![0])
    }

    @Test func aPlaylistHintIsReadAndChangesNothing() throws {
        let stack = try OriginTestStack()
        try stack.slots(2)
        let before = try Self.window(stack)
        let hint = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\nsegment0.ts\n"
        let response = try stack.push("360p", Array(hint.utf8), file: "index.m3u8")
        #expect(response.status == 200)
        #expect(response.text == "360p: playlist hint read (1 segments); the origin keeps its own\n")
        #expect(try Self.window(stack) == before)
        let broken = try stack.push("360p", Array("not a playlist".utf8), file: "index.m3u8")
        #expect(broken.status == 400)
        #expect(broken.text.hasPrefix("invalid playlist hint: "))
        #expect(try Self.window(stack) == before)
    }

    @Test func notMediaIsRefusedWith415AndTheWindowIsUntouched() throws {
        let stack = try OriginTestStack()
        try stack.slots(3)
        let before = try Self.window(stack)
        let response = try stack.push("360p", Array("hello, this is not a segment\n".utf8), file: "segment3.ts")
        #expect(response.status == 415)
        #expect(
            response.text
                == "not a media segment: 'segment3.ts' is not MPEG-TS, fMP4, ADTS AAC or an .m3u8 playlist "
                + "(first bytes: 68 65 6c 6c 6f 2c 20 74)\n")
        #expect(response.header("Cache-Control") == "no-store")
        #expect(response.header("Access-Control-Allow-Origin") == "*")
        let empty = try stack.push("360p", [], file: "segment3.ts")
        #expect(empty.status == 415)
        #expect(empty.text == "not a media segment: empty body\n")
        #expect(try Self.window(stack) == before)
        try Self.expectWindowContinues(stack, nextMSN: 3)
    }

    @Test func truncatedTransportStreamIsRefusedWith422AndTheWindowIsUntouched() throws {
        let stack = try OriginTestStack()
        try stack.slots(3)
        let before = try Self.window(stack)
        // The start of a segment already pushed (the test stream's generator does not move on).
        let response = try stack.push("360p", Array(stack.pushed["360p"]![0].prefix(1000)), file: "segment3.ts")
        #expect(response.status == 422)
        #expect(response.text.hasPrefix("segment could not be probed: "))
        #expect(response.header("Access-Control-Allow-Origin") == "*")
        #expect(try Self.window(stack) == before)
        try Self.expectWindowContinues(stack, nextMSN: 3)
    }

    @Test(arguments: [nil, 16 * 1024] as [Int?])
    func bodyOverTheLimitIsRefusedWith413AndTheWindowIsUntouched(chunkSize: Int?) throws {
        let stack = try OriginTestStack { $0.origin.ingest.maxSegmentBytes = 300_000 }
        try stack.slots(3)
        let before = try Self.window(stack)
        // The three segments already pushed, back to back: valid MPEG-TS, but over the limit.
        let oversized = stack.pushed["360p"]!.flatMap { $0 }
        #expect(oversized.count > 300_000)
        if chunkSize == nil {
            // Content-Length announces too much: refused before the body is read.
            let response = try stack.push("360p", oversized, file: "segment3.ts")
            #expect(response.status == 413)
            #expect(response.text.contains("300000 bytes"))
            #expect(response.header("Access-Control-Allow-Origin") == "*")
        } else {
            // Chunked: the limit is crossed mid-upload; the rest is drained and the 413 sent when the body ends.
            let response = try stack.push("360p", oversized, file: "segment3.ts", chunkSize: chunkSize)
            #expect(response.status == 413)
            #expect(response.text.contains("300000 bytes"))
            #expect(response.header("Access-Control-Allow-Origin") == "*")
        }
        #expect(try Self.window(stack) == before)
        try Self.expectWindowContinues(stack, nextMSN: 3)
    }

    @Test func aRefusedPushCreatesNoChannelAndNoRendition() throws {
        let stack = try OriginTestStack()
        try stack.slots(1)
        let before = try Self.window(stack)
        #expect(try stack.push("r", Array("garbage".utf8), channel: "spam").status == 415)
        #expect(try stack.push("r", Array(stack.pushed["360p"]![0].prefix(1000)), channel: "spam2").status == 422)
        #expect(try stack.push("extra", Array("garbage".utf8)).status == 415)
        #expect(stack.origin.allChannels.map(\.name) == ["ch"])
        #expect(stack.origin.channel(named: "ch")?.renditionNames == ["360p", "180p"])
        #expect(try stack.get("/live/spam/index.m3u8").text == "unknown channel or path\n")
        #expect(try Self.window(stack) == before)
    }

    @Test func unknownChannelOrRenditionIs404WhenAutoCreateIsOff() throws {
        let stack = try OriginTestStack { $0.origin.ingest.autoCreate = false }
        try stack.slots(2)
        let before = try Self.window(stack)
        let segment = stack.nextSegment("360p")
        let channel = try stack.push("360p", segment, channel: "other")
        #expect(channel.status == 404)
        #expect(channel.text == "unknown channel 'other' (auto-create is off)\n")
        #expect(channel.header("Access-Control-Allow-Origin") == "*")
        #expect(try stack.get("/live/other/index.m3u8").status == 404)
        let rendition = try stack.push("720p", segment)
        #expect(rendition.status == 404)
        #expect(rendition.text == "unknown rendition '720p' of channel 'ch' (auto-create is off)\n")
        #expect(try Self.window(stack) == before)
        #expect(try stack.get("/live/ch/index.m3u8").text.contains("720p") == false)
    }

    @Test func autoCreateMakesAChannelOnItsFirstPush() throws {
        let stack = try OriginTestStack()
        stack.clock.advance(seconds: 2)
        let segment = stack.nextSegment("180p")
        let response = try stack.push("low", segment, channel: "fresh")
        #expect(response.status == 201)
        // A new channel's first slots wait (until slot end + TD/2) for renditions not announced yet.
        #expect(try stack.get("/live/fresh/low/0.ts").status == 404)
        stack.clock.advance(seconds: 1)
        stack.origin.tick()
        #expect(try stack.get("/live/fresh/low/0.ts").body == segment)
        #expect(try stack.get("/live/fresh/index.m3u8").text.contains("low/index.m3u8"))
    }

    @Test func pushToATestSourceChannelIs409() throws {
        let stack = try OriginTestStack {
            $0.origin.channels.append(
                .init(name: "demo", renditions: [.init(name: "180p")], source: .testSource))
        }
        let response = try stack.push("180p", stack.nextSegment("180p"), channel: "demo")
        #expect(response.status == 409)
        #expect(response.text == "channel 'demo' is fed by the built-in test source and takes no pushes\n")
    }

    @Test(
        arguments: [
            ("/ingest/a/b", 404, "ingest path is /ingest/{channel}/{rendition}/{file}\n"),
            ("/ingest/a/b/c/d", 404, "ingest path is /ingest/{channel}/{rendition}/{file}\n"),
            ("/ingest/a/b/", 404, "ingest path is /ingest/{channel}/{rendition}/{file}\n"),
            ("/ingest/a/../b/c", 400, nil),
            ("/ingest/%2e%2e/b/c", 400, nil),
            ("/ingest/a/%2E%2E/c", 400, nil),
            ("/ingest/a/b/%00.ts", 400, nil),
            ("/ingest/a/b/x%2fy.ts", 400, nil),
            ("/ingest/a/b/%zz.ts", 400, nil),
            ("/ingest/a%20b/r/c.ts", 400, "invalid channel name 'a b': use 1-64 characters of A-Z a-z 0-9 _ -\n"),
            ("/ingest/a/r%C3%A9/c.ts", 400, "invalid rendition name 'ré': use 1-64 characters of A-Z a-z 0-9 _ -\n"),
        ] as [(String, Int, String?)])
    func badPathsAreRefusedWithA4xx(path: String, status: Int, message: String?) throws {
        let stack = try OriginTestStack()
        try stack.slots(1)
        let before = try Self.window(stack)
        let response = try stack.request("PUT", path, body: stack.nextSegment("360p"))
        #expect(response.status == status)
        if let message {
            #expect(response.text == message)
        } else {
            #expect(
                response.text
                    == "malformed request path: invalid percent-encoding, UTF-8, control character or dot segment\n")
        }
        #expect(response.header("Access-Control-Allow-Origin") == "*")
        #expect(try Self.window(stack) == before)
        #expect(stack.origin.allChannels.map(\.name) == ["ch"])
    }

    @Test func ingestTokenIsRequiredWhenConfigured() throws {
        let stack = try OriginTestStack(renditions: ["360p"]) { $0.ingestToken = "s3cret" }
        stack.clock.advance(seconds: 2)
        let segment = stack.nextSegment("360p")
        // A refused push is answered without reading its body, and its connection closes (a client without the
        // token cannot hold it by trickling the body).
        for headers in [
            [], [("Authorization", "Bearer wrong")], [("Authorization", "Bearer s3cret2")],
            [("Authorization", "Basic czNjcmV0")], [("Authorization", "Bearer ")],
        ] as [[(String, String)]] {
            let connection = try stack.connect()
            let refused = try connection.request("PUT", "/ingest/ch/360p/segment0.ts", headers: headers, body: segment)
            #expect(refused.status == 401, "\(headers)")
            #expect(refused.header("Connection") == "close")
            #expect(connection.peerClosed(waitingMilliseconds: 1_000))
            #expect(
                refused.text
                    == "pushes into channel 'ch' rendition '360p' need a bearer token that grants them "
                    + "(Authorization: Bearer ...; docs/security.md)\n")
            #expect(refused.header("WWW-Authenticate") == "Bearer realm=\"hlsorigin\"")
            #expect(refused.header("Access-Control-Allow-Origin") == "*")
        }
        #expect(try stack.get("/live/ch/360p/index.m3u8").status == 404)
        let accepted = try stack.connect().request(
            "PUT", "/ingest/ch/360p/segment0.ts", headers: [("Authorization", "Bearer s3cret")], body: segment)
        #expect(accepted.status == 201)
        #expect(try stack.get("/live/ch/360p/0.ts").body == segment)
        // Reading stays open.
        #expect(try stack.get("/live/ch/360p/index.m3u8").status == 200)
    }
}
