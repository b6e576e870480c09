import Foundation
import HLSPlaylist
import TestSupport
import Testing

/// One SRT caller whose stream carries several renditions (issue 31, part 4): ffmpeg pushes H.264 and two AAC tracks
/// tagged `eng` and `fra`; the channel's configuration cuts the video to `main` and each language to an alternate
/// audio rendition, all on the same slots.
@Suite(.tags(.endToEnd), .serialized)
struct SRTMultiRenditionTests {
    static let configuration = """
        ingest:
          autoCreate: false
          srt:
            port: 0
            latencyMilliseconds: 120
            idleTimeoutMilliseconds: 2000
        channels:
          - name: multi
            renditions:
              - { name: main, srt: { from: main, type: video } }
              - name: en
                audio: { group: aud, language: en, name: English, default: true }
                srt: { from: main, language: eng }
              - { name: fr, audio: { group: aud, language: fr, name: French }, srt: { from: main, language: fra } }
        """

    @Test func aStreamWithTwoAudioLanguagesFeedsAVideoAndTwoAudioRenditionsOnTheSameSlots() async throws {
        try await OriginProcess.withRunning(configuration: Self.configuration, label: "srt-multi") { origin in
            let srtPort = try await SRTProbe.port(of: origin)
            let http = HTTPClient(port: origin.port)
            let push = try ChildProcess(
                executable: try #require(ChildProcess.locate("ffmpeg")),
                arguments: [
                    "-hide_banner", "-loglevel", "warning", "-re",
                    "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25",
                    "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                    "-f", "lavfi", "-i", "sine=frequency=880:sample_rate=48000",
                    "-map", "0:v", "-map", "1:a", "-map", "2:a",
                    "-metadata:s:a:0", "language=eng", "-metadata:s:a:1", "language=fra",
                    "-t", "11", "-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-keyint_min", "25",
                    "-sc_threshold", "0", "-c:a", "aac", "-b:a", "96k",
                    "-f", "mpegts", "srt://127.0.0.1:\(srtPort)?streamid=multi/main",
                ], directory: origin.directory, label: "ffmpeg-srt-multi")
            let status = await push.wait(timeout: .seconds(30))
            #expect(status == 0, "ffmpeg: \(push.standardError)")

            // Every rendition lists the same slots (segment names are their media sequence numbers).
            var listed: [String: [String]] = [:]
            try await waitUntil("three renditions list their segments", timeout: .seconds(8)) {
                for rendition in ["main", "en", "fr"] {
                    let answer = try await http.get("/live/multi/\(rendition)/index.m3u8")
                    guard answer.status == 200 else { return false }
                    let playlist = try MediaPlaylist.parse(String(decoding: answer.body, as: UTF8.self))
                    listed[rendition] = playlist.segments.filter { !$0.gap }.map(\.uri)
                }
                return listed.values.allSatisfy { $0.count >= 3 }
            }
            let common = Set(listed["main"]!).intersection(listed["en"]!).intersection(listed["fr"]!)
            #expect(common.count >= 3, "\(listed)")

            // Each decodes alone: the video without audio, each audio rendition one AAC track.
            for (rendition, codec) in [("main", "h264"), ("en", "aac"), ("fr", "aac")] {
                for uri in listed[rendition]!.prefix(3) {
                    let lines = try await SRTSegmentPlaybackTests.decodeAlone(
                        http: http, origin: origin, path: "/live/multi/\(rendition)/\(uri)", uri: uri,
                        prefix: rendition)
                    #expect(lines.count == 1, "\(rendition)/\(uri): \(lines)")
                    let frames = SRTSegmentPlaybackTests.frames(codec, in: lines)
                    #expect((frames ?? 0) > 0, "\(rendition)/\(uri): \(lines)")
                }
            }

            // The multivariant playlist offers the two languages as the video's alternate audio.
            let multivariant = String(decoding: try await http.get("/live/multi/index.m3u8").body, as: UTF8.self)
            for (language, uri) in [("en", "en/index.m3u8"), ("fr", "fr/index.m3u8")] {
                #expect(
                    multivariant.split(separator: "\n").contains {
                        $0.hasPrefix("#EXT-X-MEDIA:TYPE=AUDIO") && $0.contains("GROUP-ID=\"aud\"")
                            && $0.contains("LANGUAGE=\"\(language)\"") && $0.contains(uri)
                    }, "\(multivariant)")
            }
            #expect(multivariant.contains("AUDIO=\"aud\""), "\(multivariant)")
        }
    }
}
