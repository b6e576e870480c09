import LiveTimeline
import OriginCore
import OriginServer
import TestSupport
import Testing

/// IMSC1 fragments (the committed fixture of scripts/make-imsc-fixture.py) pushed beside test-source video over HTTP.
@Suite("IMSC1 subtitles over HTTP", .offThePool)
struct IMSCContentTypeTests {
    static func fixture(_ name: String) throws -> [UInt8] {
        try OriginTestStack.packageFile("Tests/MediaProbeTests/Fixtures/\(name)")
    }

    @Test func fragmentsAreServedAsApplicationMP4AndAGapAnswers404() throws {
        let stack = try OriginTestStack(renditions: ["180p"]) { $0.origin.channels[0].followerWaitMilliseconds = 500 }
        let initSection = try Self.fixture("imsc-init.mp4")
        let pushedInit = try stack.push("imsc", initSection, file: "init.mp4")
        #expect(pushedInit.status == 201, "\(pushedInit.status) \(pushedInit.text)")
        for number in 0..<3 {
            stack.clock.advance(seconds: 1.4)
            #expect(try stack.push("180p", stack.nextSegment("180p"), file: "seg\(number).ts").status == 201)
            if number != 1 {
                let response = try stack.push("imsc", try Self.fixture("imsc-\(number).m4s"), file: "s\(number).m4s")
                #expect(response.status == 201, "\(response.status) \(response.text)")
            }
            stack.origin.tick()
            stack.clock.advance(seconds: 0.6)  // past the follower wait
            stack.origin.tick()
        }
        let playlist = try stack.playlistText("imsc")
        #expect(playlist.contains("#EXT-X-MAP:URI=\"init-0.mp4\"\n"), "\(playlist)")
        #expect(playlist.contains("#EXT-X-GAP\n#EXTINF:2.000,\n1.m4s\n"), "\(playlist)")
        #expect(!playlist.contains("#EXT-X-DISCONTINUITY\n"), "\(playlist)")
        let media = try stack.get("/live/ch/imsc/0.m4s")
        #expect(media.status == 200)
        #expect(media.header("Content-Type") == "application/mp4")
        #expect(media.body == (try Self.fixture("imsc-0.m4s")))
        #expect(try stack.get("/live/ch/imsc/2.m4s").header("Content-Type") == "application/mp4")
        #expect(try stack.get("/live/ch/imsc/1.m4s").status == 404, "no IMSC filler")
        let served = try stack.get("/live/ch/imsc/init-0.mp4")
        #expect(served.status == 200)
        #expect(served.body == initSection)
        let video = try stack.get("/live/ch/180p/1.ts")
        #expect(video.status == 200, "video continued through the subtitle hole")
    }
}
