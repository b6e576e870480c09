import HLSPackaging
import LiveTimeline
import Markers
import OriginCore
import PeerRepair

/// `/metrics` in the Prometheus text format (version 0.0.4).
enum MetricsExposition {
    /// One metric family: its HELP and TYPE lines, then a sample per (labels, value).
    static func family(
        _ name: String, _ type: String, _ help: String, _ samples: [(String, String)], to out: inout String
    ) {
        out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        for (labels, value) in samples { out += "\(name)\(labels) \(value)\n" }
    }

    static func render(
        origin: Origin, requests: RequestMetrics, playbackRefusals: PlaybackRefusals = PlaybackRefusals(),
        refusals: RefusalCounts = RefusalCounts(), peerRepairer: PeerRepairer? = nil
    ) -> String {
        var out = ""
        func family(_ name: String, _ type: String, _ help: String, _ samples: [(String, String)]) {
            Self.family(name, type, help, samples, to: &out)
        }
        let statuses = origin.allChannels.map { $0.status() }
        /// Milliseconds as Prometheus' base unit, seconds (NaN when unknown).
        func seconds(_ milliseconds: Int64?) -> String {
            milliseconds.map { "\(Double($0) / 1000)" } ?? "NaN"
        }
        func perRendition(_ value: (RenditionStatus) -> String) -> [(String, String)] {
            statuses.flatMap { channel in
                channel.renditions.map { ("{channel=\"\(channel.name)\",rendition=\"\($0.name)\"}", value($0)) }
            }
        }
        family(
            "hlsorigin_http_responses_total", "counter", "HTTP responses by status class.",
            requests.snapshot.map { ("{code=\"\($0.0)\"}", "\($0.1)") })
        family(
            "hlsorigin_refusals_total", "counter",
            "Pushes and admin requests refused for their credential (unauthorized, forbidden_remote, wrong_token) or "
                + "a limit (channel_limit, rendition_limit, memory_limit, disk_limit, creation_rate).",
            refusals.all.map { ("{route=\"\($0.route)\",reason=\"\($0.reason.rawValue)\"}", "\($0.count)") })
        let limits = origin.configuration.limits
        family(
            "hlsorigin_channels", "gauge", "Channels, configured and created by pushes (limit: limits.channels).",
            [("", "\(origin.allChannels.count)")])
        family(
            "hlsorigin_channel_memory_bytes", "gauge",
            "Bytes a channel holds in memory: listed, retained and held segments, init sections "
                + "(limit: limits.channelMemoryBytes = \(limits.channelMemoryBytes)).",
            origin.allChannels.map { ("{channel=\"\($0.name)\"}", "\($0.memoryBytes)") })
        if let shared = origin.sharedMarkers {
            family(
                "hlsorigin_database_up", "gauge",
                "1 if the last call to the group's database (PostgreSQL: markers, recordings) succeeded, else 0.",
                [("", shared.reachability.reachable ? "1" : "0")])
        }
        if let peerRepairer {
            let peers = peerRepairer.statistics
            func perPeer(_ value: (PeerRepairer.PeerStatistics) -> Int) -> [(String, String)] {
                peers.map { ("{peer=\"\($0.peer)\"}", "\(value($0))") }
            }
            family(
                "hlsorigin_peer_repaired_segments_total", "counter",
                "Segments of slots this origin missed, fetched from the peer and accepted.", perPeer(\.repairedSegments)
            )
            family(
                "hlsorigin_peer_fetch_failures_total", "counter",
                "Requests to the peer that failed (connection, timeout, status).", perPeer(\.failedFetches))
            family(
                "hlsorigin_peer_timeline_mismatches_total", "counter",
                "Slots the peer listed with another PDT than this origin (timelines disagree).",
                perPeer(\.timelineMismatches))
            let agreements = origin.allChannels.flatMap { channel in
                peerRepairer.agreements(channel: channel.configuration.name).map { (channel.configuration.name, $0) }
            }
            func perChannelAndPeer(_ value: (PeerAgreement) -> String) -> [(String, String)] {
                agreements.map { ("{channel=\"\($0.0)\",peer=\"\($0.1.peer)\"}", value($0.1)) }
            }
            family(
                "hlsorigin_peer_agreement", "gauge",
                "1 if every MSN this origin and the peer both listed was identical at the last check, else 0.",
                perChannelAndPeer { $0.agrees ? "1" : "0" })
            family(
                "hlsorigin_peer_live_edge_msn", "gauge", "The peer's newest MSN as last read.",
                perChannelAndPeer { $0.peerNewestMSN.map { "\($0)" } ?? "NaN" })
        }
        family(
            "hlsorigin_segments_accepted_total", "counter", "Segments accepted into the live window.",
            perRendition { "\($0.segmentsAccepted)" })
        family(
            "hlsorigin_segments_rejected_total", "counter", "Pushes refused.",
            perRendition { "\($0.segmentsRejected)" })
        family(
            "hlsorigin_gaps_written_total", "counter", "EXT-X-GAP entries written.",
            perRendition { "\($0.gapsWritten)" })
        family(
            "hlsorigin_discontinuities_total", "counter", "EXT-X-DISCONTINUITY tags written.",
            perRendition { "\($0.discontinuities)" })
        family(
            "hlsorigin_live_edge_msn", "gauge", "Media sequence number of the newest entry.",
            perRendition { "\($0.liveEdgeMSN.map { "\($0)" } ?? "NaN")" })
        family(
            "hlsorigin_live_edge_lag_seconds", "gauge", "Shared clock minus the end of the newest entry.",
            perRendition { seconds($0.liveEdgeLagMilliseconds) })
        family(
            "hlsorigin_drift_seconds", "gauge",
            "Arrival time minus the end of the newest segment on the PDT timeline.",
            perRendition { seconds($0.driftMilliseconds) })
        family(
            "hlsorigin_feed_live", "gauge", "1 while the rendition's feed delivers, 0 otherwise.",
            perRendition { $0.feed == "live" ? "1" : "0" })
        family(
            "hlsorigin_window_segments", "gauge", "Entries listed in the media playlist.",
            perRendition { "\($0.windowSegments)" })
        family(
            "hlsorigin_peak_rate_bytes_per_second", "gauge",
            "Highest segment rate seen, in bytes per second (the playlist's BANDWIDTH is 8 times this, in bits).",
            perRendition { "\(Double($0.peakBitrate) / 8)" })
        let encrypted = statuses.compactMap { status in status.encryption.map { (status.name, $0) } }
        if !encrypted.isEmpty {
            family(
                "hlsorigin_encryption_rekeyed_total", "counter",
                "Key files found unreadable at start: the channel re-keyed (stored segments get new ciphertext).",
                encrypted.map { ("{channel=\"\($0.0)\"}", $0.1.state == "rekeyed" ? "1" : "0") })
        }
        let stored = statuses.compactMap { status in status.storage.map { (status.name, $0) } }
        if !stored.isEmpty {
            family(
                "hlsorigin_storage_bytes", "gauge", "Bytes the channel's durable store holds on disk.",
                stored.map { ("{channel=\"\($0.0)\"}", "\($0.1.bytes)") })
            family(
                "hlsorigin_storage_degraded", "gauge", "1 while the channel's store writes fail (pushes get 507).",
                stored.map { ("{channel=\"\($0.0)\"}", $0.1.state == "ok" ? "0" : "1") })
            family(
                "hlsorigin_storage_write_failures_total", "counter", "Failed writes to the channel's durable store.",
                stored.map { ("{channel=\"\($0.0)\"}", "\($0.1.writeFailures)") })
            family(
                "hlsorigin_storage_nearly_full", "gauge",
                "1 while the store's file system is under storage.minFreeBytes with nothing left to evict "
                    + "(writes still succeed; content steering judges the channel failing).",
                stored.map { ("{channel=\"\($0.0)\"}", $0.1.nearlyFull == nil ? "0" : "1") })
        }
        let lowLatency = origin.allChannels.filter { $0.configuration.lowLatency != nil }.map {
            ($0.name, $0.lowLatencyServing)
        }
        if !lowLatency.isEmpty {
            func perChannel(_ value: (LowLatencyServingStatus) -> String) -> [(String, String)] {
                lowLatency.map { ("{channel=\"\($0.0)\"}", value($0.1)) }
            }
            family(
                "hlsorigin_ll_parts_total", "counter", "Low-Latency parts listed (GAP parts included).",
                perChannel { "\($0.partsListed)" })
            family(
                "hlsorigin_ll_blocking_waiting", "gauge",
                "Requests waiting for a part: blocking playlist reloads and preload-hinted part requests.",
                lowLatency.flatMap { name, status in
                    [
                        ("{channel=\"\(name)\",kind=\"playlist\"}", "\(status.waitingReloads)"),
                        ("{channel=\"\(name)\",kind=\"part\"}", "\(status.waitingParts)"),
                    ]
                })
            family(
                "hlsorigin_ll_blocking_timeouts_total", "counter",
                "Waits for a part that reached 3 target durations (playlists answered 503).",
                perChannel { "\($0.timeouts)" })
            out +=
                "# HELP hlsorigin_ll_blocking_release_seconds From a publish to the last blocking reload it released.\n"
            out += "# TYPE hlsorigin_ll_blocking_release_seconds histogram\n"
            for (name, status) in lowLatency {
                for bucket in status.releaseBuckets {
                    out +=
                        "hlsorigin_ll_blocking_release_seconds_bucket{channel=\"\(name)\",le=\"\(bucket.upperBound)\"}"
                    out += " \(bucket.count)\n"
                }
                out +=
                    "hlsorigin_ll_blocking_release_seconds_bucket{channel=\"\(name)\",le=\"+Inf\"} \(status.releaseCount)\n"
                out += "hlsorigin_ll_blocking_release_seconds_sum{channel=\"\(name)\"} \(status.releaseSeconds)\n"
                out += "hlsorigin_ll_blocking_release_seconds_count{channel=\"\(name)\"} \(status.releaseCount)\n"
            }
        }
        let refusals = playbackRefusals.all
        if !refusals.isEmpty || origin.allChannels.contains(where: { $0.configuration.playback != nil }) {
            family(
                "hlsorigin_playback_refused_total", "counter",
                "Requests refused for a missing or invalid playback token (not counted in hlsorigin_http_responses_total).",
                refusals.map { ("{channel=\"\($0.channel)\",reason=\"\($0.reason)\"}", "\($0.count)") })
        }
        return out
    }
}
