import ContinuousTSInput
import Foundation
import HLSPlaylist
import LiveTimeline
import Logging
import OriginCore
import SharedBytes
import TestSource
import TestSupport
import Testing

@testable import OriginServer

/// `/status` and `/status/timeline.json` over real HTTP on a manual clock: what the timeline lists, its GAP,
/// discontinuity and marker facts against the playlists served at the same moment, and the admin API's auth.
@Suite("Status page: /status and /status/timeline.json", .offThePool)
struct StatusPageRouteTests {
    /// One rendition of the timeline JSON.
    struct Rendition {
        let name: String
        let mediaSequence: UInt64?
        let listed: Int
        let edgeLagMilliseconds: Int64?
        /// `[msn, pdt, duration, flags]`.
        let entries: [[Int64]]

        var listedEntries: [[Int64]] { entries.filter { $0[3] & 4 == 0 } }
    }

    /// The timeline JSON, decoded loosely (as the page reads it).
    struct Timeline {
        let object: [String: Any]

        init(_ body: [UInt8]) throws {
            object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        }

        var now: Int64? { (object["now"] as? NSNumber)?.int64Value }
        var channels: [[String: Any]] { object["channels"] as? [[String: Any]] ?? [] }

        func channel(_ name: String) throws -> [String: Any] {
            try #require(channels.first { $0["name"] as? String == name })
        }

        func renditions(_ channel: String) throws -> [Rendition] {
            let list = try #require(try self.channel(channel)["renditions"] as? [[String: Any]])
            return list.map { object in
                Rendition(
                    name: object["name"] as? String ?? "",
                    mediaSequence: (object["mediaSequence"] as? NSNumber)?.uint64Value,
                    listed: object["listed"] as? Int ?? -1,
                    edgeLagMilliseconds: (object["edgeLagMs"] as? NSNumber)?.int64Value,
                    entries: (object["entries"] as? [[NSNumber]] ?? []).map { $0.map(\.int64Value) })
            }
        }

        func markers(_ channel: String) throws -> [[String: Any]] {
            try #require(try self.channel(channel)["markers"] as? [[String: Any]])
        }
    }

    static func timeline(_ stack: OriginTestStack, headers: [(String, String)] = []) throws -> Timeline {
        let response = try stack.get("/status/timeline.json", headers: headers)
        #expect(response.status == 200, "\(response.text)")
        #expect(response.header("Content-Type") == "application/json")
        #expect(response.header("Cache-Control") == "no-store")
        return try Timeline(response.body)
    }

    /// Checks every listed entry of every rendition of `ch` against the playlist served now: same MSNs, PDTs,
    /// durations, GAP and DISCONTINUITY.
    static func expectTimelineMatchesPlaylists(_ stack: OriginTestStack, _ timeline: Timeline) throws {
        for rendition in try timeline.renditions(OriginTestStack.channel) {
            let playlist = try MediaPlaylist.parse(try stack.playlistText(rendition.name))
            let listed = rendition.listedEntries
            #expect(rendition.listed == playlist.segments.count, "\(rendition.name)")
            #expect(listed.count == playlist.segments.count, "\(rendition.name)")
            #expect(rendition.mediaSequence == playlist.mediaSequence, "\(rendition.name)")
            for (index, (entry, segment)) in zip(listed, playlist.segments).enumerated() {
                #expect(entry[0] == Int64(playlist.mediaSequence) + Int64(index))
                #expect(entry[1] == segment.programDateTime?.millisecondsSince1970, "\(rendition.name) MSN \(entry[0])")
                #expect(Double(entry[2]) / 1000 == segment.duration, "\(rendition.name) MSN \(entry[0])")
                #expect((entry[3] & 1 != 0) == segment.gap, "\(rendition.name) MSN \(entry[0]) GAP")
                #expect((entry[3] & 2 != 0) == segment.discontinuity, "\(rendition.name) MSN \(entry[0]) discontinuity")
            }
        }
    }

