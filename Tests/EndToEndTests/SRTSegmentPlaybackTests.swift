import Foundation
import HLSPlaylist
import TestSupport
import Testing

/// The segments the origin cuts from an SRT caller's continuous MPEG-TS (issue 31, part 2), played: ffmpeg pushes
/// H.264 with a 1 s GOP and AAC over SRT; every segment the origin lists is about the slot length, starts with a
/// keyframe and decodes alone with ffprobe, video and audio, served over HTTP.
@Suite(.tags(.endToEnd), .serialized)
struct SRTSegmentPlaybackTests {
    @Test func theSegmentsCutFromAnSRTCallerDecodeWithFFprobe() async throws {
        try await OriginProcess.withRunning(
            configuration: SRTContributionTests.configuration(srtPort: 0), label: "srt-segments"
        ) { origin in
            let srtPort = try await SRTProbe.port(of: origin)
            let http = HTTPClient(port: origin.port)
            let push = try ChildProcess(
                executable: try #require(ChildProcess.locate("ffmpeg")),
                arguments: [
                    "-hide_banner", "-loglevel", "warning", "-re", "-f", "lavfi", "-i",
                    "testsrc=size=320x180:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                    "-t", "11", "-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-keyint_min", "25",
                    "-sc_threshold", "0", "-c:a", "aac", "-b:a", "96k",
                    "-f", "mpegts", "srt://127.0.0.1:\(srtPort)?streamid=live/main",
                ], directory: origin.directory, label: "ffmpeg-srt-segments")
            let status = await push.wait(timeout: .seconds(30))
            #expect(status == 0, "ffmpeg: \(push.standardError)")
            try await Self.expectWholeDecodableSegments(
                http: http, origin: origin, path: "/live/live/main/", frameRate: 25, audioFramesPerSecond: 46.875)
        }
    }

