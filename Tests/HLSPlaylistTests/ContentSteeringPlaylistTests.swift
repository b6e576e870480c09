import TestSupport
import Testing

@testable import HLSPlaylist

@Suite("Content Steering in the multivariant playlist", .offThePool)
struct ContentSteeringPlaylistTests {
    static let pathways = [
        SteeringPathway(id: "origin-a", uriPrefix: "http://10.0.0.1:8080/live/news/"),
        SteeringPathway(id: "cdn.b_2", uriPrefix: "https://cdn-b.example/hls/live/news/"),
    ]

    static let plain: MultivariantPlaylist = {
        var playlist = MultivariantPlaylist(
            independentSegments: true,
            renditions: [
                Rendition(
                    type: .audio, groupID: "aac", name: "English", uri: "en/index.m3u8", language: "en",
                    isDefault: true, autoselect: true, channels: "2"),
                Rendition(type: .closedCaptions, groupID: "cc", name: "CC1", language: "en", instreamID: "CC1"),
            ],
            variants: [
                VariantStream(
                    uri: "hi/index.m3u8?token={$token}", bandwidth: 900_000, codecs: ["avc1.4d401e", "mp4a.40.2"],
                    resolution: Resolution(width: 640, height: 360), frameRate: 25, audioGroup: "aac",
                    closedCaptions: .group("cc"))
            ])
        playlist.iFrameStreams = [
            IFrameStream(uri: "hi/iframes.m3u8", bandwidth: 40_000, codecs: ["avc1.4d401e"])
        ]
        return playlist
    }()

