import Foundation
import TestSupport

/// Two origins of a redundancy group on loopback and one ffmpeg pushing the same segments to both through its tee
/// muxer (as an encoder feeding a redundant pair does). The ports are chosen before either origin starts, so that
/// each configuration can name the other (`redundancy.peers`, `steering`) and a CDN tier in front can be configured
/// first. Used by RedundantPairTests, PairPlayThroughKillTests and the content steering suites.
struct OriginPair: Sendable {
    /// The two origins, in the order of the ports given to `start`.
    let origins: [OriginProcess]
    /// The ffmpeg pushing to both.
    let encoder: ChildProcess

    var first: OriginProcess { origins[0] }
    var second: OriginProcess { origins[1] }
    var ports: [Int] { origins.map(\.port) }

    /// Starts the two origins on `ports` (two free ones when nil), the origin on `ports[i]` with
    /// `configuration(ports[i], ports[1 - i])` (its own port, its peer's) and label `labels[i]`, then ffmpeg pushing
    /// `renditions` of `channel` to both; waits (30 s at most) until both list `listed` segments of the first
    /// rendition. Everything started is added to `processes` (killed when the scenario throws).
    static func start(
        labels: [String], channel: String, renditions: [FFmpeg.PushedRendition], listed: Int,
        processes: CDNTierProcesses, ports given: [Int]? = nil,
        configuration: (_ own: Int, _ peer: Int) -> String
    ) async throws -> OriginPair {
        let ports = try given ?? [OriginProcess.freePort(), OriginProcess.freePort()]
        precondition(ports.count == 2 && labels.count == 2, "a pair has two origins")
        var origins: [OriginProcess] = []
        for index in 0..<2 {
            let origin = try await OriginProcess(
                configuration: configuration(ports[index], ports[1 - index]), label: labels[index],
                port: ports[index])
            processes.add(origin)
            origins.append(origin)
        }
        let encoder = try FFmpeg.startTeePush(
            ports: ports, channel: channel, renditions: renditions, directory: origins[0].directory,
            label: "ffmpeg-tee")
        processes.add(encoder)
        let mediaPath = "/live/\(channel)/\(renditions[0].name)/index.m3u8"
        for port in ports {
            let client = HTTPClient(port: port)
            try await waitUntil(
                "the origin on \(port) to list \(listed) segments", timeout: .seconds(30),
                interval: .milliseconds(200)
            ) {
                guard encoder.isRunning else { throw EndToEndError("ffmpeg exited: \(encoder.standardError)") }
                guard let answer = try? await client.get(mediaPath), answer.status == 200 else { return false }
                return ((try? MediaPlaylistText(answer.text))?.entries.count ?? 0) >= listed
            }
        }
        return OriginPair(origins: origins, encoder: encoder)
    }
}
