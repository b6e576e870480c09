import HLSPackaging
import LiveTimeline
import OriginCore
import SharedBytes
import TestSupport
import Testing

@testable import OriginServer

/// `/live/...` over real HTTP: the headers players and CDNs rely on.
@Suite("Live routes: content types, caching, CORS, HEAD, ranges, validators, gzip, errors", .offThePool)
struct LiveRouteTests {
    let stack: OriginTestStack

    /// Three 2-second slots pushed to `ch` (renditions 360p and 180p): MSNs 0, 1, 2.
    init() throws {
        stack = try OriginTestStack()
        try stack.slots(3)
    }

    static let mediaPlaylistCache = "public, max-age=1"
    static let multivariantCache = "public, max-age=5"
    static let segmentCache = "public, max-age=31536000, immutable"

    // MARK: - Content types and caching

    @Test func playlistsAndSegmentsHaveTheirContentTypeAndCacheControl() throws {
        let multivariant = try stack.get("/live/ch/index.m3u8")
        #expect(multivariant.status == 200)
        #expect(multivariant.header("Content-Type") == "application/vnd.apple.mpegurl")
        #expect(multivariant.header("Cache-Control") == Self.multivariantCache)
        #expect(multivariant.text.hasPrefix("#EXTM3U\n"))
        #expect(multivariant.text.contains("360p/index.m3u8\n"))
        #expect(multivariant.text.contains("180p/index.m3u8\n"))

        for rendition in ["360p", "180p"] {
            let media = try stack.get("/live/ch/\(rendition)/index.m3u8")
            #expect(media.status == 200)
            #expect(media.header("Content-Type") == "application/vnd.apple.mpegurl")
            // Target duration 2: at most half of it.
            #expect(media.header("Cache-Control") == Self.mediaPlaylistCache)
            #expect(media.text.contains("#EXT-X-TARGETDURATION:2\n"))
            #expect(media.text.contains("\n0.ts\n"))
            #expect(media.text.contains("\n1.ts\n"))
            #expect(media.text.hasSuffix("\n2.ts\n"))

            for msn in 0..<3 {
                let segment = try stack.get("/live/ch/\(rendition)/\(msn).ts")
                #expect(segment.status == 200)
                #expect(segment.header("Content-Type") == "video/mp2t")
                #expect(segment.header("Cache-Control") == Self.segmentCache)
                #expect(segment.header("Accept-Ranges") == "bytes")
                #expect(segment.header("Content-Length") == "\(stack.pushed[rendition]![msn].count)")
                #expect(segment.body == stack.pushed[rendition]![msn])
            }
        }
    }

    @Test func errorsAreNotStoredAndAFutureSegmentIsNotCached() throws {
        let unknownChannel = try stack.get("/live/nope/index.m3u8")
        #expect(unknownChannel.status == 404)
        #expect(unknownChannel.header("Cache-Control") == "no-store")
        #expect(unknownChannel.header("Content-Type") == "text/plain; charset=utf-8")

        let future = try stack.get("/live/ch/360p/3.ts")
        #expect(future.status == 404)
        #expect(future.header("Cache-Control") == "no-cache")
        #expect(future.text == "no segment '3.ts' in rendition '360p'\n")
    }

    // MARK: - CORS

