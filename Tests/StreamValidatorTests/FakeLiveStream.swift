import Foundation
import HLSPlaylist
import StreamValidator
import TestSource

/// A made-up live stream fed to a ``StreamChecker`` on a manual clock (milliseconds): a multivariant playlist with
/// renditions `a` and `b` (or one media playlist), each reloaded every 500 ms, a sliding window of six 2 s segments
/// with one new segment every 2 s, real MPEG-TS segments from the test source (the same bytes in every rendition),
/// and every request the checker makes answered at once (removed segments when due). Each fault test changes one
/// thing through ``window`` or ``answer``.
struct FakeLiveStream {
    /// What one rendition lists at one time.
    struct Window {
        var targetDuration = 2
        var first: UInt64
        var last: UInt64
        var discontinuitySequence: UInt64 = 0
        var endList = false
        /// PDT of MSN 0, ms since 1970 (a whole second: 2023-11-14T22:13:20.000Z).
        var programDateTimeBase: Int64? = 1_700_000_000_000
        /// Written PDT text; default `YYYY-MM-DDThh:mm:ss.sssZ`.
        var formatProgramDateTime: @Sendable (ProgramDateTime) -> String = { $0.formatted }
        var uri: @Sendable (UInt64) -> String = { "\($0).ts" }
        var duration: @Sendable (UInt64) -> Double = { _ in 2 }
        /// EXT-X-DATERANGE attributes (after ID and START-DATE) written before the first listed segment.
        var dateRange: String? = "CLASS=\"com.example.ad\",PLANNED-DURATION=30"
        /// Low-Latency HLS: EXT-X-PART-INF's PART-TARGET, nil for none.
        var partTarget: Double?
        /// The parts listed before each segment's EXTINF (with `partTarget`): durations and INDEPENDENT.
        var parts: @Sendable (UInt64) -> [(duration: Double, independent: Bool)] = { _ in
            [(0.5, true), (0.5, false), (0.5, false), (0.5, false)]
        }

        func text() -> String {
            var text = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:\(targetDuration)\n"
            text += "#EXT-X-MEDIA-SEQUENCE:\(first)\n#EXT-X-DISCONTINUITY-SEQUENCE:\(discontinuitySequence)\n"
            if let partTarget { text += "#EXT-X-PART-INF:PART-TARGET=\(String(format: "%.3f", partTarget))\n" }
            var start = programDateTimeBase.map { base in
                base + (0..<first).reduce(Int64(0)) { $0 + Int64((duration($1) * 1000).rounded()) }
            }
            for msn in first...last {
                if msn == first, let dateRange {
                    let date = ProgramDateTime(millisecondsSince1970: 1_700_000_000_000).formatted
                    text += "#EXT-X-DATERANGE:ID=\"ad-1\",START-DATE=\"\(date)\",\(dateRange)\n"
                }
                if let pdt = start {
                    text +=
                        "#EXT-X-PROGRAM-DATE-TIME:\(formatProgramDateTime(ProgramDateTime(millisecondsSince1970: pdt)))\n"
                    start = pdt + Int64((duration(msn) * 1000).rounded())
                }
                if partTarget != nil {
                    for (index, part) in parts(msn).enumerated() {
                        text += "#EXT-X-PART:DURATION=\(String(format: "%.3f", part.duration)),URI=\"\(msn).\(index).ts\""
                        text += part.independent ? ",INDEPENDENT=YES\n" : "\n"
                    }
                }
                text += "#EXTINF:\(String(format: "%.3f", duration(msn))),\n\(uri(msn))\n"
            }
            if endList { text += "#EXT-X-ENDLIST\n" }
            return text
        }
    }

    static let base = "http://origin.test/live/demo/"
    static let profile = TestSourceProfile.named("180p")!
    /// 24 continuous 2 s MPEG-TS segments, by MSN.
    static let segments: [[UInt8]] = {
        var generator = try! TestStreamGenerator(profile: profile, segmentDuration: 2)
        return (0..<24).map { _ in generator.nextSegment().bytes }
    }()
    /// The largest segment's bit rate: the BANDWIDTH the multivariant playlist declares.
    static let peakBitrate = segments.map { $0.count * 8 / 2 }.max()!

    static let playlistHeaders = [
        "Content-Type": "application/vnd.apple.mpegurl", "Cache-Control": "max-age=1",
        "Access-Control-Allow-Origin": "*",
    ]
    static let segmentHeaders = [
        "Content-Type": "video/mp2t", "Cache-Control": "max-age=31536000", "Access-Control-Allow-Origin": "*",
    ]

    /// The renditions; empty: the URL is one media playlist.
    var renditions = ["a", "b"]
    /// How long the stream is watched, ms.
    var duration: Int64 = 20_000
    /// What rendition `name` lists at time `now` (ms). Default: ``sliding(at:)``.
    var window: @Sendable (_ name: String, _ now: Int64) -> Window = { _, now in FakeLiveStream.sliding(at: now) }
    /// The answer to a segment request at a time; default: 200 with the MSN's bytes.
    var answer: @Sendable (SegmentRequest, Int64) -> (status: Int, headers: [String: String]) = { _, _ in
        (200, FakeLiveStream.segmentHeaders)
    }
    var playlistHeaders = FakeLiveStream.playlistHeaders
    var multivariantAttributes =
        "BANDWIDTH=\(FakeLiveStream.peakBitrate),CODECS=\"\(FakeLiveStream.profile.videoCodec),mp4a.40.2\","
        + "RESOLUTION=320x180"

    /// Six segments, one more every 2 s: MSN 0...5 at 0 s, 1...6 at 2 s, ...
    static func sliding(at now: Int64) -> Window {
        let last = 5 + UInt64(now / 2000)
        return Window(first: last - 5, last: last)
    }

    /// Watches the stream for ``duration`` and returns the report.
    func run() -> ValidationReport {
        let entry = Self.base + "index.m3u8"
        var checker = StreamChecker(url: entry)
        var playlists: [String: String] = [:]  // URL -> rendition name
        if renditions.isEmpty {
            playlists[entry] = ""
        } else {
            let text =
                "#EXTM3U\n"
                + renditions.map { "#EXT-X-STREAM-INF:\(multivariantAttributes)\n\($0)/index.m3u8\n" }.joined()
            let urls = checker.observeMultivariant(
                HTTPFetch(url: entry, status: 200, headers: playlistHeaders, body: Array(text.utf8), sent: 0))
            for (url, name) in zip(urls, renditions) { playlists[url] = name }
        }
        var pending: [SegmentRequest] = []
        var now: Int64 = 0
        while now <= duration {
            for url in playlists.keys.sorted() {
                let text = window(playlists[url]!, now).text()
                let fetch = HTTPFetch(
                    url: url, status: 200, headers: playlistHeaders, body: Array(text.utf8), sent: now, received: now)
                pending += checker.observeMediaPlaylist(url, fetch)
            }
            for request in pending where request.notBefore <= now {
                checker.observeSegment(request, answer(request, now: now))
            }
            pending.removeAll { $0.notBefore <= now }
            now += 500
        }
        for request in pending { checker.observeSegment(request, answer(request, now: now)) }
        return checker.finish(at: now)
    }

    private func answer(_ request: SegmentRequest, now: Int64) -> HTTPFetch {
        let (status, headers) = answer(request, now)
        let bytes = request.msn < Self.segments.count ? Self.segments[Int(request.msn)] : []
        return HTTPFetch(
            url: request.url, status: status, headers: headers, body: status == 200 ? bytes : [], sent: now,
            received: now)
    }
}
