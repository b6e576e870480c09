import Foundation
import TestSupport
import Testing

extension EndToEnd {
    /// HDR signalling from a real push (docs/hls-playlist.md, "Video attributes"): one real-time ffmpeg encodes 6 s of
    /// a test pattern four ways and pushes each with the HLS muxer over PUT: H.264 with no colour metadata (SDR),
    /// libx265 Main 10 with HDR10 colour metadata (`-color_primaries bt2020 -color_trc smpte2084 -colorspace
    /// bt2020nc`) as MPEG-TS and as fMP4 (SPS VUI, then the colr box and hvcC), and libx265 with HLG (arib-std-b67).
    /// The channel's multivariant playlist lists each variant with the VIDEO-RANGE its stream states, FRAME-RATE 25,
    /// and the HDCP-LEVEL and ALLOWED-CPC the channel configures.
    @Suite("End to end: VIDEO-RANGE of pushed SDR, HDR10 and HLG streams", .tags(.endToEnd))
    struct VideoRangeTests {
        static let channel = "hdr"
        static let configuration = """
            logLevel: info
            ingest:
              autoCreate: true
              defaults:
                segmentDuration: 2
            channels:
              - name: \(channel)
                segmentDuration: 2
                hdcpLevel: TYPE-0
                allowedCPC: "com.apple.streamingkeydelivery:AppleMain/Main"
            """

        /// Encoder arguments per rendition.
        static let renditions: [(name: String, encoding: [String], segmentType: String)] = [
            ("sdr", ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p"], "mpegts"),
            (
                "pq", hevc + ["-color_primaries", "bt2020", "-color_trc", "smpte2084", "-colorspace", "bt2020nc"],
                "mpegts"
            ),
            (
                "pq-fmp4",
                hevc + [
                    "-tag:v", "hvc1", "-color_primaries", "bt2020", "-color_trc", "smpte2084",
                    "-colorspace", "bt2020nc",
                ], "fmp4"
            ),
            (
                "hlg", hevc + ["-color_primaries", "bt2020", "-color_trc", "arib-std-b67", "-colorspace", "bt2020nc"],
                "mpegts"
            ),
        ]
        static let hevc = [
            "-c:v", "libx265", "-preset", "ultrafast", "-pix_fmt", "yuv420p10le",
            "-x265-params", "pools=1:frame-threads=1:log-level=error",
        ]

        @Test("SDR, PQ (TS and fMP4) and HLG pushes are listed with their VIDEO-RANGE")
        func pushedRangesAreListed() async throws {
            let origin = try await OriginProcess(configuration: Self.configuration, label: "video-range")
            defer { origin.kill() }
            var arguments = [
                // -t before -i: an input option ends every output (after -i it would end the first only).
                "-nostdin", "-v", "error", "-re", "-t", "6", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25",
            ]
            for rendition in Self.renditions {
                arguments +=
                    ["-map", "0:v"] + rendition.encoding + [
                        "-g", "50", "-keyint_min", "50", "-sc_threshold", "0", "-b:v", "300k",
                        "-f", "hls", "-hls_time", "2", "-hls_list_size", "6", "-hls_segment_type",
                        rendition.segmentType,
                        "-method", "PUT",
                        "http://127.0.0.1:\(origin.port)/ingest/\(Self.channel)/\(rendition.name)/index.m3u8",
                    ]
            }
            let started = Date()
            let push = try await ChildProcess.run("ffmpeg", arguments, in: origin.directory, timeout: .seconds(40))
            #expect(push.status == 0, "ffmpeg: \(push.standardError)")

            let client = HTTPClient(port: origin.port)
            var variants: [String: String] = [:]
            try await waitUntil("every rendition in the multivariant playlist", timeout: .seconds(10)) {
                let response = try await client.get("/live/\(Self.channel)/index.m3u8")
                guard response.status == 200 else { return false }
                let lines = response.text.split(separator: "\n").map(String.init)
                variants = [:]
                for (index, line) in lines.enumerated() where line.hasPrefix("#EXT-X-STREAM-INF:") {
                    if index + 1 < lines.count { variants[lines[index + 1]] = line }
                }
                return variants.count == Self.renditions.count
            }
            let expected = ["sdr": "SDR", "pq": "PQ", "pq-fmp4": "PQ", "hlg": "HLG"]
            for (name, range) in expected {
                let line = try #require(variants["\(name)/index.m3u8"], "\(variants)")
                print("video range e2e: \(line)")
                #expect(line.contains(",VIDEO-RANGE=\(range),"), "\(name): \(line)")
                #expect(line.contains(",FRAME-RATE=25.000"), "\(name): \(line)")
                #expect(line.contains(",HDCP-LEVEL=TYPE-0,"), "\(name): \(line)")
                #expect(line.contains(",ALLOWED-CPC=\"com.apple.streamingkeydelivery:AppleMain/Main\""), "\(line)")
            }
            #expect(variants["pq/index.m3u8"]?.contains("CODECS=\"hvc1.2.4.") == true, "Main 10")
            print("video range e2e: \(String(format: "%.1f", Date().timeIntervalSince(started))) s from push start")
        }
    }
}