    @Test func timelineListsEveryRenditionsWindowAsItsPlaylistDoes() throws {
        let stack = try OriginTestStack()
        try stack.slots(9)
        let timeline = try Self.timeline(stack)
        #expect(timeline.now == stack.clock.nowMilliseconds())
        let channel = try timeline.channel("ch")
        #expect(channel["targetDuration"] as? Int == 2)
        #expect((channel["version"] as? NSNumber)?.uint64Value == stack.origin.channel(named: "ch")!.publishedVersion)
        let renditions = try timeline.renditions("ch")
        #expect(renditions.map(\.name) == ["180p", "360p"])
        for rendition in renditions {
            // 9 slots in a window of 6: 3 retained entries before the listed ones, in MSN order.
            #expect(rendition.listed == 6)
            #expect(rendition.entries.map { $0[0] } == Array(Int64(0)...8))
            #expect(rendition.entries.prefix(3).allSatisfy { $0[3] & 4 != 0 })
            let newest = try #require(rendition.entries.last)
            #expect(rendition.edgeLagMilliseconds == stack.clock.nowMilliseconds() - (newest[1] + newest[2]))
        }
        try Self.expectTimelineMatchesPlaylists(stack, timeline)
    }

    @Test func gapAndDiscontinuityFlagsFollowThePlaylists() throws {
        let stack = try OriginTestStack()
        try stack.slots(3)
        // 180p misses two slots (its encoder's time goes on meanwhile): GAP entries, then a discontinuity when it
        // is back.
        for _ in 0..<2 {
            stack.clock.advance(seconds: 2)
            _ = stack.nextSegment("180p")
            let response = try stack.push("360p", stack.nextSegment("360p"), file: "segment.ts")
            #expect(response.status == 201)
            stack.origin.tick()
        }
        // The second missed slot closes (its end plus the grace of TD/2 passed), then 180p is back on time.
        stack.clock.advance(seconds: 1.1)
        stack.origin.tick()
        stack.clock.advance(seconds: 0.9)
        for rendition in ["180p", "360p"] {
            #expect(try stack.push(rendition, stack.nextSegment(rendition), file: "segment.ts").status == 201)
        }
        stack.origin.tick()
        try stack.slots(1)
        let timeline = try Self.timeline(stack)
        let renditions = try timeline.renditions("ch")
        let low = try #require(renditions.first { $0.name == "180p" })
        let high = try #require(renditions.first { $0.name == "360p" })
        let gaps = low.listedEntries.filter { $0[3] & 1 != 0 }.map { $0[0] }
        #expect(gaps == [3, 4])
        #expect(high.listedEntries.allSatisfy { $0[3] & 1 == 0 })
        let discontinuities = low.listedEntries.filter { $0[3] & 2 != 0 }.map { $0[0] }
        #expect(discontinuities == [5])
        #expect(high.listedEntries.filter { $0[3] & 2 != 0 }.map { $0[0] } == [5])
        try Self.expectTimelineMatchesPlaylists(stack, timeline)
    }

    @Test func markersCarryTheirTimesAndSCTE35Kind() throws {
        let stack = try OriginTestStack()
        try stack.slots(3)
        let start = ProgramDateTime(millisecondsSince1970: stack.clock.nowMilliseconds() - 2000)
        let path = "/admin/channels/ch/dateranges"
        func send(_ method: String, _ target: String, _ body: String) throws -> Int {
            try stack.request(
                method, target, headers: [("Content-Type", "application/json")], body: Array(body.utf8)
            ).status
        }
        #expect(
            try send(
                "POST", path,
                #"{"id": "ad-1", "class": "com.example.ad", "startDate": "\#(start.formatted)", "plannedDuration": 30, "scte35": "out"}"#
            ) == 201)
        #expect(try send("POST", path, #"{"id": "ad-2", "startDate": "\#(start.formatted)", "scte35": "out"}"#) == 201)
        #expect(try send("PATCH", path + "/ad-2", #"{"duration": 4}"#) == 200)
        #expect(try send("POST", path, #"{"id": "note", "startDate": "\#(start.formatted)", "duration": 1}"#) == 201)

