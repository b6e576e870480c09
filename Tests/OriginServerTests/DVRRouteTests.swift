import Foundation
import HLSPlaylist
import LiveTimeline
import OriginCore
import TestSupport
import Testing

@testable import OriginServer

/// `?start=` / `&end=` on the live playlist URLs of a channel with a store (`dvr: {hours: 1}`, live window of 3
/// segments): 20 slots of 2 s pushed, so most of them are only in the store.
@Suite("DVR routes: start-over, catch-up, sliding and event playlists over HTTP", .offThePool)
struct DVRRouteTests {
    let stack: OriginTestStack
    /// PDT of the oldest stored slot, ms.
    let horizon: Int64
    /// MSN of the oldest stored slot.
    let firstMSN: UInt64

    init() throws {
        let directory = NSTemporaryDirectory() + "dvr-" + UUID().uuidString
        stack = try OriginTestStack { configuration in
            configuration.origin.dataDirectory = directory
            configuration.origin.channels[0].window = .segments(3)
            configuration.origin.channels[0].dvr = DVRConfiguration(hours: 1)
        }
        try stack.slots(20)
        // The 404 for a start before the window names the window; read its start from there.
        let refused = try stack.get("/live/ch/360p/index.m3u8?start=0")
        let message = refused.text
        guard refused.status == 404, let open = message.firstIndex(of: "("), let to = message.range(of: " to "),
            let date = ProgramDateTime(iso8601: String(message[message.index(after: open)..<to.lowerBound]))
        else { throw TestFailure("start=0 answered \(refused.status): \(message)") }
        horizon = date.millisecondsSince1970
        let everything = try stack.get("/live/ch/360p/index.m3u8?start=\(Self.epoch(horizon))")
        guard everything.status == 200 else {
            throw TestFailure("start at the horizon answered \(everything.status): \(everything.text)")
        }
        firstMSN = try MediaPlaylist.parse(everything.text).mediaSequence
    }

    func playlist(_ target: String, status: Int = 200) throws -> MediaPlaylist {
        let response = try stack.get(target)
        guard response.status == status else {
            throw TestFailure("\(target) answered \(response.status): \(response.text)")
        }
        return try MediaPlaylist.parse(response.text)
    }

    static func epoch(_ milliseconds: Int64) -> String {
        String(milliseconds / 1000) + "." + String(format: "%03d", Int(milliseconds % 1000))
    }

    @Test("start=T (ISO 8601): EVENT from the slot containing T to the live edge, EXT-X-START at T")
    func startOver() throws {
        let start = ProgramDateTime(millisecondsSince1970: horizon + 4_500).formatted
        let dvr = try playlist("/live/ch/360p/index.m3u8?start=\(start)&token=ignored")
        let live = try MediaPlaylist.parse(try stack.playlistText("360p"))
        #expect(dvr.playlistType == .event)
        #expect(!dvr.endList)
        #expect(dvr.start == StartOffset(timeOffset: 0.5, precise: true))
        #expect(dvr.mediaSequence == firstMSN + 2)
        #expect(dvr.segments.first?.programDateTime?.millisecondsSince1970 == horizon + 4_000)
        // The entries the live playlist lists are listed the same way.
        #expect(Array(dvr.segments.suffix(live.segments.count)) == live.segments)
        #expect(dvr.segments.count == 18)
        // The same start with a zone offset, its `+` sent as `%2B` or as a raw `+` (decoded as a space).
        let local = ProgramDateTime(millisecondsSince1970: horizon + 4_500 + 3_600_000).formatted.dropLast()
        for plus in ["%2B", "+"] {
            let offset = try playlist("/live/ch/360p/index.m3u8?start=\(local)\(plus)01:00")
            #expect(offset == dvr)
        }
    }

    @Test("start=T&end=E in the past: VOD of exactly the slots overlapping [T, E), every segment downloadable")
    func catchUp() throws {
        let target =
            "/live/ch/360p/index.m3u8?start=\(Self.epoch(horizon + 2_000))&end=\(Self.epoch(horizon + 10_000))"
        let vod = try playlist(target)
        #expect(vod.playlistType == .vod)
        #expect(vod.endList)
        #expect(vod.mediaSequence == firstMSN + 1)
        #expect(vod.segments.map(\.uri) == (1...4).map { "\(firstMSN + UInt64($0)).ts" })
        let response = try stack.get(target)
        #expect(response.header("Cache-Control")?.hasPrefix("public, max-age=") == true)
        #expect(response.header("Cache-Control") != "public, max-age=1")
        for segment in vod.segments {
            let download = try stack.get("/live/ch/360p/\(segment.uri)")
            #expect(download.status == 200)
            let index = Int(UInt64(segment.uri.dropLast(3))! - firstMSN)
            #expect(download.body == stack.pushed["360p"]?[index], "\(segment.uri)")
            #expect(download.header("Content-Type") == "video/mp2t")
        }
    }

