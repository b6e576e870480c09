import Foundation
import LiveTimeline
import OriginCore
import SRTInput
import TestSupport
import Testing

@testable import OriginServer

/// `/admin/...`, `/healthz` and `/metrics` over real HTTP.
@Suite("Admin API, health and metrics", .offThePool)
struct AdminAndMetricsTests {
    /// `ch` (push, 360p + 180p) and `demo` (built-in test source, 180p).
    static func stack(adminToken: String? = nil) throws -> OriginTestStack {
        try OriginTestStack {
            $0.adminToken = adminToken
            $0.origin.channels.append(
                ChannelConfiguration(
                    name: "demo", renditions: [RenditionConfiguration(name: "180p")], source: .testSource))
        }
    }

    @Test func loopbackMayUseTheAdminAPIWithoutAToken() throws {
        let stack = try Self.stack()
        try stack.slots(2)
        let response = try stack.get("/admin/channels")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/json")
        #expect(response.header("Cache-Control") == "no-store")
        #expect(response.header("Access-Control-Allow-Origin") == "*")
        let channels = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [[String: Any]])
        #expect(channels.map { $0["name"] as? String } == ["ch", "demo"])
        #expect(channels.map { $0["source"] as? String } == ["push", "test-source"])
        let renditions = try #require(channels[0]["renditions"] as? [[String: Any]])
        #expect(renditions.map { $0["name"] as? String } == ["360p", "180p"])
        #expect(renditions.map { $0["segmentsAccepted"] as? Int } == [2, 2])

        let one = try stack.get("/admin/channels/ch")
        #expect(one.status == 200)
        let channel = try #require(try JSONSerialization.jsonObject(with: Data(one.body)) as? [String: Any])
        #expect(channel["name"] as? String == "ch")

