import Foundation
import Glibc
import HLSPlaylist
import TestSupport
import Testing

/// Packet loss on the contribution path (issue 31): an ffmpeg SRT caller in a network namespace (a second host, as
/// RemoteAccessTests makes it) pushes over a path with 2 % loss and 25 ms delay each way (50 ms RTT) and an SRT
/// latency of 400 ms (8 x the RTT); SRT's retransmission repairs the losses, so the playlist lists no EXT-X-GAP while
/// the caller pushes and every segment decodes whole, and the origin's own SRT statistics for the caller show the
/// 50 ms round trip, the losses and the retransmissions. The caller proves a token (its secret as the SRT
/// passphrase): it is not on loopback.
///
/// The path is impaired with `tc netem` on both veth ends where the kernel has it; where it has not
/// (CONFIG_NET_SCH_NETEM off, as on the Firecracker kernel this was written on), a userspace relay in the namespace
/// (`scripts/lossy-udp-relay`, seeded) holds each datagram 25 ms and drops 2 % in each direction, and the caller
/// pushes through it.
@Suite(.tags(.endToEnd), .serialized)
struct SRTPacketLossTests {
    static let secret = "lossy-path-passphrase-0123"

    static func configuration(srtPort: Int) -> String {
        """
        logLevel: info
        tokens:
          - name: encoder-remote
            secret: \(secret)
        ingest:
          autoCreate: false
          srt: { port: \(srtPort), host: 0.0.0.0, latencyMilliseconds: 400, idleTimeoutMilliseconds: 2000 }
        channels:
          - name: lossy
            segmentDuration: 2
            window: { segments: 15 }
            gapResponse: filler
            renditions: [{ name: main }]
            ingest: { tokens: [encoder-remote] }
        """
    }

    /// How the path was impaired.
    enum Impairment {
        /// `tc qdisc ... netem delay 25ms loss 2%` on both veth ends; the caller dials the host's veth address.
        case netem
        /// netem is missing (`netemError`): the caller dials the relay on the namespace's loopback, which forwards
        /// to the origin with 25 ms delay and 2 % loss each way.
        case relay(ChildProcess, port: Int, netemError: String)
    }

