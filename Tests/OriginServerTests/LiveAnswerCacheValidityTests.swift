import HLSPackaging
import LiveTimeline
import OriginCore
import TestSupport
import Testing

@testable import OriginServer

/// How long the per-thread prepared `/live` answers hold: a publish invalidates what it changed (the playlists),
/// not the segments it keeps; a segment's answer goes once the segment leaves retention.
@Suite("Live answer cache: validity per playlist version and segment retention", .offThePool)
struct LiveAnswerCacheValidityTests {
    let stack: OriginTestStack

    /// Three 2-second slots pushed to `ch` (renditions 360p and 180p): MSNs 0, 1, 2. One server thread.
    init() throws {
        stack = try OriginTestStack()
        try stack.slots(3)
    }

    var counts: (hits: Int, misses: Int) { stack.handler.live.answers.counts }

    var versions360p: RenditionVersions {
        get throws { try #require(stack.origin.channel(named: "ch")?.versions(ofRendition: "360p")) }
    }

    @Test func aSegmentIsStillAnsweredFromTheCacheAfterAPublishThatKeepsIt() throws {
        let connection = try stack.connect()
        let first = try connection.request("GET", "/live/ch/360p/2.ts")
        #expect(first.status == 200)
        let before = counts
        let version = try versions360p.version
        try stack.slot()
        #expect(try versions360p.version > version)
        let again = try connection.request("GET", "/live/ch/360p/2.ts")
        #expect(again.status == 200)
        #expect(again.body == first.body)
        #expect(counts.hits == before.hits + 1)
        #expect(counts.misses == before.misses)
    }

    @Test func aPlaylistIsDerivedAgainAfterItsRenditionPublished() throws {
        let connection = try stack.connect()
        #expect(try connection.request("GET", "/live/ch/360p/index.m3u8").status == 200)
        #expect(try connection.request("GET", "/live/ch/index.m3u8").status == 200)
        let cached = counts
        #expect(try connection.request("GET", "/live/ch/360p/index.m3u8").status == 200)
        #expect(counts.hits == cached.hits + 1)
        try stack.slot()
        let before = counts
        let media = try connection.request("GET", "/live/ch/360p/index.m3u8")
        #expect(media.text.hasSuffix("\n3.ts\n"))
        #expect(counts.misses == before.misses + 1)
        // The multivariant playlist follows the channel's snapshot version, which every publish moves.
        #expect(try connection.request("GET", "/live/ch/index.m3u8").status == 200)
        #expect(counts.misses == before.misses + 2)
        #expect(counts.hits == before.hits)
    }

    @Test func aSegmentAnswerGoesStaleWhenTheSegmentLeavesRetention() throws {
        let connection = try stack.connect()
        #expect(try connection.request("GET", "/live/ch/360p/0.ts").status == 200)
        #expect(try connection.request("GET", "/live/ch/360p/0.ts").status == 200)
        var slots = 0
        while try versions360p.retentionFloor == 0 {
            try stack.slot()
            slots += 1
            try #require(slots < 60, "segment 0 never left retention")
            // Until then it is a hit, publish after publish.
            if try versions360p.retentionFloor == 0 {
                let before = counts
                #expect(try connection.request("GET", "/live/ch/360p/0.ts").status == 200)
                #expect(counts.hits == before.hits + 1)
            }
        }
        let before = counts
        #expect(try connection.request("GET", "/live/ch/360p/0.ts").status == 404)
        #expect(counts.misses == before.misses + 1)
        #expect(counts.hits == before.hits)
    }

    @Test func theRetentionFloorFollowsTheOldestSegmentTheRenditionStillServes() throws {
        #expect(try versions360p.retentionFloor == 0)
        try stack.slots(40)
        let floor = try versions360p.retentionFloor
        let snapshot = try #require(stack.origin.channel(named: "ch")?.snapshot.renditions["360p"])
        #expect(floor == snapshot.entries.first?.msn)
        #expect(floor > 0)
        #expect(try versions360p.version == snapshot.version)
    }

    @Test func theCountersAreExportedInMetrics() throws {
        let connection = try stack.connect()
        for _ in 0..<3 { #expect(try connection.request("GET", "/live/ch/360p/1.ts").status == 200) }
        let (hits, misses) = counts
        #expect(hits >= 2)
        let metrics = try stack.get("/metrics").text
        #expect(metrics.contains("# TYPE hlsorigin_live_answer_cache_hits_total counter\n"))
        #expect(metrics.contains("\nhlsorigin_live_answer_cache_hits_total \(hits)\n"))
        #expect(metrics.contains("\nhlsorigin_live_answer_cache_misses_total \(misses)\n"))
    }
}