    @Test("start=-S: a sliding window of S seconds reaching the live edge, no playlist type")
    func sliding() throws {
        let sliding = try playlist("/live/ch/180p/index.m3u8?start=-10")
        let live = try MediaPlaylist.parse(try stack.playlistText("180p"))
        #expect(sliding.playlistType == nil)
        #expect(!sliding.endList)
        #expect(sliding.segments.last == live.segments.last)
        #expect((5...6).contains(sliding.segments.count))
        #expect(sliding.start?.precise == true)
    }

    @Test("end ahead of the live edge: EVENT without ENDLIST, then with ENDLIST once the slot containing E closes")
    func eventEndsWhenEndPasses() throws {
        let now = stack.clock.nowMilliseconds()
        let target = "/live/ch/360p/index.m3u8?start=\(Self.epoch(now - 6_000))&end=\(Self.epoch(now + 3_000))"
        let open = try playlist(target)
        #expect(open.playlistType == .event)
        #expect(!open.endList)
        try stack.slots(3)
        let closed = try playlist(target)
        #expect(closed.playlistType == .event)
        #expect(closed.endList)
        let last = try #require(closed.segments.last?.programDateTime?.millisecondsSince1970)
        #expect(last <= now + 2_999)
        #expect(last + Int64((closed.segments.last!.duration * 1000).rounded()) >= now + 3_000)
        // Long after E, a new player gets VOD of the same entries.
        try stack.slots(6)
        let later = try playlist(target)
        #expect(later.playlistType == .vod)
        #expect(later.endList)
        #expect(later.segments.map(\.uri) == closed.segments.map(\.uri))
    }

    @Test("the multivariant passes one resolved start on to every variant, and each variant answers from there")
    func multivariantPassThrough() throws {
        let response = try stack.get("/live/ch/index.m3u8?start=-10&session=abc")
        #expect(response.status == 200)
        let multivariant = try MultivariantPlaylist.parse(response.text)
        let uris = multivariant.variants.map(\.uri)
        #expect(uris.count == 2)
        let queries = Set(uris.map { $0.split(separator: "?").last.map(String.init) ?? "" })
        #expect(queries.count == 1)
        #expect(queries.first?.hasPrefix("start=") == true)
        var firsts: Set<UInt64> = []
        for uri in uris {
            let media = try playlist("/live/ch/" + uri)
            #expect(media.playlistType == .event)
            firsts.insert(media.mediaSequence)
        }
        #expect(firsts.count == 1)
    }

    @Test("DVR playlists are gzipped when accepted (the same text twice) and answer 304 to their ETag")
    func gzipAndValidators() throws {
        let target = "/live/ch/360p/index.m3u8?start=\(Self.epoch(horizon))&end=\(Self.epoch(horizon + 8_000))"
        let plain = try stack.get(target)
        #expect(plain.status == 200)
        for _ in 0..<2 {
            let gzipped = try stack.get(target, headers: [("Accept-Encoding", "gzip")])
            #expect(gzipped.status == 200)
            #expect(gzipped.header("Content-Encoding") == "gzip")
            #expect(TestGunzip.decompress(gzipped.body) == plain.body)
        }
        let etag = try #require(plain.header("ETag"))
        #expect(try stack.get(target, headers: [("If-None-Match", etag)]).status == 304)
    }

    @Test("malformed values answer 400, starts outside the window 404, other arguments alone the live playlist")
    func refusals() throws {
        let junk = try stack.get("/live/ch/360p/index.m3u8?start=yesterday")
        #expect(junk.status == 400)
        #expect(junk.text == "start: 'yesterday' is not an ISO 8601 date, epoch seconds or negative seconds\n")
        let backwards = try stack.get("/live/ch/index.m3u8?start=-10&end=-20")
        #expect(backwards.status == 400)
        #expect(backwards.text.contains("is not after start"))
        let early = try stack.get("/live/ch/360p/index.m3u8?start=\(Self.epoch(horizon - 1))")
        #expect(early.status == 404)
        #expect(early.text.contains("is before the DVR window ("))
        let late = try stack.get("/live/ch/360p/index.m3u8?start=\(Self.epoch(stack.clock.nowMilliseconds() + 5000))")
        #expect(late.status == 404)
        #expect(late.text.contains("is after now"))
        let ignored = try stack.get("/live/ch/360p/index.m3u8?token=abc&x")
        #expect(ignored.status == 200)
        #expect(ignored.text == (try stack.playlistText("360p")))
        #expect(try stack.get("/live/ch/none/index.m3u8?start=-5").status == 404)
    }
}
