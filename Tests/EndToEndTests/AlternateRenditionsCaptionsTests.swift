import Foundation
import Glibc
import HLSPlaylist
import TestSupport
import Testing

extension EndToEndInBrowser {
    /// CEA-608 captions in the H.264 SEI of the built-in test source's `captions` profile: the probe finds CC1, the
    /// multivariant playlist offers it, ffprobe and hls.js in chromium see it.
    @Suite("End to end: closed captions", .tags(.endToEnd))
    struct AlternateRenditionsCaptionsTests {
        static let channel = "cc"
        static let configuration = """
            logLevel: info
            ingest:
              autoCreate: false
            channels:
              - name: \(channel)
                source: test-source
                segmentDuration: 2
                window: { segments: 6 }
                renditions:
                  - name: main
                    profile: captions
            """

        @Test(
            "captions profile: CLOSED-CAPTIONS=\"cc\", INSTREAM-ID=\"CC1\", ffprobe Closed Captions, hls.js CC1 HELLO"
        )
        func captionsFromTheTestSource() async throws {
            try await OriginProcess.withRunning(configuration: Self.configuration, label: "captions") { origin in
                let client = HTTPClient(port: origin.port)
                typealias Multivariant = AlternateRenditionsTests.Multivariant
                var multivariant = Multivariant("")
                try await waitUntil("the multivariant playlist to offer closed captions", timeout: .seconds(20)) {
                    let response = try await client.get("/live/\(Self.channel)/index.m3u8")
                    multivariant = Multivariant(response.text)
                    return response.status == 200 && !multivariant.media(type: "CLOSED-CAPTIONS").isEmpty
                }
                print("closed captions: the multivariant playlist\n\(multivariant.text)")
                let validation = try MultivariantPlaylist.parse(multivariant.text).validate()
                #expect(validation.isEmpty, "validate(): \(validation)")
                let captions = multivariant.media(type: "CLOSED-CAPTIONS")
                #expect(captions.count == 1 && captions.first?["INSTREAM-ID"] == "CC1", "\(multivariant.text)")
                #expect(captions.first?["URI"] == nil, "a CLOSED-CAPTIONS rendition has no URI: \(multivariant.text)")
                let group = captions.first?["GROUP-ID"]
                #expect(group == "cc", "\(multivariant.text)")
                #expect(!multivariant.variants.isEmpty)
                for variant in multivariant.variants {
                    #expect(
                        variant.attributes["CLOSED-CAPTIONS"] == group && variant.quoted.contains("CLOSED-CAPTIONS"),
                        "\(variant.uri): CLOSED-CAPTIONS \(variant.attributes["CLOSED-CAPTIONS"] ?? "absent")")
                }

                // ffprobe on a served segment.
                let playlist = try await client.get("/live/\(Self.channel)/main/index.m3u8")
                let uri = try #require(playlist.text.split(separator: "\n").last { !$0.hasPrefix("#") })
                let segment = try await client.get("/live/\(Self.channel)/main/\(uri)")
                let file = origin.directory.appendingPathComponent("segment.ts")
                try Data(segment.body).write(to: file)
                // ffprobe 5.1 says it in the stream line of its banner ("Video: h264 ... Closed Captions"); its
                // `-show_entries stream=closed_captions` stays 0 for the same file.
                let probed = try await ChildProcess.run("ffprobe", ["-hide_banner", file.path], in: origin.directory)
                let videoLine = probed.standardError.split(separator: "\n").first { $0.contains("Video:") }
                #expect(videoLine?.contains("Closed Captions") == true, "ffprobe: \(probed.standardError)")
                print("closed captions: ffprobe \(videoLine?.trimmingCharacters(in: .whitespaces) ?? "shows no video")")

                // hls.js in chromium.
                let report = try await BrowserPlayer.play(
                    [
                        .init(
                            player: .hlsjs, url: "\(origin.baseURL)/live/\(Self.channel)/index.m3u8", seconds: 10,
                            subtitles: true)
                    ],
                    directory: origin.directory, label: "browser-captions")
                let played = try #require(report.runs?.first)
                print(
                    "closed captions: \(played.account); cues "
                        + "\((played.state?.cues ?? [:]).mapValues { $0.prefix(3).map(\.text) })"
                )
                #expect(played.error == nil && (played.summary?.all.played ?? 0) >= 3, "\(played.account)")
                let captionTracks = (played.tracks?.textTracks ?? []).filter { $0.kind == "captions" }
                #expect(captionTracks.count == 1, "hls.js text tracks: \(played.account)")
                // The test source's pop-on caption, decoded by hls.js from the SEI.
                let captionCues = (played.state?.cues ?? [:]).filter { $0.key.hasPrefix("captions/") }.values.joined()
                #expect(
                    captionCues.contains { $0.text == "HELLO" }, "hls.js caption cues: \(played.state?.cues ?? [:])")
            }
        }
    }
}
