import HLSPlaylist
import LiveTimeline
import Markers
import OriginCore
import TestSupport
import Testing

@testable import OriginServer

/// `interstitials:` of a channel in the configuration file, and the admin API's `interstitial` object.
@Suite("Interstitials: configuration and admin API", .offThePool)
struct InterstitialConfigurationTests {
    static func refusal(_ text: String) -> String? { ProtectionConfigurationTests.refusal(text) }

    @Test func everyKeyIsReadAndTheDefaultIsNoAssetWithTheDefaultBound() throws {
        let configuration = try ProtectionConfigurationTests.parse(
            """
            channels:
              - name: a
                inbandCues: interstitials
                interstitials:
                  assetList: "https://ads.example/list?break={id}&dur={duration}"
                  resumeOffset: 0
                  playoutLimit: 60
                  snap: [OUT, IN]
                  restrict: [SKIP]
                  cue: [ONCE]
                  contentMayVary: false
                  timelineOccupies: RANGE
                  timelineStyle: PRIMARY
                  maxListed: 5
                  listedMinutes: 30
              - name: b
            """)
        let a = configuration.origin.channels[0].interstitials
        #expect(a.asset == .list("https://ads.example/list?break={id}&dur={duration}"))
        #expect(a.resumeOffset == 0 && a.playoutLimit == 60 && a.snap == ["OUT", "IN"] && a.restrict == ["SKIP"])
        #expect(a.cue == ["ONCE"] && a.contentMayVary == false && a.timelineOccupies == "RANGE")
        #expect(a.timelineStyle == "PRIMARY" && a.maxListed == 5 && a.listedMilliseconds == 1_800_000)
        let b = configuration.origin.channels[1].interstitials
        #expect(b == InterstitialSettings() && b.asset == nil && b.maxListed == 20 && b.listedMilliseconds == 7_200_000)
    }

    @Test(
        "a bad interstitials setting is refused at load, naming the channel and what is wrong",
        arguments: [
            (
                "interstitials: {assetList: \"https://ads.example/{slot}\"}",
                "test.yaml: channel 'a': interstitials: assetList: unknown placeholder '{slot}' (known: {id}, {duration})"
            ),
            (
                "interstitials: {assetList: \"https://a/l\", assetUri: \"https://a/x.m3u8\"}",
                "test.yaml: channel 'a': interstitials takes assetList or assetUri, not both"
            ),
            (
                "interstitials: {assetUri: \"https://a/x.m3u8\", snap: [LEFT]}",
                "test.yaml: channel 'a': interstitials: X-SNAP: unknown value \"LEFT\" (OUT, IN)"
            ),
            (
                "interstitials: {resumeOffset: 0}",
                "test.yaml: channel 'a': interstitials: assetList or assetUri is required with the other interstitial attributes"
            ),
            (
                "inbandCues: interstitials",
                "test.yaml: channel 'a': inbandCues 'interstitials' needs interstitials.assetList or interstitials.assetUri"
            ),
        ])
    func badSettingsAreRefused(setting: String, message: String) {
        #expect(Self.refusal("channels:\n  - name: a\n    \(setting)\n") == message)
    }

    @Test func unknownKeysAreRefused() {
        let message = Self.refusal("channels:\n  - name: a\n    interstitials: {assetUrl: \"https://a/x\"}\n")
        #expect(message?.contains("unknown key 'assetUrl'") == true, "\(message ?? "")")
    }

    @Test("POST with an interstitial object stores an interstitial marker, shown as the tag and kept by GET")
    func postInterstitial() throws {
        let client = try AdminClient()
        let path = "/admin/channels/ch/dateranges"
        let created = client.send(
            "POST", path,
            body: """
                {"id": "promo-1", "startDate": "2026-01-01T00:00:10Z", "duration": 15, "cue": ["ONCE"],
                 "interstitial": {"assetUri": "https://ads.example/promo.m3u8", "resumeOffset": 0,
                                  "restrict": ["SKIP", "JUMP"], "contentMayVary": false, "timelineStyle": "PRIMARY"}}
                """)
        #expect(created.status == 201, "\(created.body)")
        #expect(
            created.tag
                == "#EXT-X-DATERANGE:ID=\"promo-1\",CLASS=\"com.apple.hls.interstitial\","
                + "START-DATE=\"2026-01-01T00:00:10.000Z\",CUE=\"ONCE\",DURATION=15,"
                + "X-ASSET-URI=\"https://ads.example/promo.m3u8\",X-CONTENT-MAY-VARY=\"NO\",X-RESTRICT=\"SKIP,JUMP\","
                + "X-RESUME-OFFSET=0,X-TIMELINE-STYLE=\"PRIMARY\"")
        let fetched = client.send("GET", path + "/promo-1")
        #expect(fetched.status == 200)
        #expect(fetched.tag == created.tag)
        #expect(client.origin.channel(named: "ch")!.allMarkers.first?.dateRange.isInterstitial == true)
    }

    @Test(
        "a bad interstitial object is refused with 400 naming the field, and nothing is stored",
        arguments: [
            (#""interstitial": {"resumeOffset": 0}"#, "interstitial"),
            (#""interstitial": {"assetUri": "https://a/x.m3u8", "assetList": "https://a/l"}"#, "clientAttributes.X-ASSET-LIST"),
            (#""interstitial": {"assetUri": "https://a/x.m3u8", "snap": ["SIDEWAYS"]}"#, "clientAttributes.X-SNAP"),
            (#""interstitial": {"assetUri": "https://a/x.m3u8", "playoutLimit": "10"}"#, "interstitial.playoutLimit"),
            (#""interstitial": {"assetUri": "https://a/x.m3u8", "skip": true}"#, "interstitial.skip"),
            (#""interstitial": "https://a/x.m3u8""#, "interstitial"),
            (#""class": "com.example.ad", "interstitial": {"assetUri": "https://a/x.m3u8"}"#, "class"),
            // Not URIs (schemathesis's finding: non-ASCII text was written into X-ASSET-URI), nor empty ones.
            (#""interstitial": {"assetUri": "\u00db\ud8d6\udc25\u00d11\u00da"}"#, "interstitial.assetUri"),
            (#""interstitial": {"assetUri": "https://a/x y.m3u8"}"#, "interstitial.assetUri"),
            (#""interstitial": {"assetList": "https://a/l?break={id}"}"#, "interstitial.assetList"),
            (#""interstitial": {"assetList": "https://a/l?%zz"}"#, "interstitial.assetList"),
            (#""interstitial": {"assetUri": ""}"#, "interstitial.assetUri"),
        ])
    func badInterstitialObject(fields: String, field: String) throws {
        let client = try AdminClient()
        let answer = client.send("POST", "/admin/channels/ch/dateranges", body: #"{"id": "x", "# + fields + "}")
        #expect(answer.status == 400, "\(answer.body)")
        #expect(answer.field == field, "\(answer.body)")
        #expect(client.origin.channel(named: "ch")!.allMarkers.isEmpty)
    }

    @Test("a relative asset URI is a URI: it is taken as given")
    func aRelativeAssetURIIsTaken() throws {
        let client = try AdminClient()
        let answer = client.send(
            "POST", "/admin/channels/ch/dateranges",
            body: #"{"id": "slate", "interstitial": {"assetUri": "/slates/promo.m3u8?v=2"}}"#)
        #expect(answer.status == 201, "\(answer.body)")
        #expect(answer.tag?.contains(#"X-ASSET-URI="/slates/promo.m3u8?v=2""#) == true, "\(answer.body)")
    }
}
