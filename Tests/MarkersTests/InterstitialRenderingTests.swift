import HLSPlaylist
import Markers
import Testing

/// HLS Interstitials (8216bis Appendix D) rendered for a channel's breaks, and the bound on how many are listed.
@Suite("Interstitials: breaks rendered as interstitial date ranges, bounded in DVR playlists")
struct InterstitialRenderingTests {
    static func settings(_ asset: InterstitialSettings.Asset) -> InterstitialSettings {
        var settings = InterstitialSettings()
        settings.asset = asset
        return settings
    }

    static func book(_ requests: [MarkerRequest], now: Int64 = markerT0) throws -> MarkerBook {
        var book = MarkerBook()
        for request in requests { _ = try book.add(request, nowMilliseconds: now) }
        return book
    }

    @Test("a break is listed with its own DATERANGE and an interstitial one with the filled, escaped asset list")
    func breakRendersAnInterstitial() throws {
        var settings = Self.settings(.list("https://ads.example/list?break={id}&dur={duration}"))
        settings.resumeOffset = 0
        settings.playoutLimit = 30
        settings.snap = ["OUT", "IN"]
        settings.restrict = ["SKIP", "JUMP"]
        settings.cue = ["ONCE"]
        settings.contentMayVary = true
        settings.timelineOccupies = "RANGE"
        settings.timelineStyle = "HIGHLIGHT"
        let book = try Self.book([
            MarkerRequest(id: "ad 1&x", startDate: date(5), duration: 30.5, scte35: .out)
        ])
        let listing = InterstitialListing(settings: settings, includesInband: false)
        let overlay = book.overlay(entries: entries(from: 0, count: 5, startSeconds: 0), interstitials: listing)
        let listed = try #require(overlay.dateRanges[2])
        #expect(listed.count == 2)
        #expect(listed[0] == book.markers["ad 1&x"]?.dateRange)
        #expect(
            listed[1].renderedTag
                == "#EXT-X-DATERANGE:ID=\"ad 1&x/interstitial\",CLASS=\"com.apple.hls.interstitial\","
                + "START-DATE=\"2026-01-01T00:00:05.000Z\",CUE=\"ONCE\",DURATION=30.5,"
                + "X-ASSET-LIST=\"https://ads.example/list?break=ad%201%26x&dur=30.5\",X-RESUME-OFFSET=0,"
                + "X-PLAYOUT-LIMIT=30,X-SNAP=\"OUT,IN\",X-RESTRICT=\"SKIP,JUMP\",X-CONTENT-MAY-VARY=\"YES\","
                + "X-TIMELINE-OCCUPIES=\"RANGE\",X-TIMELINE-STYLE=\"HIGHLIGHT\"")
        try listed[1].validate()
    }

    @Test("an open break's interstitial keeps its asset URI when the cue-in adds DURATION (values never change)")
    func cueInOnlyAddsAttributes() throws {
        var book = try Self.book([MarkerRequest(id: "b", startDate: date(1), plannedDuration: 20)])
        let settings = Self.settings(.uri("https://ads.example/{id}/{duration}.m3u8"))
        let before = try #require(settings.interstitial(for: book.markers["b"]!))
        _ = try book.close(id: "b", patch: MarkerPatch(duration: 15), nowMilliseconds: markerT0 + 16_000)
        let after = try #require(settings.interstitial(for: book.markers["b"]!))
        #expect(before[interstitial: .assetURI] == .quotedString("https://ads.example/b/20.m3u8"))
        #expect(after[interstitial: .assetURI] == before[interstitial: .assetURI])
        #expect(before.duration == nil && after.duration == 15 && after.plannedDuration == 20)
    }

    @Test("a break opened without a duration keeps an empty {duration} once the cue-in sets DURATION")
    func openBreakDurationNeverFilledLater() throws {
        var book = try Self.book([MarkerRequest(id: "open", startDate: date(1), scte35: .out)])
        let settings = Self.settings(.list("https://ads.example/list?break={id}&dur={duration}"))
        let before = try #require(settings.interstitial(for: book.markers["open"]!))
        _ = try book.close(id: "open", patch: MarkerPatch(duration: 15), nowMilliseconds: markerT0 + 16_000)
        let after = try #require(settings.interstitial(for: book.markers["open"]!))
        #expect(before[interstitial: .assetList] == .quotedString("https://ads.example/list?break=open&dur="))
        #expect(after[interstitial: .assetList] == before[interstitial: .assetList])
        #expect(after.duration == 15)
    }

    @Test("cue-ins, other classes and posted interstitials get no rendered interstitial; in-band cues only when asked")
    func whichMarkersAreBreaks() throws {
        let book = try Self.book([
            MarkerRequest(id: "in", startDate: date(1), scte35: .in),
            MarkerRequest(id: "chapter", classAttribute: "com.example.chapter", startDate: date(1), duration: 5),
            MarkerRequest(
                id: "posted", classAttribute: DateRange.interstitialClass, startDate: date(1),
                clientAttributes: [MarkerAttribute(name: "X-ASSET-URI", value: .string("https://a.example/x.m3u8"))]),
            MarkerRequest(id: "plain", startDate: date(1)),
        ])
        let settings = Self.settings(.uri("https://ads.example/{id}.m3u8"))
        #expect(settings.interstitial(for: book.markers["in"]!) == nil)
        #expect(settings.interstitial(for: book.markers["chapter"]!) == nil)
        #expect(settings.interstitial(for: book.markers["posted"]!) == nil)
        #expect(settings.interstitial(for: book.markers["plain"]!) != nil)
        var inband = book.markers["plain"]!
        inband.source = .inband
        inband.scte35Out = [0xFC]
        #expect(InterstitialListing(settings: settings, includesInband: false).dateRanges(for: inband).count == 1)
        #expect(InterstitialListing(settings: settings, includesInband: true).dateRanges(for: inband).count == 2)
        inband.segmentationTypeId = 0x23  // break end: not a break start
        #expect(InterstitialListing(settings: settings, includesInband: true).dateRanges(for: inband).count == 1)
        // Without an asset nothing is added, and no listing leaves the overlay as it was.
        let plain = book.overlay(entries: entries(from: 0, count: 3, startSeconds: 0))
        let withoutAsset = book.overlay(
            entries: entries(from: 0, count: 3, startSeconds: 0),
            interstitials: InterstitialListing(settings: InterstitialSettings(), includesInband: true))
        #expect(plain == withoutAsset)
    }

    @Test("in cue mode a break's own DATERANGE gives way to the cue tags, its interstitial stays")
    func cueModeKeepsTheInterstitial() throws {
        let book = try Self.book([MarkerRequest(id: "b", startDate: date(1), duration: 4, scte35: .out)])
        let overlay = book.overlay(
            entries: entries(from: 0, count: 4, startSeconds: 0), cueTags: CueTagOptions(mode: .cue),
            interstitials: InterstitialListing(
                settings: Self.settings(.uri("https://ads.example/{id}.m3u8")), includesInband: false))
        #expect(overlay.dateRanges[0]?.map(\.id) == ["b/interstitial"])
    }

    @Test("a DVR listing keeps the newest maxListed interstitials of the last listedMilliseconds before its end")
    func dvrBound() throws {
        var settings = Self.settings(.list("https://ads.example/{id}"))
        settings.maxListed = 3
        settings.listedMilliseconds = 600_000
        // A break every minute for 20 minutes, and one posted interstitial at minute 19.5.
        var requests = (0..<20).map { MarkerRequest(id: "b\($0)", startDate: date(Double($0) * 60), duration: 10) }
        requests.append(
            MarkerRequest(
                id: "posted", classAttribute: DateRange.interstitialClass, startDate: date(19.5 * 60),
                clientAttributes: [MarkerAttribute(name: "X-ASSET-URI", value: .string("https://a.example/p.m3u8"))]))
        let book = try Self.book(requests)
        let listing = book.interstitialListing(
            settings: settings, includesInband: false, edgeMilliseconds: markerT0 + 20 * 60_000)
        let overlay = book.overlay(entries: entries(from: 0, count: 600, startSeconds: 0), interstitials: listing)
        let listed = overlay.dateRanges.values.flatMap { $0 }
        let interstitials = listed.filter(\.isInterstitial).map(\.id).sorted()
        #expect(interstitials == ["b18/interstitial", "b19/interstitial", "posted"])
        // Every break keeps its own DATERANGE.
        #expect(listed.filter { !$0.isInterstitial }.count == 20)
        // The bound is the START-DATE of the oldest kept: it moves with the set, not with every request.
        #expect(listing.listedFromMilliseconds == markerT0 + 18 * 60_000)
        let later = book.interstitialListing(
            settings: settings, includesInband: false, edgeMilliseconds: markerT0 + 20 * 60_000 + 30_000)
        #expect(later == listing)
        // The horizon: 10 minutes before an edge at minute 40 holds none of them.
        let past = book.interstitialListing(
            settings: settings, includesInband: false, edgeMilliseconds: markerT0 + 40 * 60_000)
        #expect(past.dateRanges(for: book.markers["posted"]!).isEmpty)
        #expect(past.dateRanges(for: book.markers["b19"]!).count == 1)
    }

    @Test("settings problems: unknown placeholder, unbalanced braces, spaces, relative asset list, bad values")
    func settingsProblems() {
        #expect(Self.settings(.list("https://ads.example/list?break={id}&dur={duration}")).problem() == nil)
        #expect(
            Self.settings(.list("https://ads.example/{break}")).problem()
                == "assetList: unknown placeholder '{break}' (known: {id}, {duration})")
        #expect(Self.settings(.list("https://ads.example/{id")).problem() == "assetList: '{' without '}'")
        #expect(Self.settings(.uri("https://ads.example/a b.m3u8")).problem()?.contains("not allowed in a URI") == true)
        #expect(Self.settings(.list("ads/list.json")).problem()?.contains("http(s) URL") == true)
        var bad = Self.settings(.uri("https://ads.example/a.m3u8"))
        bad.snap = ["OUT", "LEFT"]
        #expect(bad.problem() == "X-SNAP: unknown value \"LEFT\" (OUT, IN)")
        bad.snap = []
        bad.timelineOccupies = "LINE"
        #expect(bad.problem() == "X-TIMELINE-OCCUPIES: unknown value \"LINE\" (POINT, RANGE)")
        bad.timelineOccupies = nil
        bad.cue = ["PRE", "POST"]
        #expect(bad.problem() == "CUE: PRE and POST together")
        var noAsset = InterstitialSettings()
        noAsset.resumeOffset = 0
        #expect(noAsset.problem() == "assetList or assetUri is required with the other interstitial attributes")
    }
}