    /// GStreamer's `srtsink` as the caller (gst-launch-1.0, Debian's gstreamer1.0-plugins-bad; x264enc from -ugly,
    /// avenc_aac from -libav): a live test pattern, H.264 with a keyframe every 25 frames (1 s) and AAC muxed by
    /// mpegtsmux with `alignment=7` (seven TS packets per buffer, one SRT message each: with mpegtsmux's default
    /// alignment no IDR frame reached the listener, origin or srt-live-transmit alike), 11 s. Every segment the
    /// origin cuts decodes alone.
    @Test func theSegmentsCutFromAGStreamerSrtsinkCallerDecodeWithFFprobe() async throws {
        let gstLaunch = try #require(
            ChildProcess.locate("gst-launch-1.0"), "gst-launch-1.0 missing: apt-get install gstreamer1.0-tools")
        try await OriginProcess.withRunning(
            configuration: SRTContributionTests.configuration(srtPort: 0), label: "srt-gstreamer"
        ) { origin in
            let srtPort = try await SRTProbe.port(of: origin)
            let http = HTTPClient(port: origin.port)
            let push = try ChildProcess(
                executable: gstLaunch,
                arguments: Self.gstreamerCaller(srtPort: srtPort, streamID: "#!::r=gst/main,m=publish", seconds: 11),
                directory: origin.directory, label: "gst-srtsink")
            let status = await push.wait(timeout: .seconds(30))
            #expect(status == 0, "gst-launch-1.0: \(push.standardOutput) \(push.standardError)")
            try await Self.expectWholeDecodableSegments(
                http: http, origin: origin, path: "/live/gst/main/", frameRate: 25, audioFramesPerSecond: 46.875)
            #expect(origin.logTail(300).contains("SRT caller connected"))
        }
    }

    /// gst-launch-1.0's arguments for a live 320x180 test pattern at 25 fps (x264, keyframe every second) and a
    /// 48 kHz tone (AAC) for `seconds`, pushed by srtsink as a caller to 127.0.0.1:`srtPort`; ends by itself.
    static func gstreamerCaller(srtPort: Int, streamID: String, seconds: Int) -> [String] {
        let pipeline =
            "videotestsrc is-live=true num-buffers=\(seconds * 25) ! video/x-raw,width=320,height=180,framerate=25/1 "
            + "! x264enc key-int-max=25 tune=zerolatency speed-preset=veryfast bitrate=600 ! h264parse ! queue "
            + "! mpegtsmux name=mux alignment=7 "
            + "! srtsink uri=srt://127.0.0.1:\(srtPort) latency=120 "
            + "audiotestsrc is-live=true num-buffers=\(seconds * 48_000 / 1024) samplesperbuffer=1024 "
            + "! audio/x-raw,rate=48000,channels=2 ! audioconvert ! avenc_aac bitrate=96000 ! aacparse ! queue ! mux."
        var arguments = ["-q", "-e"]
        for element in pipeline.split(separator: " ") { arguments.append(String(element)) }
        // The stream id holds '#!::' and commas: one argument of its own, not split at spaces.
        let sink = arguments.firstIndex { $0.hasPrefix("uri=srt://") }!
        arguments.insert("streamid=\(streamID)", at: sink + 1)
        return arguments
    }

    /// Waits for three segments in `path`index.m3u8, then fetches every listed one and decodes it alone with
    /// ffprobe: video and audio in each, whole 2 s slots with `frameRate` x duration frames (the last one, cut
    /// where the caller stopped, may end early), and the AAC frames of the whole slots about their duration x
    /// `audioFramesPerSecond`.
    static func expectWholeDecodableSegments(
        http: HTTPClient, origin: OriginProcess, path: String, frameRate: Double, audioFramesPerSecond: Double
    ) async throws {
        var media: MediaPlaylist?
        try await waitUntil("the playlist lists the cut segments", timeout: .seconds(8)) {
            let playlist = try await http.get("\(path)index.m3u8")
            guard playlist.status == 200 else { return false }
            let parsed = try MediaPlaylist.parse(String(decoding: playlist.body, as: UTF8.self))
            media = parsed
            return parsed.segments.filter { !$0.gap }.count >= 3
        }
        let segments = try #require(media).segments.filter { !$0.gap }
        var wholeSeconds = 0.0
        var audioFrames = 0
        for segment in segments {
            // Whole slots of 2 s; the last one may end early where the caller stopped.
            #expect(segment.duration <= 2.05, "\(segment.uri) lasts \(segment.duration) s")
            let lines = try await Self.decodeAlone(
                http: http, origin: origin, path: "\(path)\(segment.uri)", uri: segment.uri, prefix: "cut")
            let video = Self.frames("h264", in: lines) ?? 0
            let audio = Self.frames("aac", in: lines) ?? 0
            #expect(video > 0 && audio > 0, "\(segment.uri): \(lines)")
            // A whole slot: 2 s of frames (the last segment, cut where the caller stopped, is left out: its
            // EXTINF comes from the frames' PTS and x264's B-frames end it out of order).
            if segment.uri != segments.last?.uri {
                #expect(abs(Double(video) - segment.duration * frameRate) <= 1, "\(segment.uri): \(lines)")
                wholeSeconds += segment.duration
                audioFrames += audio
            }
        }
        // Audio is cut with the video (at the keyframe's packet): ffmpeg interleaves AAC PES up to a few hundred
        // ms apart from the video, so a segment holds a few frames more or less, never lost: 46.875 a second.
        #expect(abs(Double(audioFrames) - wholeSeconds * audioFramesPerSecond) <= 12, "\(audioFrames) AAC frames")
    }

    /// Fetches the segment at `path` (listed as `uri`), writes it to `prefix`-<its file name> in the origin's
    /// directory and decodes it alone with ffprobe, every frame counted: expects a 200 and a clean decode (status 0,
    /// nothing on stderr at `-v error`), and returns ffprobe's `codec_name,nb_read_frames` lines, one per stream.
    ///
    /// The segment the caller's end closed too: libsrt drops what its receive buffer still holds (up to the 120 ms
    /// latency) when the caller closes, cutting the last PES of each PID short (seen in a CI run: GStreamer's last
    /// AAC frame, "Input buffer exhausted before END element found"), and the segmenter leaves those out.
    static func decodeAlone(
        http: HTTPClient, origin: OriginProcess, path: String, uri: String, prefix: String
    ) async throws -> Set<Substring> {
        let answer = try await http.get(path)
        #expect(answer.status == 200)
        let file = origin.directory.appendingPathComponent("\(prefix)-\(uri.split(separator: "/").last!)")
        try Data(answer.body).write(to: file)
        let probe = try await ChildProcess.run(
            "ffprobe",
            [
                "-v", "error", "-count_frames", "-show_entries", "stream=codec_name,nb_read_frames",
                "-of", "csv=p=0", file.lastPathComponent,
            ], in: origin.directory, timeout: .seconds(30))
        let complaints = probe.standardError.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        #expect(probe.status == 0 && complaints.isEmpty, "\(uri): \(probe.standardError)")
        return Set(probe.standardOutput.split(separator: "\n").filter { !$0.isEmpty })
    }

    /// The frames `decodeAlone` counted in the stream of `codec` (`h264`, `aac`); nil when it has none.
    static func frames(_ codec: String, in lines: Set<Substring>) -> Int? {
        lines.first { $0.hasPrefix("\(codec),") }.flatMap { Int($0.dropFirst(codec.count + 1)) }
    }
}
