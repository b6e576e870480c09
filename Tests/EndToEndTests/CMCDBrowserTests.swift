import Foundation
import TestSupport
import Testing

extension EndToEndInBrowser {
    /// hls.js 1.6 with CMCD on (CTA-5004, `cmcd: {}`) in headless chromium against the built-in test source: the
    /// origin counts it as a session of the channel with its buffer lengths and throughputs in `/metrics`, and its
    /// answers carry CMSD (docs/cmsd-cmcd.md).
    @Suite("End to end: hls.js with CMCD shows up in the metrics", .tags(.endToEnd))
    struct CMCDBrowserTests {
        static let configuration = """
            logLevel: info
            delivery:
              originId: e2e-origin
            channels:
              - name: tv
                source: test-source
                segmentDuration: 2
                window: { segments: 6 }
                renditions:
                  - name: 360p
                    profile: 360p
            """

        @Test("hls.js with cmcd (query, then headers) is one session each, with buffer and throughput figures")
        func hlsjsIsCountedAsASession() async throws {
            try await OriginProcess.withRunning(configuration: Self.configuration, label: "cmcd-browser") { origin in
                let client = HTTPClient(port: origin.port)
                try await waitUntil("the channel lists 3 segments", timeout: .seconds(20)) {
                    let text = (try? await client.get("/live/tv/360p/index.m3u8"))?.text ?? ""
                    return text.components(separatedBy: "#EXTINF").count > 3
                }
                let url = "\(origin.baseURL)/live/tv/index.m3u8"
                let started = Date()
                let report = try await BrowserPlayer.play(
                    [
                        BrowserPlayer.Run(player: .hlsjs, url: url, seconds: 10, cmcd: "query"),
                        BrowserPlayer.Run(player: .hlsjs, url: url, seconds: 10, cmcd: "headers"),
                    ], directory: origin.directory, label: "cmcd-browser")
                for run in report.runs ?? [] {
                    let played = run.summary?.all.played ?? 0
                    #expect(run.error == nil && (run.state?.errors ?? []).isEmpty, "\(run.account)")
                    #expect(played >= 5, "hls.js played \(played) s: \(run.account)")
                    let refused = (run.network?.failed ?? []).filter { $0.status == 0 || $0.status >= 400 }
                    #expect(refused.isEmpty, "\(refused.map { "\($0.status) \($0.url)" })")
                }
                let metrics = try await client.get("/metrics").text
                func value(_ series: String) -> Double? {
                    metrics.split(separator: "\n").first { $0.hasPrefix(series + " ") }
                        .flatMap { Double($0.split(separator: " ").last ?? "") }
                }
                let sessions = value("hlsorigin_cmcd_sessions{channel=\"tv\"}")
                let requests = value("hlsorigin_cmcd_requests_total{channel=\"tv\"}") ?? 0
                let buffers = value("hlsorigin_cmcd_buffer_length_seconds_count{channel=\"tv\"}") ?? 0
                let bufferSum = value("hlsorigin_cmcd_buffer_length_seconds_sum{channel=\"tv\"}") ?? 0
                let throughputs = value("hlsorigin_cmcd_measured_throughput_bytes_per_second_count{channel=\"tv\"}") ?? 0
                #expect(sessions == 2, "one session per player: \(metrics)")
                #expect(requests >= 10 && buffers >= 4 && bufferSum > 0 && throughputs >= 2, "\(metrics)")
                let answer = try await client.get("/live/tv/360p/index.m3u8")
                #expect(answer.header("CMSD-Static") == #"n="e2e-origin",ot=m,sf=h,st=l"#)
                print(
                    "cmcd browser (\(report.browser ?? "?")): \(Int(requests)) CMCD requests, \(Int(sessions ?? 0)) "
                        + "sessions, \(Int(buffers)) buffer lengths (mean "
                        + String(format: "%.2f", buffers > 0 ? bufferSum / buffers : 0) + " s), \(Int(throughputs)) "
                        + "throughputs, in \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
            }
        }
    }
}