        let unknown = try stack.get("/admin/channels/nope")
        #expect(unknown.status == 404)
        #expect(unknown.text == "{\n  \"error\" : \"unknown channel 'nope'\"\n}\n")
    }

    @Test func outageNeedsATestSourceChannelAndValidJSON() throws {
        let stack = try Self.stack()
        let pushChannel = try stack.request("POST", "/admin/channels/ch/outage", body: Array("{\"seconds\": 10}".utf8))
        #expect(pushChannel.status == 409)
        #expect(pushChannel.header("Content-Type") == "application/json")
        #expect(pushChannel.text == "{\n  \"error\" : \"channel 'ch' is not fed by the built-in test source\"\n}\n")
        #expect(pushChannel.header("Access-Control-Allow-Origin") == "*")

        let invalid = try stack.request("POST", "/admin/channels/demo/outage", body: Array("{seconds: ".utf8))
        #expect(invalid.status == 400)
        #expect(invalid.text.contains("invalid JSON body"))
        let negative = try stack.request("POST", "/admin/channels/demo/outage", body: Array("{\"seconds\": -1}".utf8))
        #expect(negative.status == 400)
        #expect(negative.text.contains("seconds must be > 0"))
        let unknown = try stack.request("POST", "/admin/channels/nope/outage", body: Array("{\"seconds\": 1}".utf8))
        #expect(unknown.status == 404)

        let accepted = try stack.request(
            "POST", "/admin/channels/demo/outage", body: Array("{\"seconds\": 6, \"renditions\": [\"180p\"]}".utf8))
        #expect(accepted.status == 202)
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(accepted.body)) as? [String: Any])
        #expect(answer["channel"] as? String == "demo")
        #expect(answer["renditions"] as? [String] == ["180p"])
        #expect(answer["seconds"] as? Double == 6)
    }

    @Test func adminTokenIsRequiredWhenConfigured() throws {
        let stack = try Self.stack(adminToken: "adm1n")
        for headers in [[], [("Authorization", "Bearer nope")]] as [[(String, String)]] {
            let refused = try stack.request("GET", "/admin/channels", headers: headers)
            #expect(refused.status == 401)
            #expect(refused.text.contains("the admin API needs a bearer token that opens it"))
            #expect(refused.header("WWW-Authenticate") == "Bearer realm=\"hlsorigin\"")
            #expect(refused.header("Access-Control-Allow-Origin") == "*")
            let outage = try stack.request(
                "POST", "/admin/channels/demo/outage", headers: headers, body: Array("{\"seconds\": 6}".utf8))
            #expect(outage.status == 401)
        }
        let allowed = try stack.request("GET", "/admin/channels", headers: [("Authorization", "Bearer adm1n")])
        #expect(allowed.status == 200)
    }

    @Test func healthzAnswersOK() throws {
        let stack = try Self.stack()
        let response = try stack.get("/healthz")
        #expect(response.status == 200)
        #expect(response.text == "{\"status\":\"ok\"}\n")
        #expect(response.header("Content-Type") == "application/json")
        #expect(response.header("Cache-Control") == "no-store")
    }

    @Test func metricsCountAcceptedAndRejectedSegmentsPerRendition() throws {
        let stack = try Self.stack()
        try stack.slots(4)
        // One refusal on 180p.
        #expect(try stack.push("180p", Array(stack.nextSegment("180p").prefix(1000))).status == 422)
        let response = try stack.get("/metrics")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8")
        #expect(response.header("Cache-Control") == "no-store")
        let lines = Set(response.text.split(separator: "\n").map(String.init))
        #expect(lines.contains("# TYPE hlsorigin_segments_accepted_total counter"))
        #expect(lines.contains("hlsorigin_segments_accepted_total{channel=\"ch\",rendition=\"360p\"} 4"))
        #expect(lines.contains("hlsorigin_segments_accepted_total{channel=\"ch\",rendition=\"180p\"} 4"))
        #expect(lines.contains("hlsorigin_segments_rejected_total{channel=\"ch\",rendition=\"360p\"} 0"))
        #expect(lines.contains("hlsorigin_segments_rejected_total{channel=\"ch\",rendition=\"180p\"} 1"))
        #expect(lines.contains("hlsorigin_live_edge_msn{channel=\"ch\",rendition=\"360p\"} 3"))
        #expect(lines.contains("hlsorigin_gaps_written_total{channel=\"ch\",rendition=\"360p\"} 0"))
        #expect(lines.contains("hlsorigin_window_segments{channel=\"ch\",rendition=\"360p\"} 4"))
        // Every sample line is `name{labels} value` or `name value` (Prometheus text format).
        for line in lines where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            #expect(parts.count == 2, "\(line)")
            #expect(Double(parts.last ?? "") != nil || parts.last == "NaN", "\(line)")
        }
    }

    /// The families renamed to base units: the status answers in milliseconds and bits per second, the metrics in
    /// seconds and bytes per second (a family that forgot its conversion would be off by 1000 or 8).
    @Test func renamedFamiliesAreTheStatusFiguresConvertedToSecondsAndBytes() throws {
        let stack = try Self.stack()
        try stack.slots(4)
        stack.clock.advance(seconds: 1.5)
        let status = try #require(
            try JSONSerialization.jsonObject(with: Data(stack.get("/admin/channels/ch").body)) as? [String: Any])
        let renditions = try #require(status["renditions"] as? [[String: Any]])
        #expect(renditions.count == 2)
        let lines = try stack.get("/metrics").text.split(separator: "\n")
        func sample(_ family: String, _ rendition: String) -> Double? {
            let prefix = "\(family){channel=\"ch\",rendition=\"\(rendition)\"} "
            return lines.first { $0.hasPrefix(prefix) }.flatMap { Double($0.dropFirst(prefix.count)) }
        }
        for rendition in renditions {
            let name = try #require(rendition["name"] as? String)
            let lag = try #require(rendition["liveEdgeLagMilliseconds"] as? Double)
            let drift = try #require(rendition["driftMilliseconds"] as? Double)
            let peak = try #require(rendition["peakBitrate"] as? Double)
            #expect(lag > 0 && peak > 0, "\(name): figures the conversion would not change")
            #expect(sample("hlsorigin_live_edge_lag_seconds", name) == lag / 1000, "\(name)")
            #expect(sample("hlsorigin_drift_seconds", name) == drift / 1000, "\(name)")
            #expect(sample("hlsorigin_peak_rate_bytes_per_second", name) == peak / 8, "\(name)")
        }
    }

    /// `srt_bstats` gives the rate in bits per second; the family is in bytes per second, the RTT in seconds.
    @Test func srtCallerRateIsInBytesAndItsRoundTripInSeconds() throws {
        let json = """
            {"channel": "live", "rendition": "video", "peer": "192.0.2.1:9000", "credential": "loopback",
             "connectedAtMilliseconds": 0, "rttMilliseconds": 25, "bitsPerSecond": 4000000, "receivedBytes": 1,
             "receivedPackets": 1, "lostPackets": 0, "retransmittedPackets": 0, "droppedPackets": 0,
             "undecryptedPackets": 0, "receiveBufferMilliseconds": 120, "receiveBufferBytes": 0,
             "latencyMilliseconds": 120, "silentMilliseconds": 0}
            """
        let caller = try JSONDecoder().decode(SRTCallerStatus.self, from: Data(json.utf8))
        let lines = Set(MetricsExposition.render(srtCallers: [caller]).split(separator: "\n").map(String.init))
        let labels = "{channel=\"live\",rendition=\"video\"}"
        #expect(lines.contains("hlsorigin_srt_receive_rate_bytes_per_second\(labels) 500000.0"))
        #expect(lines.contains("hlsorigin_srt_rtt_seconds\(labels) 0.025"))
        #expect(lines.contains("hlsorigin_srt_receive_buffer_seconds\(labels) 0.12"))
    }
}