        let markers = try Self.timeline(stack).markers("ch")
        let byId = Dictionary(uniqueKeysWithValues: markers.map { ($0["id"] as? String ?? "", $0) })
        #expect(Set(byId.keys) == ["ad-1", "ad-2", "note"])
        let startMilliseconds = start.millisecondsSince1970
        #expect(byId["ad-1"]?["class"] as? String == "com.example.ad")
        #expect((byId["ad-1"]?["start"] as? NSNumber)?.int64Value == startMilliseconds)
        #expect(byId["ad-1"]?["end"] is NSNull)
        #expect(byId["ad-1"]?["planned"] as? Int == 30000)
        #expect(byId["ad-1"]?["scte35"] as? [String] == ["out"])
        #expect(byId["ad-2"]?["class"] is NSNull)
        #expect((byId["ad-2"]?["end"] as? NSNumber)?.int64Value == startMilliseconds + 4000)
        #expect(byId["ad-2"]?["scte35"] as? [String] == ["out", "in"])
        #expect(byId["note"]?["scte35"] as? [String] == [])
        #expect((byId["note"]?["end"] as? NSNumber)?.int64Value == startMilliseconds + 1000)
    }

    /// An SRT caller's stream as the segmenter sees it (`srtStreams`: segments, refusals, the demuxer's counters)
    /// is in the page's document beside the callers, and the page shows it.
    @Test func srtStreamsAreInTheTimelineForThePage() throws {
        let stack = try OriginTestStack()
        try stack.slots(2)
        let ingest = ContinuousTSIngest(
            origin: stack.origin, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let session = try ingest.open(channel: "ch", rendition: "360p", peer: "127.0.0.1:5000")
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 1)
        let bytes = generator.nextSegment().bytes
        bytes.withUnsafeBytes { session.receive($0) }
        let channel = try #require(stack.origin.channel(named: "ch"))
        let json = StatusTimeline.json(
            nowMilliseconds: stack.clock.nowMilliseconds(),
            channels: [
                StatusTimeline.ChannelView(
                    snapshot: channel.snapshot, markers: [], srtStreams: ingest.sessions(channel: "ch"))
            ])
        let timeline = try Timeline(Array(json.utf8))
        let streams = try #require(try timeline.channel("ch")["srtStreams"] as? [String: [String: Any]])
        let stream = try #require(streams["360p"])
        #expect(stream["bytesReceived"] as? Int == bytes.count)
        let segmenter = try #require(stream["segmenter"] as? [String: Any])
        #expect((segmenter["demuxer"] as? [String: Any])?["packets"] as? Int == bytes.count / 188)
        #expect(String(decoding: StatusPageAssets.javaScript.array, as: UTF8.self).contains("view.data.srtStreams"))
    }

    @Test func withATokenConfiguredTheStatusPageAndItsJSONNeedIt() throws {
        let stack = try OriginTestStack { $0.adminToken = "adm1n" }
        try stack.slots(1)
        for path in ["/status", "/status/timeline.json", "/status/status.js"] {
            for headers in [[], [("Authorization", "Bearer nope")], [("Authorization", "Basic adm1n")]]
                as [[(String, String)]]
            {
                let refused = try stack.get(path, headers: headers)
                #expect(refused.status == 401, "\(path) \(headers)")
                #expect(refused.header("WWW-Authenticate") == "Bearer realm=\"hlsorigin\"")
                #expect(!refused.text.contains("\"channels\""))
            }
            #expect(try stack.get(path, headers: [("Authorization", "Bearer adm1n")]).status == 200, "\(path)")
        }
        #expect(try Self.timeline(stack, headers: [("Authorization", "Bearer adm1n")]).channels.count == 1)
    }

    @Test func withoutATokenOnlyLoopbackClientsAreServed() throws {
        let client = try AdminClient(token: nil)
        for path in ["/status", "/status/timeline.json"] {
            #expect(client.send("GET", path, remote: "127.0.0.1").status == 200, "\(path)")
            #expect(client.send("GET", path, remote: "::1").status == 200, "\(path)")
            let refused = client.send("GET", path, remote: "192.0.2.7")
            #expect(refused.status == 403, "\(path)")
            #expect(refused.error?.contains("loopback") == true)
        }
    }

    @Test func thePageAndItsAssetsAreServedByTheOrigin() throws {
        let stack = try OriginTestStack()
        let page = try stack.get("/status")
        #expect(page.status == 200)
        #expect(page.header("Content-Type") == "text/html; charset=utf-8")
        #expect(page.text.contains("<script src=\"/status/status.js\"></script>"))
        #expect(page.text.contains("href=\"/status/status.css\""))
        #expect(!page.text.contains("https://"), "no outside CDN")
        #expect(try stack.get("/status/").status == 200)
        let script = try stack.get("/status/status.js")
        #expect(script.header("Content-Type") == "text/javascript; charset=utf-8")
        #expect(script.text.contains("/status/timeline.json"))
        #expect(try stack.get("/status/status.css").header("Content-Type") == "text/css; charset=utf-8")
        #expect(try stack.get("/status/nope").status == 404)
        let posted = try stack.request("POST", "/status", body: Array("x".utf8))
        #expect(posted.status == 405)
    }

    /// Not a check: prints how long the timeline JSON of 100 channels (2 renditions, a window of 6 and 6
    /// retained entries, 2 markers each) takes to build, and its size. docs/status-page.md quotes it.
    @Test func timelineOfAHundredChannelsIsMeasured() throws {
        let names = (0..<100).map { String(format: "ch%03d", $0) }
        let stack = try OriginTestStack {
            $0.origin.channels = names.map {
                ChannelConfiguration(name: $0, renditions: ["360p", "180p"].map { RenditionConfiguration(name: $0) })
            }
        }
        for slot in 0..<12 {
            stack.clock.advance(seconds: 2)
            let segments = ["360p", "180p"].map { ($0, stack.nextSegment($0)) }
            for name in names {
                for (rendition, bytes) in segments {
                    let response = try stack.push(rendition, bytes, file: "s\(slot).ts", channel: name)
                    guard response.status == 201 else { throw TestFailure("push answered \(response.status)") }
                }
            }
            stack.origin.tick()
        }
        let start = ProgramDateTime(millisecondsSince1970: stack.clock.nowMilliseconds() - 4000).formatted
        for name in names {
            for id in ["ad", "note"] {
                let body = #"{"id": "\#(id)", "startDate": "\#(start)", "duration": 2, "scte35": "out"}"#
                _ = try stack.request("POST", "/admin/channels/\(name)/dateranges", body: Array(body.utf8))
            }
        }
        let clock = ContinuousClock()
        var json = ""
        let rounds = 20
        let built = clock.measure {
            for _ in 0..<rounds { json = stack.handler.timelineJSON() }
        }
        let connection = try stack.connect()
        let served = try clock.measure {
            for _ in 0..<rounds { _ = try connection.request("GET", "/status/timeline.json") }
        }
        let timeline = try Timeline(Array(json.utf8))
        #expect(timeline.channels.count == 100)
        #expect(try timeline.renditions("ch042").allSatisfy { $0.listed == 6 && $0.entries.count == 12 })
        print(
            "status timeline, 100 channels x 2 renditions (12 entries each), 2 markers each: \(json.utf8.count) bytes, "
                + "built in \(built / rounds), served over HTTP (keep-alive) in \(served / rounds)")
    }
}