    @Test func everyAnswerCarriesCORS() throws {
        let ok = try stack.get("/live/ch/360p/index.m3u8")
        let segment = try stack.get("/live/ch/360p/0.ts")
        let etag = try #require(ok.header("ETag"))
        let notModified = try stack.get("/live/ch/360p/index.m3u8", headers: [("If-None-Match", etag)])
        let notFound = try stack.get("/live/ch/nope/index.m3u8")
        let notAllowed = try stack.request("POST", "/live/ch/360p/index.m3u8", body: [])
        let healthz = try stack.get("/healthz")
        #expect(ok.status == 200)
        #expect(segment.status == 200)
        #expect(notModified.status == 304)
        #expect(notFound.status == 404)
        #expect(notAllowed.status == 405)
        #expect(healthz.status == 200)
        for response in [ok, segment, notModified, notFound, notAllowed, healthz] {
            #expect(response.header("Access-Control-Allow-Origin") == "*", "status \(response.status)")
            #expect(response.headerValues("Access-Control-Allow-Origin").count == 1)
        }
        #expect(
            ok.header("Access-Control-Expose-Headers")
                == "Content-Length, Content-Range, ETag, Age, Date, CMSD-Static, CMSD-Dynamic")
    }

    @Test func preflightAnswers204WithTheAllowedMethods() throws {
        let preflight = try stack.request(
            "OPTIONS", "/live/ch/360p/index.m3u8",
            headers: [
                ("Origin", "https://player.example"), ("Access-Control-Request-Method", "GET"),
                ("Access-Control-Request-Headers", "range"),
            ])
        #expect(preflight.status == 204)
        #expect(preflight.body.isEmpty)
        #expect(preflight.header("Access-Control-Allow-Origin") == "*")
        #expect(preflight.header("Access-Control-Allow-Methods") == "GET, HEAD, OPTIONS")
        #expect(preflight.header("Allow") == "GET, HEAD, OPTIONS")
        let allowedHeaders = try #require(preflight.header("Access-Control-Allow-Headers"))
        #expect(allowedHeaders.contains("Range"))
        #expect(allowedHeaders.contains("CMCD-Request, CMCD-Object, CMCD-Status, CMCD-Session"))
        #expect(preflight.header("Access-Control-Max-Age") == "86400")

        let ingestPreflight = try stack.request("OPTIONS", "/ingest/ch/360p/segment.ts")
        #expect(ingestPreflight.status == 204)
        #expect(ingestPreflight.header("Access-Control-Allow-Methods") == "PUT, POST, DELETE, OPTIONS")
        #expect(ingestPreflight.header("Access-Control-Allow-Origin") == "*")
    }

    // MARK: - HEAD

    @Test(arguments: ["/live/ch/index.m3u8", "/live/ch/360p/index.m3u8", "/live/ch/360p/1.ts"])
    func headAnnouncesTheFullLengthAndSendsNoBody(path: String) throws {
        let whole = try stack.get(path)
        #expect(whole.status == 200)
        let connection = try stack.connect()
        let head = try connection.request("HEAD", path)
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == "\(whole.body.count)")
        #expect(head.header("Content-Type") == whole.header("Content-Type"))
        #expect(head.header("Cache-Control") == whole.header("Cache-Control"))
        #expect(head.header("ETag") == whole.header("ETag"))
        #expect(head.header("Access-Control-Allow-Origin") == "*")
        // No body bytes followed: the next response on the connection parses from its status line.
        let after = try connection.request("GET", path)
        #expect(after.status == 200)
        #expect(after.body == whole.body)
        #expect(connection.unconsumedByteCount == 0)
    }

    // MARK: - Byte ranges

    @Test func byteRanges() throws {
        let segment = stack.pushed["360p"]![1]
        let total = segment.count
        let path = "/live/ch/360p/1.ts"

        let first = try stack.get(path, headers: [("Range", "bytes=0-187")])
        #expect(first.status == 206)
        #expect(first.header("Content-Range") == "bytes 0-187/\(total)")
        #expect(first.header("Content-Length") == "188")
        #expect(first.body == Array(segment[0..<188]))
        #expect(first.header("Content-Type") == "video/mp2t")
        #expect(first.header("Access-Control-Allow-Origin") == "*")

        let suffix = try stack.get(path, headers: [("Range", "bytes=-100")])
        #expect(suffix.status == 206)
        #expect(suffix.header("Content-Range") == "bytes \(total - 100)-\(total - 1)/\(total)")
        #expect(suffix.body == Array(segment[(total - 100)...]))

        let open = try stack.get(path, headers: [("Range", "bytes=100-")])
        #expect(open.status == 206)
        #expect(open.header("Content-Range") == "bytes 100-\(total - 1)/\(total)")
        #expect(open.body == Array(segment[100...]))

        let beyond = try stack.get(path, headers: [("Range", "bytes=999999999-")])
        #expect(beyond.status == 416)
        #expect(beyond.header("Content-Range") == "bytes */\(total)")
        #expect(beyond.header("Access-Control-Allow-Origin") == "*")
        #expect(beyond.text == "range not satisfiable: the resource has \(total) bytes\n")

        let multiple = try stack.get(path, headers: [("Range", "bytes=0-99,200-299")])
        #expect(multiple.status == 200)
        #expect(multiple.header("Content-Range") == nil)
        #expect(multiple.body == segment)
    }

    @Test func rangeWithAStaleIfRangeSendsTheWholeSegment() throws {
        let path = "/live/ch/360p/1.ts"
        let etag = try #require(try stack.get(path).header("ETag"))
        let matching = try stack.get(path, headers: [("Range", "bytes=0-9"), ("If-Range", etag)])
        #expect(matching.status == 206)
        #expect(matching.body.count == 10)
        let stale = try stack.get(path, headers: [("Range", "bytes=0-9"), ("If-Range", "\"other\"")])
        #expect(stale.status == 200)
        #expect(stale.body == stack.pushed["360p"]![1])
    }

    // MARK: - Validators

    @Test(arguments: ["/live/ch/index.m3u8", "/live/ch/360p/index.m3u8", "/live/ch/360p/0.ts"])
    func ifNoneMatchAnswers304(path: String) throws {
        let first = try stack.get(path)
        let etag = try #require(first.header("ETag"))
        #expect(first.header("Last-Modified") != nil)
        let revalidated = try stack.get(path, headers: [("If-None-Match", etag)])
        #expect(revalidated.status == 304)
        #expect(revalidated.body.isEmpty)
        #expect(revalidated.header("ETag") == etag)
        #expect(revalidated.header("Cache-Control") == first.header("Cache-Control"))
        let weak = try stack.get(path, headers: [("If-None-Match", "\"zzz\", W/\(etag)")])
        #expect(weak.status == 304)
        let other = try stack.get(path, headers: [("If-None-Match", "\"zzz\"")])
        #expect(other.status == 200)
        #expect(other.body == first.body)
    }

    @Test func aMediaPlaylistGetsANewETagWhenItChanges() throws {
        let before = try stack.get("/live/ch/360p/index.m3u8")
        let etag = try #require(before.header("ETag"))
        try stack.slot()
        let after = try stack.get("/live/ch/360p/index.m3u8", headers: [("If-None-Match", etag)])
        #expect(after.status == 200)
        #expect(after.header("ETag") != etag)
        #expect(after.text.hasSuffix("\n3.ts\n"))
    }

    @Test func ifModifiedSinceOnASegmentAnswers304() throws {
        let path = "/live/ch/360p/0.ts"
        let first = try stack.get(path)
        let lastModified = try #require(first.header("Last-Modified"))
        #expect(lastModified.hasSuffix(" GMT"))
        let revalidated = try stack.get(path, headers: [("If-Modified-Since", lastModified)])
        #expect(revalidated.status == 304)
        #expect(revalidated.body.isEmpty)
        #expect(revalidated.header("Access-Control-Allow-Origin") == "*")
        let older = try stack.get(path, headers: [("If-Modified-Since", "Thu, 01 Jan 1970 00:00:00 GMT")])
        #expect(older.status == 200)
        #expect(older.body == stack.pushed["360p"]![0])
    }

    // MARK: - gzip

    @Test(arguments: ["/live/ch/index.m3u8", "/live/ch/360p/index.m3u8"])
    func playlistsAreGzippedWhenAsked(path: String) throws {
        let plain = try stack.get(path)
        #expect(plain.header("Content-Encoding") == nil)
        #expect(plain.header("Vary") == "Accept-Encoding")

        let compressed = try stack.get(path, headers: [("Accept-Encoding", "gzip, deflate, br")])
        #expect(compressed.status == 200)
        #expect(compressed.header("Content-Encoding") == "gzip")
        #expect(compressed.header("Vary") == "Accept-Encoding")
        #expect(compressed.header("Content-Type") == "application/vnd.apple.mpegurl")
        #expect(compressed.header("ETag") == plain.header("ETag"))
        #expect(compressed.header("Content-Length") == "\(compressed.body.count)")
        #expect(Array(compressed.body.prefix(2)) == [0x1F, 0x8B])
        let inflated = try #require(TestGunzip.decompress(compressed.body))
        #expect(inflated == plain.body)

        let refused = try stack.get(path, headers: [("Accept-Encoding", "gzip;q=0")])
        #expect(refused.header("Content-Encoding") == nil)
        #expect(refused.body == plain.body)
        let refusedSpaced = try stack.get(path, headers: [("Accept-Encoding", "br, gzip; q=0.000")])
        #expect(refusedSpaced.header("Content-Encoding") == nil)
        let weighted = try stack.get(path, headers: [("Accept-Encoding", "gzip;q=0.5")])
        #expect(weighted.header("Content-Encoding") == "gzip")
    }

    @Test func segmentsAreNeverGzipped() throws {
        let segment = try stack.get("/live/ch/360p/0.ts", headers: [("Accept-Encoding", "gzip")])
        #expect(segment.status == 200)
        #expect(segment.header("Content-Encoding") == nil)
        #expect(segment.body == stack.pushed["360p"]![0])
    }

    // MARK: - Errors

    @Test func notFoundBodiesSayWhatIsMissing() throws {
        let cases: [(String, String)] = [
            ("/live/nope/index.m3u8", "unknown channel or path\n"),
            ("/live/ch/720p/index.m3u8", "unknown rendition '720p' of channel 'ch'\n"),
            ("/live/ch/720p/0.ts", "unknown rendition '720p' of channel 'ch'\n"),
            ("/live/ch/360p/99.ts", "no segment '99.ts' in rendition '360p'\n"),
            ("/live/ch/360p/0.m4s", "no segment '0.m4s' in rendition '360p'\n"),
            ("/live/ch/360p/abc.ts", "no segment 'abc.ts' in rendition '360p'\n"),
            ("/live/ch/playlist.m3u8", "unknown path in channel 'ch'\n"),
            ("/nothing", "not found\n"),
        ]
        for (path, body) in cases {
            let response = try stack.get(path)
            #expect(response.status == 404, "\(path)")
            #expect(response.text == body, "\(path)")
            #expect(response.body.count < 200, "\(path)")
            #expect(response.header("Access-Control-Allow-Origin") == "*", "\(path)")
        }
    }

    @Test func aGapEntryAnswers404WithItsReasonWhenFillerIsOff() throws {
        let stack = try OriginTestStack { $0.origin.channels[0].gapResponse = .notFound }
        try stack.slots(3)
        // Let the next slot pass without a push: the ingest loop writes GAP 3 within 1.5 target durations.
        stack.clock.advance(seconds: 3)
        stack.origin.tick()
        let playlist = try stack.playlistText("360p")
        #expect(playlist.hasSuffix("#EXT-X-GAP\n#EXTINF:2.000,\n3.ts\n"))
        let gap = try stack.get("/live/ch/360p/3.ts")
        #expect(gap.status == 404)
        #expect(gap.text == "msn 3 is an EXT-X-GAP entry: the encoder delivered no media for it\n")
        #expect(gap.header("Cache-Control") == "public, max-age=2")
        #expect(gap.header("Access-Control-Allow-Origin") == "*")
    }

    @Test func slateModeListsAndServesTheSlateAsSegments() throws {
        let stack = try OriginTestStack { $0.origin.channels[0].outage = .slate }
        try stack.slots(3)
        // Two slots pass without a push: slate 3 and 4, then the encoder returns at 5.
        stack.clock.advance(seconds: 3)
        stack.origin.tick()
        stack.clock.advance(seconds: 2)
        stack.origin.tick()
        let during = try stack.playlistText("360p")
        #expect(!during.contains("#EXT-X-GAP"))
        #expect(during.contains("\n2.ts\n#EXT-X-DISCONTINUITY\n#EXT-X-PROGRAM-DATE-TIME:"), "\(during)")
        let snapshot = try #require(stack.origin.channel(named: OriginTestStack.channel)?.snapshot.renditions["360p"])
        for msn in [3, 4] {
            let slate = try stack.get("/live/ch/360p/\(msn).ts")
            #expect(slate.status == 200)
            #expect(slate.header("Content-Type") == "video/mp2t")
            #expect(slate.header("Cache-Control") == "public, max-age=31536000, immutable")
            #expect(slate.body == snapshot.entries.first { $0.msn == msn }?.bytes?.array)
            #expect(slate.body.first == 0x47)
            #expect(slate.header("X-HLSOrigin-Slate") == "1")
        }
        #expect(try stack.get("/live/ch/360p/2.ts").header("X-HLSOrigin-Slate") == nil)
    }

    @Test func aGapEntryAnswersAFillerSegmentByDefault() throws {
        stack.clock.advance(seconds: 3)
        stack.origin.tick()
        let playlist = try stack.playlistText("360p")
        #expect(playlist.hasSuffix("#EXT-X-GAP\n#EXTINF:2.000,\n3.ts\n"), "EXT-X-GAP stays in the playlist")
        let gap = try stack.get("/live/ch/360p/3.ts")
        #expect(gap.status == 200)
        #expect(gap.header("Content-Type") == "video/mp2t")
        #expect(gap.header("Cache-Control") == "public, max-age=31536000, immutable")
        #expect(gap.body.count > 188 && gap.body.count % 188 == 0 && gap.body.first == 0x47)
    }

    @Test func writesToLiveAndReadsOfIngestAre405WithAllow() throws {
        let post = try stack.request("POST", "/live/ch/360p/index.m3u8", body: Array("x".utf8))
        #expect(post.status == 405)
        #expect(post.header("Allow") == "GET, HEAD, OPTIONS")
        #expect(post.text == "method POST not allowed here; allowed: GET, HEAD, OPTIONS\n")
        #expect(post.header("Cache-Control") == "no-store")

        let put = try stack.request("PUT", "/live/ch/index.m3u8", body: Array("x".utf8))
        #expect(put.status == 405)

        let get = try stack.get("/ingest/ch/360p/segment.ts")
        #expect(get.status == 405)
        #expect(get.header("Allow") == "PUT, POST, DELETE, OPTIONS")
        #expect(get.header("Access-Control-Allow-Origin") == "*")
        #expect(get.text == "method GET not allowed here; allowed: PUT, POST, DELETE, OPTIONS\n")

        let healthzPost = try stack.request("POST", "/healthz", body: [])
        #expect(healthzPost.status == 405)
        #expect(healthzPost.header("Allow") == "GET, HEAD, OPTIONS")
    }

    // MARK: - Connections

    @Test func keepAliveAnswersThreeRequestsOnOneConnection() throws {
        let connection = try stack.connect()
        let paths = ["/live/ch/index.m3u8", "/live/ch/360p/index.m3u8", "/live/ch/360p/2.ts"]
        var responses: [RawHTTPResponse] = []
        for path in paths {
            let response = try connection.request("GET", path)
            #expect(response.status == 200, "\(path)")
            #expect(response.header("Connection")?.lowercased() != "close", "\(path)")
            responses.append(response)
        }
        #expect(responses[0].text.hasPrefix("#EXTM3U\n"))
        #expect(responses[1].text.hasSuffix("\n2.ts\n"))
        #expect(responses[2].body == stack.pushed["360p"]![2])
    }

    // MARK: - The fast path (per-thread prepared answers)

    /// A plain GET is answered from the libmicrohttpd thread's cache; the same request made non-plain by a header
    /// the route ignores (If-Match) goes the normal route. Both must be the same answer, byte for byte.
    @Test(
        arguments: [
            ("/live/ch/index.m3u8", nil), ("/live/ch/360p/index.m3u8", nil), ("/live/ch/360p/index.m3u8", "gzip"),
            ("/live/ch/180p/1.ts", nil), ("/live/ch/360p/0.ts", "gzip"),
        ] as [(String, String?)])
    func theFastPathAnswersWhatTheNormalRouteAnswers(path: String, encoding: String?) throws {
        let connection = try stack.connect()
        let extra = encoding.map { [("Accept-Encoding", $0)] } ?? []
        // Twice on one connection (one thread): the second is a cache hit.
        let fast = try (0..<2).map { _ in try connection.request("GET", path, headers: extra) }
        let normal = try stack.get(path, headers: extra + [("If-Match", "*")])
        let withoutDate = { (response: RawHTTPResponse) in
            response.headers.filter { $0.name.lowercased() != "date" }.map { "\($0.name): \($0.value)" }
        }
        for answer in fast {
            #expect(answer.status == normal.status)
            #expect(withoutDate(answer) == withoutDate(normal))
            #expect(answer.body == normal.body)
        }
        let head = try connection.request("HEAD", path, headers: extra)
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(head.header("Content-Length") == "\(normal.body.count)")
    }

    @Test func aCachedPlaylistIsNeverServedAfterTheChannelPublishedAnother() throws {
        let connection = try stack.connect()
        for step in 0..<6 {
            // Two GETs per version on the same connection (the second from the cache), then a new slot.
            for _ in 0..<2 {
                let media = try connection.request("GET", "/live/ch/360p/index.m3u8")
                #expect(media.text.hasSuffix("\n\(2 + step).ts\n"), "step \(step)")
                let gzipped = try connection.request(
                    "GET", "/live/ch/180p/index.m3u8", headers: [("Accept-Encoding", "gzip")])
                let inflated = try #require(TestGunzip.decompress(gzipped.body))
                #expect(String(decoding: inflated, as: UTF8.self).hasSuffix("\n\(2 + step).ts\n"), "step \(step)")
            }
            try stack.slot()
        }
    }

    @Test func aSegmentThatLeftTheChannelIsNotServedFromTheCache() throws {
        let connection = try stack.connect()
        #expect(try connection.request("GET", "/live/ch/360p/0.ts").status == 200)
        // Slide segment 0 out of the window and out of retention (window 3 TD at least, retention = window + duration).
        try stack.slots(40)
        let gone = try connection.request("GET", "/live/ch/360p/0.ts")
        #expect(gone.status == 404)
    }

    @Test func theCacheDoesNotKeepSegmentsAliveAfterTheirChannelMovedOn() throws {
        let connection = try stack.connect()
        let segmentBytes = stack.pushed["360p"]![0].count
        // Every new segment read once, as a player does, while the channel publishes a new slot each time.
        for step in 0..<150 {
            try stack.slot()
            #expect(try connection.request("GET", "/live/ch/360p/\(3 + step).ts").status == 200)
            #expect(try connection.request("GET", "/live/ch/360p/index.m3u8").status == 200)
        }
        let usage = stack.handler.live.answers.usage
        // Entries of past versions are swept every 64 stores: at most that many segments (and their playlists).
        #expect(usage.entries <= 2 * LiveAnswerCache.Table.sweepInterval + 2, "\(usage)")
        #expect(usage.bodyBytes < (LiveAnswerCache.Table.sweepInterval + 2) * 2 * segmentBytes, "\(usage)")
    }
}