    @Test func everyVariantIFrameStreamAndRenditionIsListedOncePerPathwayWithItsOwnGroups() {
        let text = Self.plain.steered(pathways: Self.pathways, serverURI: "steering.json").render()
        #expect(
            text == """
                #EXTM3U
                #EXT-X-INDEPENDENT-SEGMENTS
                #EXT-X-CONTENT-STEERING:SERVER-URI="steering.json",PATHWAY-ID="origin-a"
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aac~origin-a",NAME="English",LANGUAGE="en",DEFAULT=YES,AUTOSELECT=YES,CHANNELS="2",URI="http://10.0.0.1:8080/live/news/en/index.m3u8"
                #EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID="cc~origin-a",NAME="CC1",LANGUAGE="en",DEFAULT=NO,AUTOSELECT=NO,INSTREAM-ID="CC1"
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aac~cdn.b_2",NAME="English",LANGUAGE="en",DEFAULT=YES,AUTOSELECT=YES,CHANNELS="2",URI="https://cdn-b.example/hls/live/news/en/index.m3u8"
                #EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID="cc~cdn.b_2",NAME="CC1",LANGUAGE="en",DEFAULT=NO,AUTOSELECT=NO,INSTREAM-ID="CC1"
                #EXT-X-STREAM-INF:BANDWIDTH=900000,CODECS="avc1.4d401e,mp4a.40.2",RESOLUTION=640x360,FRAME-RATE=25.000,AUDIO="aac~origin-a",CLOSED-CAPTIONS="cc~origin-a",PATHWAY-ID="origin-a"
                http://10.0.0.1:8080/live/news/hi/index.m3u8?token={$token}
                #EXT-X-STREAM-INF:BANDWIDTH=900000,CODECS="avc1.4d401e,mp4a.40.2",RESOLUTION=640x360,FRAME-RATE=25.000,AUDIO="aac~cdn.b_2",CLOSED-CAPTIONS="cc~cdn.b_2",PATHWAY-ID="cdn.b_2"
                https://cdn-b.example/hls/live/news/hi/index.m3u8?token={$token}
                #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=40000,CODECS="avc1.4d401e",PATHWAY-ID="origin-a",URI="http://10.0.0.1:8080/live/news/hi/iframes.m3u8"
                #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=40000,CODECS="avc1.4d401e",PATHWAY-ID="cdn.b_2",URI="https://cdn-b.example/hls/live/news/hi/iframes.m3u8"

                """)
    }

    @Test func aSteeredPlaylistKeepsEveryRuleAndThePlainOnesAsWell() {
        for playlist in [Self.plain, MultivariantPlaylistTests.withAudioOnly] {
            let steered = playlist.steered(pathways: Self.pathways, serverURI: "steering.json")
            #expect(steered.steeringViolations().isEmpty)
            #expect(steered.variants.count == 2 * playlist.variants.count)
        }
        #expect(Self.plain.validate().isEmpty)
        #expect(Self.plain.steered(pathways: Self.pathways, serverURI: "steering.json").validate().isEmpty)
        #expect(Self.plain.steered(pathways: [], serverURI: "x") == Self.plain)
    }

    @Test func renamedGroupsNeverCollideWhateverTheGroupAndPathwayNames() {
        // With `-` as the separator, group "a" on pathway "b-c" and group "a-b" on pathway "c" were both "a-b-c".
        var playlist = Self.plain
        playlist.renditions = [
            Rendition(type: .audio, groupID: "a", name: "One", uri: "one.m3u8", isDefault: true, autoselect: true),
            Rendition(type: .audio, groupID: "a-b", name: "Two", uri: "two.m3u8", isDefault: true, autoselect: true),
        ]
        playlist.variants[0].closedCaptions = nil
        playlist.variants.append(playlist.variants[0])
        playlist.variants[1].audioGroup = "a-b"
        playlist.variants[1].bandwidth = 500_000
        let pathways = [
            SteeringPathway(id: "b-c", uriPrefix: "http://one/"), SteeringPathway(id: "c", uriPrefix: "http://two/"),
        ]
        let steered = playlist.steered(pathways: pathways, serverURI: "steering.json")
        #expect(Set(steered.renditions.map(\.groupID)).count == 4)
        #expect(steered.steeringViolations().isEmpty)
    }

    @Test(arguments: [
        ("hi/index.m3u8?back=http://x/y", false), ("http://cdn/x.m3u8", true), ("HTTPS://cdn/x.m3u8", true),
        ("skd+a.b-c:1", true), ("1http://x", false), ("a/b:c", false), (":x", false),
    ])
    func onlyAURIStartingWithASchemeIsAbsolute(uri: String, absolute: Bool) {
        #expect(MultivariantPlaylist.hasScheme(uri) == absolute)
    }

    @Test func brokenSteeringRulesAreNamed() {
        let steered = Self.plain.steered(pathways: Self.pathways, serverURI: "steering.json")
        var shared = steered
        shared.variants[1].audioGroup = "aac~origin-a"
        #expect(shared.steeringViolations().contains { $0.contains("'aac~origin-a' is referenced from pathways") })
        var unknown = steered
        unknown.contentSteering?.pathwayID = "elsewhere"
        #expect(
            unknown.steeringViolations() == [
                "EXT-X-CONTENT-STEERING names PATHWAY-ID 'elsewhere', which no variant has"
            ])
        var illegal = steered
        illegal.variants[1].pathwayID = "cdn b"
        illegal.iFrameStreams[1].pathwayID = "cdn b"
        #expect(illegal.steeringViolations().contains { $0.contains("'cdn b' has characters") })
        var uneven = steered
        uneven.variants[1].bandwidth += 1
        #expect(uneven.steeringViolations() == ["pathway 'origin-a' offers other variants than pathway 'cdn.b_2'"])
        var mixed = steered
        mixed.variants[1].pathwayID = nil
        #expect(mixed.steeringViolations().contains("some variants have a PATHWAY-ID and others none"))
        var empty = steered
        empty.contentSteering?.serverURI = ""
        #expect(empty.steeringViolations() == ["EXT-X-CONTENT-STEERING has an empty SERVER-URI"])
    }

    @Test(arguments: [("origin-a", true), (".", true), ("A.b-c_9", true), ("", false), ("a b", false), ("é", false)])
    func pathwayIDs(id: String, legal: Bool) {
        #expect(MultivariantPlaylist.isLegalPathwayID(id) == legal)
    }
}
