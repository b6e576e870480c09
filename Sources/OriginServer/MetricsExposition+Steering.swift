import HLSPackaging
import LiveTimeline
import OriginCore

extension MetricsExposition {
    /// Content Steering's families (docs/metrics.md, "Content steering"): each steered channel's pathways as this
    /// origin ranks them now, the steering manifests answered, and the health monitor's reads of its peers and of the
    /// group database. Computed at the scrape from the monitor's snapshot: nothing is added to the playlist or
    /// segment path. Empty when no channel is steered.
    static func render(steering slot: SteeringMonitorSlot, origin: Origin) -> String {
        guard let monitor = slot.monitor else { return "" }
        var out = ""
        func family(_ name: String, _ type: String, _ help: String, _ samples: [(String, String)]) {
            Self.family(name, type, help, samples, to: &out)
        }
        func seconds(_ milliseconds: Int64) -> String { "\(Double(milliseconds) / 1000)" }
        var states: [(String, String)] = []
        for channel in origin.allChannels {
            guard let steering = channel.configuration.steering else { continue }
            let health = monitor.pathwayHealth(steering, channel: channel, name: channel.name)
            for pathway in steering.pathways {
                states.append(
                    (
                        "{channel=\"\(channel.name)\",pathway=\"\(pathway.id)\"}",
                        "\(health[pathway.id]?.severity ?? PathwayHealth.healthy.severity)"
                    ))
            }
        }
        family(
            "hlsorigin_steering_pathway_state", "gauge",
            "The pathway's health as this origin's steering manifest ranks it: 0 healthy, 1 stale, 2 failing, 3 down.",
            states)
        family(
            "hlsorigin_steering_manifests_total", "counter",
            "Steering manifests answered, by channel and the pathway put first in PATHWAY-PRIORITY.",
            slot.answered(keeping: Set(origin.allChannels.map(\.name))).map { ("{channel=\"\($0.channel)\",pathway=\"\($0.pathway)\"}", "\($0.count)") })
        let statistics = monitor.statistics()
        family(
            "hlsorigin_steering_peer_read_failures_total", "counter",
            "Failed reads of the peer's /peer/health, by reason (connect, timeout, closed, status, invalid_report, error).",
            statistics.readFailures.map { ("{peer=\"\($0.peer)\",reason=\"\($0.reason)\"}", "\($0.count)") })
        family(
            "hlsorigin_steering_peer_report_age_seconds", "gauge",
            "Age of the newest report read from the peer, by source (http, database); past 6 s it no longer counts.",
            statistics.reportAges.map { ("{peer=\"\($0.peer)\",source=\"\($0.source)\"}", seconds($0.milliseconds)) })
        if let age = statistics.heartbeatAgeMilliseconds {
            family(
                "hlsorigin_steering_heartbeat_age_seconds", "gauge",
                "Time since this origin last wrote its heartbeat to the group database (since start before the first).",
                [("", seconds(age))])
            family(
                "hlsorigin_steering_heartbeat_failures_total", "counter",
                "Heartbeats to the group database that failed (error) or did not end within 3 s (timeout).",
                ["error", "timeout"].map { ("{reason=\"\($0)\"}", "\(statistics.heartbeatFailures[$0] ?? 0)") })
        }
        return out
    }
}
