import Foundation
import HLSPlaylist
import LiveTimeline
import MediaProbe
import OriginCore
import TestSupport
import Testing

@testable import OriginServer

/// `/live/{ch}/{r}/iframes.m3u8` over real HTTP: cached like the media playlist, with an ETag of its own; byte ranges
/// a player fetches with `Range:`; 404 with the reason when a rendition has none.
@Suite("I-frame playlist route", .offThePool)
struct IFramePlaylistRouteTests {
    @Test func servedLikeTheMediaPlaylistWithItsOwnETag() throws {
        let stack = try OriginTestStack()
        try stack.slots(3)
        let path = "/live/ch/360p/iframes.m3u8"
        let ok = try stack.get(path)
        #expect(ok.status == 200)
        #expect(ok.header("Content-Type") == "application/vnd.apple.mpegurl")
        #expect(ok.header("Cache-Control") == "public, max-age=1")
        #expect(ok.header("Access-Control-Allow-Origin") == "*")
        #expect(ok.text.contains("\n#EXT-X-I-FRAMES-ONLY\n"))
        #expect(ok.text.hasSuffix("\n2.ts\n"))
        let etag = try #require(ok.header("ETag"))
        let media = try stack.get("/live/ch/360p/index.m3u8")
        #expect(media.header("ETag") != etag)
        #expect(etag.contains("-i"))
        // The plain fast path answers the same bytes the second time.
        let again = try stack.get(path)
        #expect(again.body == ok.body)
        #expect(again.header("ETag") == etag)

        let revalidated = try stack.get(path, headers: [("If-None-Match", etag)])
        #expect(revalidated.status == 304)
        let zipped = try stack.get(path, headers: [("Accept-Encoding", "gzip")])
        #expect(zipped.header("Content-Encoding") == "gzip")
        #expect(TestGunzip.decompress(zipped.body) == ok.body)

        try stack.slot()
        let changed = try stack.get(path, headers: [("If-None-Match", etag)])
        #expect(changed.status == 200)
        #expect(changed.header("ETag") != etag)
        #expect(changed.text.hasSuffix("\n3.ts\n"))
    }

    @Test func eachByteRangeIsTheSegmentsPrefixThroughItsFirstKeyframe() throws {
        let stack = try OriginTestStack()
        try stack.slots(3)
        let playlist = try MediaPlaylist.parse(try stack.get("/live/ch/180p/iframes.m3u8").text)
        #expect(playlist.segments.count == 3)
        for (msn, segment) in playlist.segments.enumerated() {
            let range = try #require(segment.byteRange, "msn \(msn)")
            #expect(range.offset == 0)
            let fetched = try stack.get(
                "/live/ch/180p/\(segment.uri)", headers: [("Range", "bytes=0-\(range.length - 1)")])
            #expect(fetched.status == 206)
            #expect(fetched.body == Array(stack.pushed["180p"]![msn].prefix(range.length)))
            let info = try fetched.body.withUnsafeBytes { raw in try MediaProbe.probeSegment(raw, initSection: nil) }
            #expect(info.keyframes.count == 1, "msn \(msn): the range holds exactly one keyframe")
            #expect(info.startsWithKeyframe)
        }
    }

    @Test func theMultivariantListsOneIFrameStreamPerVideoRendition() throws {
        let stack = try OriginTestStack()
        try stack.slots(2)
        let text = try stack.get("/live/ch/index.m3u8").text
        let lines = text.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-I-FRAME-STREAM-INF:") }
        #expect(lines.count == 2)
        #expect(lines.first?.hasSuffix("CODECS=\"avc1.4d401e\",RESOLUTION=640x360,VIDEO-RANGE=SDR,URI=\"360p/iframes.m3u8\"") == true)
        #expect(lines.last?.hasSuffix("CODECS=\"avc1.4d400c\",RESOLUTION=320x180,VIDEO-RANGE=SDR,URI=\"180p/iframes.m3u8\"") == true)
        // HLS rules 36 (and 30/33, which hold trivially without tokens or keys) over what a client fetches.
        let multivariant = try MultivariantPlaylist.parse(text)
        var targets: [String: MediaPlaylist] = [:]
        for stream in multivariant.iFrameStreams {
            let target = try MediaPlaylist.parse(try stack.get("/live/ch/" + stream.uri).text)
            #expect(target.validateDefinesAndKeys(importable: []).isEmpty)
            targets[stream.uri] = target
        }
        #expect(multivariant.validateIFrameStreams(targets: targets).isEmpty)
        #expect(multivariant.validate().isEmpty)
    }

    @Test func theDVRMultivariantHasNoIFrameStreams() throws {
        let directory = NSTemporaryDirectory() + "iframes-dvr-" + UUID().uuidString
        let stack = try OriginTestStack { configuration in
            configuration.origin.dataDirectory = directory
            configuration.origin.channels[0].window = .segments(3)
            configuration.origin.channels[0].dvr = DVRConfiguration(hours: 1)
        }
        try stack.slots(6)
        #expect(try stack.get("/live/ch/index.m3u8").text.contains("#EXT-X-I-FRAME-STREAM-INF:"))
        let dvr = try stack.get("/live/ch/index.m3u8?start=-10")
        #expect(dvr.status == 200)
        #expect(dvr.text.contains("360p/index.m3u8?start="))
        #expect(!dvr.text.contains("I-FRAME"), "\(dvr.text)")
    }

    @Test func anAudioOnlyRenditionHasNone() throws {
        let stack = try OriginTestStack()
        let audio = try OriginTestStack.packageFile("Tests/MediaProbeTests/Fixtures/audio.aac")
        stack.clock.advance(seconds: 2)
        #expect(try stack.push("en", audio, file: "seg0.aac", channel: "radio").status == 201)
        stack.clock.advance(seconds: 1.1)
        stack.origin.tick()
        #expect(try stack.get("/live/radio/en/index.m3u8").status == 200)
        let response = try stack.get("/live/radio/en/iframes.m3u8")
        #expect(response.status == 404)
        #expect(response.text == "rendition 'en' has no video: no I-frame playlist\n")
        #expect(response.header("Cache-Control") == "no-store")
        #expect(try stack.get("/live/radio/index.m3u8").text.contains("I-FRAME") == false)
    }

    @Test func aChannelWithIFramePlaylistsOffHasNone() throws {
        let stack = try OriginTestStack { $0.origin.channels[0].iFramePlaylists = false }
        try stack.slots(2)
        #expect(try stack.get("/live/ch/360p/index.m3u8").status == 200)
        let response = try stack.get("/live/ch/360p/iframes.m3u8")
        #expect(response.status == 404)
        #expect(response.text == "channel 'ch' has I-frame playlists turned off\n")
        #expect(try stack.get("/live/ch/index.m3u8").text.contains("I-FRAME") == false)
    }

    @Test func beforeAnyMediaTheIFramePlaylistIsNotFound() throws {
        let stack = try OriginTestStack()
        let response = try stack.get("/live/ch/360p/iframes.m3u8")
        #expect(response.status == 404)
    }
}
