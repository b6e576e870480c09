import Foundation
import TestSupport

/// Two origins of a redundancy group on loopback and one ffmpeg pushing the same segments to both through its tee
/// muxer (as an encoder feeding a redundant pair does). A pair whose configuration names neither origin's port
/// starts both on port 0 (each binds the one it picks: nothing to race for); a pair whose configurations name each
/// other (`redundancy.peers`, `steering`), or that a CDN tier in front is configured for first, has its ports chosen
/// before either origin starts: unavoidable, as an origin reads its peers and `steering.self` only at a start (a
/// reload lists them under needsRestart). Used by RedundantPairTests, PairPlayThroughKillTests and the content
/// steering suites.
struct OriginPair: Sendable {
    /// The two origins, in the order of the labels given to `start`.
    let origins: [OriginProcess]
    /// The ffmpeg pushing to both.
    let encoder: ChildProcess

    var first: OriginProcess { origins[0] }
    var second: OriginProcess { origins[1] }
    var ports: [Int] { origins.map(\.port) }

    /// Starts the two origins on ports they pick (port 0), both with `configuration` (which names neither port),
    /// labelled `labels`, then ffmpeg pushing `renditions` of `channel` to both; waits (30 s at most) until both list
    /// `listed` segments of the first rendition. Everything started is added to `processes` (killed when the
    /// scenario throws).
    static func start(
        labels: [String], channel: String, renditions: [FFmpeg.PushedRendition], listed: Int,
        processes: CDNTierProcesses, configuration: String
    ) async throws -> OriginPair {
        try await start(
            labels: labels, channel: channel, renditions: renditions, listed: listed, processes: processes,
            ports: [0, 0], configurations: [configuration, configuration])
    }

    /// Starts the two origins on `ports` (two free ones when nil), the origin on `ports[i]` with
    /// `configuration(ports[i], ports[1 - i])` (its own port, its peer's) and label `labels[i]`, then as above. The
    /// free ports are reserved (bound and released) before either origin binds them, so use this only where the
    /// configurations need them. `directories[i]`, when given, is origin `i`'s directory instead of a fresh one (its
    /// `data` is the data directory: e.g. a small filesystem mounted there), and `arguments[i]` are added to its
    /// command line (e.g. `--log-format json`).
    static func start(
        labels: [String], channel: String, renditions: [FFmpeg.PushedRendition], listed: Int,
        processes: CDNTierProcesses, ports given: [Int]? = nil, directories: [URL?] = [nil, nil],
        arguments: [[String]] = [[], []], configuration: (_ own: Int, _ peer: Int) -> String
    ) async throws -> OriginPair {
        let ports = try given ?? [OriginProcess.freePort(), OriginProcess.freePort()]
        precondition(ports.count == 2, "a pair has two origins")
        return try await start(
            labels: labels, channel: channel, renditions: renditions, listed: listed, processes: processes,
            ports: ports, configurations: [configuration(ports[0], ports[1]), configuration(ports[1], ports[0])],
            directories: directories, arguments: arguments)
    }

    /// Starts origin `i` on `ports[i]` (0: one it picks) with `configurations[i]` (in `directories[i]`, with
    /// `arguments[i]`), then the encoder pushing to the ports the origins listen on, and waits for both to list
    /// `listed` segments.
    private static func start(
        labels: [String], channel: String, renditions: [FFmpeg.PushedRendition], listed: Int,
        processes: CDNTierProcesses, ports: [Int], configurations: [String], directories: [URL?] = [nil, nil],
        arguments: [[String]] = [[], []]
    ) async throws -> OriginPair {
        precondition(
            [ports.count, configurations.count, labels.count, directories.count, arguments.count] == [2, 2, 2, 2, 2],
            "a pair has two origins")
        var origins: [OriginProcess] = []
        for index in 0..<2 {
            let origin = try await OriginProcess(
                configuration: configurations[index], label: labels[index], port: ports[index],
                restarting: directories[index], arguments: arguments[index])
            processes.add(origin)
            origins.append(origin)
        }
        let listening = origins.map(\.port)
        let encoder = try FFmpeg.startTeePush(
            ports: listening, channel: channel, renditions: renditions, directory: origins[0].directory,
            label: "ffmpeg-tee")
        processes.add(encoder)
        let mediaPath = "/live/\(channel)/\(renditions[0].name)/index.m3u8"
        for port in listening {
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
