import LiveTimeline
import OriginCore
import TestSupport
import Testing

@testable import OriginServer

/// Low-Latency serving over real HTTP: part URLs, delivery directives on regular and Low-Latency renditions.
@Suite("Low-Latency serving: part names, directives, Cache-Control", .offThePool)
struct LowLatencyServingTests {
    @Test func partNamesAreReadOnlyInTheirCanonicalForm() throws {
        let part = try #require(OriginHTTPHandler.partName("1008.2.ts"))
        #expect(part.position == PartPosition(msn: 1008, part: 2))
        #expect(part.fileExtension == "ts")
        #expect(OriginHTTPHandler.partName("0.0.m4s")?.position == PartPosition(msn: 0, part: 0))
        for alias in ["01008.2.ts", "1008.02.ts", "1008.ts", "a.1.ts", "1.2.3.ts", "1..ts", ".1.ts", "1.2.", "-1.2.ts"]
        {
            #expect(OriginHTTPHandler.partName(alias) == nil, "\(alias)")
        }
    }

    @Test func aRegularRenditionIgnoresDirectivesAndHasNoParts() throws {
        let stack = try OriginTestStack()
        try stack.slots(3)
        let plain = try stack.get("/live/ch/360p/index.m3u8")
        for query in ["_HLS_msn=99&_HLS_part=0", "_HLS_part=1", "_HLS_msn=x", "_HLS_skip=YES"] {
            let answer = try stack.get("/live/ch/360p/index.m3u8?\(query)")
            #expect(answer.status == 200, "\(query)")
            #expect(answer.header("Cache-Control") == "public, max-age=1", "\(query)")
            #expect(answer.body == plain.body, "\(query)")
        }
        let part = try stack.get("/live/ch/360p/2.0.ts")
        #expect(part.status == 404)
        #expect(part.header("Cache-Control") == "no-cache")
        #expect(part.header("Access-Control-Allow-Origin") == "*")
        let metrics = try stack.get("/metrics")
        #expect(!metrics.text.contains("hlsorigin_ll_"))
    }

    @Test func aLowLatencyChannelExposesItsPartAndWaiterMetrics() throws {
        let stack = try OriginTestStack(renditions: ["360p"]) { configuration in
            configuration.origin.channels[0].lowLatency = LowLatencyConfiguration(partTarget: 0.4)
            configuration.origin.channels[0].targetDuration = 2
        }
        let text = try stack.get("/metrics").text
        for line in [
            "# TYPE hlsorigin_ll_parts_total counter", "hlsorigin_ll_parts_total{channel=\"ch\"} 0",
            "hlsorigin_ll_blocking_waiting{channel=\"ch\",kind=\"playlist\"} 0",
            "hlsorigin_ll_blocking_waiting{channel=\"ch\",kind=\"part\"} 0",
            "hlsorigin_ll_blocking_timeouts_total{channel=\"ch\"} 0",
            "# TYPE hlsorigin_ll_blocking_release_seconds histogram",
            "hlsorigin_ll_blocking_release_seconds_bucket{channel=\"ch\",le=\"+Inf\"} 0",
            "hlsorigin_ll_blocking_release_seconds_count{channel=\"ch\"} 0",
        ] {
            #expect(text.contains(line + "\n"), "\(line)")
        }
    }
}
