import Foundation
import HLSPackaging
import LiveTimeline
import OriginCore
import OriginServer
import TestSupport
import Testing

/// Segments that left the live window and its retention are served from the durable store's chunk files: the same
/// bytes and headers as from memory, ranges and validators included.
@Suite("Disk tier: segments past the window come from the store", .offThePool)
struct DiskTierRouteTests {
    static func stack(dvrHours: Double?) throws -> OriginTestStack {
        let directory = try TemporaryDirectory.make("disk-tier").path
        return try OriginTestStack(renditions: ["360p"]) { configuration in
            configuration.origin.dataDirectory = directory
            configuration.origin.channels[0].window = .segments(3)
            configuration.origin.channels[0].dvr = dvrHours.map { DVRConfiguration(hours: $0) }
        }
    }

    @Test func aSegmentPastItsRetentionIsServedFromDiskWithTheSameBytes() throws {
        let stack = try Self.stack(dvrHours: 1)
        try stack.slots(20)
        let playlist = try stack.playlistText("360p")
        #expect(!playlist.contains("\n0.ts"), "MSN 0 left the window")
        #expect(stack.origin.channel(named: "ch")?.snapshot.renditions["360p"]?.entry(msn: 0) == nil, "and memory")
        for round in 0..<2 {  // the first answer reads and checks the bytes, the second comes from the file
            for msn in [0, 1, 5] {
                let response = try stack.get("/live/ch/360p/\(msn).ts")
                #expect(response.status == 200, "round \(round) msn \(msn): \(response.status) \(response.text)")
                #expect(response.body == stack.pushed["360p"]![msn], "round \(round) msn \(msn): other bytes")
                #expect(response.header("Content-Type") == "video/mp2t")
                #expect(response.header("Cache-Control")?.contains("immutable") == true)
            }
        }
        let range = try stack.get("/live/ch/360p/1.ts", headers: [("Range", "bytes=188-375")])
        #expect(range.status == 206)
        #expect(range.body == Array(stack.pushed["360p"]![1][188..<376]))
        let etag = try #require(try stack.get("/live/ch/360p/1.ts").header("ETag"))
        #expect(try stack.get("/live/ch/360p/1.ts", headers: [("If-None-Match", etag)]).status == 304)
        #expect(try stack.get("/live/ch/360p/1.m4s").status == 404, "only the rendition's extension")
        #expect(try stack.get("/live/ch/360p/999.ts").status == 404, "a future MSN is not in the store")
    }

    /// A GAP URL that just left the playlist answers its filler for its duration plus the window's, as a removed
    /// segment answers its bytes: from the running origin and from one restarted on its data directory (kill -9,
    /// nothing flushed). It used to answer `404 no segment` at once: removed GAP entries were not retained, and the
    /// store has no bytes for a GAP record.
    @Test func aGapURLJustRemovedFromThePlaylistAnswersItsFillerAcrossARestart() throws {
        let directory = try TemporaryDirectory.make("gap-retention").path
        let clock = ManualClock()
        func start() throws -> OriginTestStack {
            try OriginTestStack(renditions: ["360p"], clock: clock) { configuration in
                configuration.origin.dataDirectory = directory
                configuration.origin.channels[0].window = .segments(3)
            }
        }
        var stack: OriginTestStack? = try start()
        try stack!.slots(3)
        // No push for two slots: GAP entries 3 and 4, listed with EXT-X-GAP.
        clock.advance(seconds: 3)
        stack!.origin.tick()
        clock.advance(seconds: 2)
        stack!.origin.tick()
        let outage = try stack!.playlistText("360p")
        #expect(outage.contains("#EXT-X-GAP\n#EXTINF:2.000,\n3.ts\n"), "\(outage)")
        #expect(outage.hasSuffix("#EXT-X-GAP\n#EXTINF:2.000,\n4.ts\n"), "\(outage)")
        var fillers: [Int: [UInt8]] = [:]
        for msn in [3, 4] {
            let response = try stack!.get("/live/ch/360p/\(msn).ts")
            #expect(response.status == 200, "msn \(msn) listed: \(response.status) \(response.text)")
            fillers[msn] = response.body
        }
        // The encoder is back: 5, 6, 7 are listed; 3 and 4 were removed less than 4 s ago (retention 8 s).
        try stack!.slots(3)
        let playlist = try stack!.playlistText("360p")
        #expect(playlist.contains("#EXT-X-MEDIA-SEQUENCE:5\n") && !playlist.contains("\n4.ts"))
        func expectFillers(_ stack: OriginTestStack, _ when: String) throws {
            for msn in [3, 4] {
                let response = try stack.get("/live/ch/360p/\(msn).ts")
                #expect(response.status == 200, "\(when), msn \(msn): \(response.status) \(response.text)")
                #expect(response.header("Content-Type") == "video/mp2t", "\(when), msn \(msn)")
                let same = response.body == fillers[msn]
                #expect(same, "\(when), msn \(msn): not the filler it answered while listed")
            }
        }
        try expectFillers(stack!, "removed")
        stack = nil
        clock.advance(seconds: 1)
        let restarted = try start()
        #expect(try restarted.playlistText("360p").contains("#EXT-X-MEDIA-SEQUENCE:5\n"), "the same window")
        try expectFillers(restarted, "after the restart")
    }

    @Test func aCorruptStoredSegmentIsNeverServed() throws {
        let stack = try Self.stack(dvrHours: 1)
        try stack.slots(20)
        let data = stack.configuration.origin.dataDirectory! + "/store/ch/r/360p/data/0.ts"
        var contents = try #require(FileManager.default.contents(atPath: data))
        // MSN 2 starts after MSNs 0 and 1 in the chunk: flip a byte in its middle.
        let offset = stack.pushed["360p"]![0].count + stack.pushed["360p"]![1].count + 1000
        contents[offset] ^= 0xFF
        try contents.write(to: URL(fileURLWithPath: data))
        #expect(try stack.get("/live/ch/360p/2.ts").status == 404)
        #expect(try stack.get("/live/ch/360p/3.ts").body == stack.pushed["360p"]![3])
    }
}