    /// Impairs the path both ways: netem where the kernel has it, else the userspace relay in the namespace.
    static func impair(_ namespace: NetworkNamespace, srtPort: Int, in directory: URL) async throws -> Impairment {
        let netem = ["qdisc", "add", "dev", namespace.hostLink, "root", "netem", "delay", "25ms", "loss", "2%"]
        let host = try await ChildProcess.run("tc", netem, in: directory, timeout: .seconds(10))
        if host.status == 0 {
            var inside = netem
            inside[3] = namespace.namespaceLink
            let remote = try await namespace.run("tc", inside, in: directory, timeout: .seconds(10))
            guard remote.status == 0 else { throw EndToEndError("tc in the namespace: \(remote.standardError)") }
            return .netem
        }
        // Port 0: the relay binds a port of the namespace's loopback itself and says which (`ready on HOST:PORT`).
        let relay = try ChildProcess(
            executable: try #require(ChildProcess.locate("ip")),
            arguments: [
                "netns", "exec", namespace.name, "python3",
                OriginProcess.packageRoot.appendingPathComponent("scripts/lossy-udp-relay").path,
                "--listen", "127.0.0.1:0", "--to", "\(namespace.hostAddress):\(srtPort)", "--delay-ms", "25",
                "--loss-percent", "2", "--seed", "31",
            ], directory: directory, label: "lossy-udp-relay")
        let started = ContinuousClock.now
        var port: Int?
        while port == nil {
            port = relay.standardOutput.split(separator: "\n").lazy.compactMap { line -> Int? in
                guard line.hasPrefix("ready on "), let colon = line.lastIndex(of: ":") else { return nil }
                return Int(line[line.index(after: colon)...])
            }.first
            guard port != nil || relay.isRunning && ContinuousClock.now - started < .seconds(10) else {
                relay.signal(SIGKILL)
                throw EndToEndError("lossy-udp-relay did not start: \(relay.standardError)")
            }
            if port == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        return .relay(relay, port: port!, netemError: host.standardError.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test func srtRetransmissionCarriesTheFeedOverALossyPathWithNoGap() async throws {
        guard NetworkNamespace.permitted else {
            Issue.record("network namespaces need root (or CAP_NET_ADMIN and CAP_SYS_ADMIN): the lossy path was not made")
            return
        }
        try await OriginProcess.withRunning(configuration: Self.configuration(srtPort: 0), label: "srt-loss") {
            origin in
            let srtPort = try await SRTProbe.port(of: origin)
            try await NetworkNamespace.with { namespace in
                let impairment = try await Self.impair(namespace, srtPort: srtPort, in: origin.directory)
                let target: String
                let relay: ChildProcess?
                switch impairment {
                case .netem: (target, relay) = ("\(namespace.hostAddress):\(srtPort)", nil)
                case .relay(let process, let port, _): (target, relay) = ("127.0.0.1:\(port)", process)
                }
                defer { relay?.signal(SIGKILL) }
                let streamID = "#!::r=lossy/main,m=publish,u=encoder-remote"
                let caller = try ChildProcess(
                    executable: try #require(ChildProcess.locate("ip")),
                    arguments: [
                        "netns", "exec", namespace.name, "ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "warning",
                        "-re", "-f", "lavfi", "-i", "testsrc=size=320x180:rate=25", "-f", "lavfi", "-i",
                        "sine=frequency=440:sample_rate=48000", "-t", "15", "-c:v", "libx264", "-preset", "veryfast",
                        "-g", "25", "-keyint_min", "25", "-sc_threshold", "0", "-b:v", "1000k", "-c:a", "aac",
                        "-b:a", "96k", "-f", "mpegts",
                        "srt://\(target)?streamid=\(streamID)&passphrase=\(Self.secret)"
                            + "&pbkeylen=16&latency=400000",
                    ], directory: origin.directory, label: "ffmpeg-srt-lossy")
                defer { caller.signal(SIGKILL) }
                let http = HTTPClient(port: origin.port)
                // While the caller pushes: every playlist read, no GAP; the caller's SRT statistics kept.
                var gapsSeen: Set<String> = []
                var stats: [String: Any] = [:]
                var reads = 0
                while caller.isRunning {
                    let playlist = try await http.get("/live/lossy/main/index.m3u8")
                    if playlist.status == 200 {
                        reads += 1
                        let media = try MediaPlaylist.parse(String(decoding: playlist.body, as: UTF8.self))
                        gapsSeen.formUnion(media.segments.filter(\.gap).map(\.uri))
                    }
                    let status = try await http.get("/admin/channels/lossy")
                    if status.status == 200,
                        let object = try JSONSerialization.jsonObject(with: Data(status.body)) as? [String: Any],
                        let first = (object["srtCallers"] as? [[String: Any]])?.first
                    {
                        stats = first
                    }
                    try await Task.sleep(for: .milliseconds(250))
                }
                let exit = await caller.wait(timeout: .seconds(1))
                #expect(exit == 0, "ffmpeg caller: \(String(describing: exit)) \(caller.standardError)")
                #expect(reads >= 20, "the playlist was read \(reads) times while the caller pushed")
                #expect(gapsSeen.isEmpty, "GAP listed while the caller pushed over the lossy path: \(gapsSeen.sorted())")
                let lost = stats["lostPackets"] as? Int ?? -1
                let retransmitted = stats["retransmittedPackets"] as? Int ?? -1
                let dropped = stats["droppedPackets"] as? Int ?? -1
                let received = stats["receivedPackets"] as? Int ?? -1
                let rtt = stats["rttMilliseconds"] as? Double ?? -1
                // The path did lose packets, SRT asked for them again and got them in time: none dropped for good.
                #expect(lost > 0 && retransmitted > 0, "no loss or no retransmission seen: \(stats)")
                #expect(dropped == 0, "\(dropped) packets dropped too late for the 400 ms latency: \(stats)")
                // The origin measured the path's round trip: 2 x 25 ms plus the host's own.
                #expect(rtt >= 45, "RTT \(rtt) ms as the origin measured it over a 50 ms path: \(stats)")
                var path = "netem 2 % loss, 25 ms each way"
                if let relay {
                    relay.signal(SIGTERM)
                    _ = await relay.wait(timeout: .seconds(2))
                    // The relay's own counts (it prints them every second and on SIGTERM).
                    let counts = relay.standardOutput.split(separator: "\n").last { $0.hasPrefix("relay:") }
                    #expect(counts != nil, "relay: \(relay.standardOutput) \(relay.standardError)")
                    if case .relay(_, _, let netemError) = impairment {
                        path = "no netem (tc: \(netemError)); userspace relay 2 % loss, 25 ms each way, "
                            + String(counts ?? "no counts")
                    }
                }
                try await SRTSegmentPlaybackTests.expectWholeDecodableSegments(
                    http: http, origin: origin, path: "/live/lossy/main/", frameRate: 25, audioFramesPerSecond: 46.875)
                print(
                    "SRT over a lossy path (\(path)): \(received) packets received, \(lost) lost, "
                        + "\(retransmitted) retransmitted, \(dropped) dropped, RTT \(rtt) ms; playlist read \(reads) "
                        + "times, GAPs listed \(gapsSeen.count)")
            }
        }
    }
}
