import SRTInput

extension MetricsExposition {
    /// The SRT input's families: the listener's counters, and per connected caller (labels channel, rendition) SRT's
    /// own statistics (`srt_bstats`, read every second by the caller's thread).
    static func render(srt listener: SRTListener) -> String {
        var out = ""
        func family(_ name: String, _ type: String, _ help: String, _ samples: [(String, String)]) {
            Self.family(name, type, help, samples, to: &out)
        }
        let counters = listener.counters
        family(
            "hlsorigin_srt_callers_accepted_total", "counter", "SRT callers admitted and connected.",
            [("", "\(counters.accepted)")])
        family(
            "hlsorigin_srt_refusals_total", "counter",
            "SRT callers refused in the handshake, by reason (bad_request, bad_mode, forbidden_remote, wrong_token, "
                + "unauthorized, unknown_channel, unknown_rendition, conflict, overload, bad_passphrase, unsecure, "
                + "...).",
            counters.refusals.sorted { $0.key < $1.key }.map { ("{reason=\"\($0.key)\"}", "\($0.value)") })
        family(
            "hlsorigin_srt_feed_drops_total", "counter",
            "SRT callers whose feed ended: disconnected, or silent past ingest.srt.idleTimeoutMilliseconds.",
            ["disconnected", "silent"].map { ("{reason=\"\($0)\"}", "\(counters.drops[$0] ?? 0)") })
        return out + render(srtCallers: listener.callers)
    }

    /// The per-caller families (labels channel, rendition) and the count of connected callers.
    static func render(srtCallers callers: [SRTCallerStatus]) -> String {
        var out = ""
        func family(_ name: String, _ type: String, _ help: String, _ samples: [(String, String)]) {
            Self.family(name, type, help, samples, to: &out)
        }
        func perCaller(_ value: (SRTCallerStatus) -> String) -> [(String, String)] {
            callers.map { ("{channel=\"\($0.channel)\",rendition=\"\($0.rendition)\"}", value($0)) }
        }
        family(
            "hlsorigin_srt_callers", "gauge", "SRT callers connected (limit: ingest.srt.maxCallers).",
            [("", "\(callers.count)")])
        family(
            "hlsorigin_srt_rtt_seconds", "gauge", "Round-trip time to the SRT caller.",
            perCaller { "\($0.rttMilliseconds / 1000)" })
        family(
            "hlsorigin_srt_receive_rate_bytes_per_second", "gauge",
            "What the SRT caller sent over the last second, in bytes per second.", perCaller { "\($0.bitsPerSecond / 8)" })
        family(
            "hlsorigin_srt_received_bytes_total", "counter", "Bytes received from the SRT caller (this connection).",
            perCaller { "\($0.receivedBytes)" })
        family(
            "hlsorigin_srt_lost_packets_total", "counter",
            "Packets found missing from the SRT caller (most then retransmitted).", perCaller { "\($0.lostPackets)" })
        family(
            "hlsorigin_srt_retransmitted_packets_total", "counter", "Retransmitted packets received from the SRT caller.",
            perCaller { "\($0.retransmittedPackets)" })
        family(
            "hlsorigin_srt_dropped_packets_total", "counter",
            "Packets from the SRT caller that came too late to play, or never: lost for good.",
            perCaller { "\($0.droppedPackets)" })
        family(
            "hlsorigin_srt_receive_buffer_seconds", "gauge", "What the SRT receive buffer holds, as time.",
            perCaller { "\(Double($0.receiveBufferMilliseconds) / 1000)" })
        family(
            "hlsorigin_srt_receive_buffer_bytes", "gauge", "What the SRT receive buffer holds, in bytes.",
            perCaller { "\($0.receiveBufferBytes)" })
        return out
    }
}
