import OriginCore
import TestSupport
import Testing

/// Content types and caching of the containers other than MPEG-TS, pushed from files of the repository
/// (MediaProbe's fixtures, made by ffmpeg 5.1).
@Suite("Content types of fMP4, initialization sections, ADTS and WebVTT", .offThePool)
struct ContainerContentTypeTests {
    @Test func fragmentedMP4InitSectionAndSegment() throws {
        let stack = try OriginTestStack()
        let initSection = try OriginTestStack.packageFile("Tests/MediaProbeTests/Fixtures/fmp4-h264-aac-init.mp4")
        let segment = try OriginTestStack.packageFile("Tests/MediaProbeTests/Fixtures/fmp4-h264-aac-0.m4s")
        let initResponse = try stack.push("v", initSection, file: "init.mp4", channel: "fm")
        #expect(initResponse.status == 201)
        #expect(initResponse.text == "v: init-0.mp4\n")
        stack.clock.advance(seconds: 2)
        #expect(try stack.push("v", segment, file: "seg0.m4s", channel: "fm").status == 201)
        // The first slots of a channel created by pushes wait for renditions not announced yet, until their
        // deadline (slot end + TD/2).
        stack.clock.advance(seconds: 1)
        stack.origin.tick()

        let playlist = try stack.get("/live/fm/v/index.m3u8")
        #expect(playlist.status == 200)
        #expect(playlist.text.contains("#EXT-X-MAP:URI=\"init-0.mp4\"\n"))
        #expect(playlist.text.hasSuffix("\n0.m4s\n"))

        let served = try stack.get("/live/fm/v/init-0.mp4")
        #expect(served.status == 200)
        #expect(served.header("Content-Type") == "video/mp4")
        #expect(served.header("Cache-Control") == "public, max-age=31536000, immutable")
        #expect(served.header("Access-Control-Allow-Origin") == "*")
        #expect(served.body == initSection)
        let range = try stack.get("/live/fm/v/init-0.mp4", headers: [("Range", "bytes=0-7")])
        #expect(range.status == 206)
        #expect(range.header("Content-Range") == "bytes 0-7/\(initSection.count)")

        let media = try stack.get("/live/fm/v/0.m4s")
        #expect(media.status == 200)
        #expect(media.header("Content-Type") == "video/iso.segment")
        #expect(media.header("Cache-Control") == "public, max-age=31536000, immutable")
        #expect(media.body == segment)

        for missing in ["init-1.mp4", "init-00.mp4", "init-x.mp4", "init-+0.mp4", "init-.mp4", "init-0.mp4x"] {
            let response = try stack.get("/live/fm/v/\(missing)")
            #expect(response.status == 404, "\(missing)")
        }
    }

    @Test func packedAudio() throws {
        let stack = try OriginTestStack()
        let audio = try OriginTestStack.packageFile("Tests/MediaProbeTests/Fixtures/audio.aac")
        stack.clock.advance(seconds: 2)
        let response = try stack.push("a", audio, file: "seg0.aac", channel: "radio")
        #expect(response.status == 201)
        stack.clock.advance(seconds: 1.1)  // the first slot's deadline (see above)
        stack.origin.tick()
        let listed = try stack.get("/live/radio/a/index.m3u8")
        #expect(listed.text.hasSuffix("\n0.aac\n"), "\(listed.status) \(listed.text)")
        let served = try stack.get("/live/radio/a/0.aac")
        #expect(served.status == 200)
        #expect(served.header("Content-Type") == "audio/aac")
        #expect(served.header("Cache-Control") == "public, max-age=31536000, immutable")
        #expect(served.body == audio)
    }

    /// ffmpeg POSTs a variant's WebVTT under the video rendition's path: the cue file goes to `{r}-vtt`, keeps its
    /// pushed map, and is served as `text/vtt`; the POSTed `index_vtt.m3u8` is read as that rendition's hint.
    @Test func webVTTPostedUnderTheVideoPathIsServedAsTextVTT() throws {
        let stack = try OriginTestStack()
        let cue = "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:900000,LOCAL:00:00:00.000\n\n00:00.000 --> 00:02.000\nhello\n"
        let response = try stack.request("POST", "/ingest/subs/lo/index0.vtt", body: Array(cue.utf8))
        #expect(response.status == 201, "\(response.status) \(response.text)")
        let hint = try stack.request(
            "POST", "/ingest/subs/lo/index_vtt.m3u8",
            body: Array("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\nindex0.vtt\n".utf8))
        #expect(hint.text.hasPrefix("lo-vtt:"), "\(hint.status) \(hint.text)")
        stack.clock.advance(seconds: 4)
        stack.origin.tick()
        let listed = try stack.get("/live/subs/lo-vtt/index.m3u8")
        #expect(listed.text.contains("\n0.vtt\n"), "\(listed.status) \(listed.text)")
        #expect(listed.text.contains("#EXT-X-TARGETDURATION:2\n"), "subtitles only: the nominal segment duration")
        let served = try stack.get("/live/subs/lo-vtt/0.vtt")
        #expect(served.status == 200)
        #expect(served.header("Content-Type") == "text/vtt; charset=utf-8")
        #expect(served.body == Array(cue.utf8))
    }
}
