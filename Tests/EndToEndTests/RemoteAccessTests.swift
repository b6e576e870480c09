import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEnd {
    /// The release binary seen from a second host: a network namespace the test makes (a veth pair with addresses of
    /// its own), so curl and ffmpeg in it are remote clients of the origin's non-loopback address. The default
    /// configuration takes pushes from loopback only; a channel's token opens that channel and no other; limits hold
    /// what a client with a token can make the origin hold.
    @Suite(
        "End to end: remote and loopback clients, tokens, limits", .tags(.endToEnd),
        .enabled(
            if: NetworkNamespace.permitted,
            "creating a network namespace (ip netns add) is not permitted here: run as root or with CAP_NET_ADMIN"))
    struct RemoteAccessTests {
        static let newsToken = "n3ws-7c1d0e5a9b"
        static let sportToken = "sp0rt-4f2b8a6c1e"

        /// A 2-second MPEG-TS segment (160x90 H.264, one GOP) made by ffmpeg in `directory`.
        static func segment(in directory: URL) async throws -> URL {
            let file = directory.appendingPathComponent("segment.ts")
            let made = try await ChildProcess.run(
                "ffmpeg",
                [
                    "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25",
                    "-t", "2", "-c:v", "libx264", "-preset", "veryfast", "-g", "50", "-f", "mpegts", file.path,
                ], in: directory)
            guard made.status == 0 else {
                throw EndToEndError("ffmpeg could not make a segment: \(made.standardError)")
            }
            return file
        }

        /// `curl` PUT of `file` (status and body), from the namespace when `namespace` is given, else from loopback.
        static func put(
            _ file: URL, to url: String, token: String? = nil, from namespace: NetworkNamespace?, in directory: URL
        ) async throws -> (status: Int, body: String) {
            var arguments = ["-sS", "-w", "\n%{http_code}", "-T", file.path, url]
            if let token { arguments += ["-H", "Authorization: Bearer \(token)"] }
            return try await curl(arguments, from: namespace, in: directory)
        }

        static func get(
            _ url: String, from namespace: NetworkNamespace?, in directory: URL
        ) async throws -> (status: Int, body: String) {
            try await curl(["-sS", "-w", "\n%{http_code}", url], from: namespace, in: directory)
        }

        private static func curl(
            _ arguments: [String], from namespace: NetworkNamespace?, in directory: URL
        ) async throws -> (status: Int, body: String) {
            let output: ToolOutput
            if let namespace {
                output = try await namespace.run("curl", arguments, in: directory)
            } else {
                output = try await ChildProcess.run("curl", arguments, in: directory)
            }
            guard output.status == 0, let last = output.standardOutput.split(separator: "\n").last,
                let status = Int(last)
            else { throw EndToEndError("curl \(arguments) failed (\(output.status)): \(output.standardError)") }
            return (status, String(output.standardOutput.dropLast(last.count + 1)))
        }

        @Test func theDefaultConfigurationTakesPushesFromLoopbackOnly() async throws {
            let configuration = """
                logLevel: info
                ingest: {autoCreate: true, defaults: {segmentDuration: 2}}
                channels: []
                """
            try await OriginProcess.withRunning(configuration: configuration, label: "remote-default") { origin in
                try await NetworkNamespace.with { namespace in
                    let segment = try await Self.segment(in: origin.directory)
                    let remote = "http://\(namespace.hostAddress):\(origin.port)"
                    let pushed = try await Self.put(
                        segment, to: "\(remote)/ingest/evil/r/0.ts", from: namespace, in: origin.directory)
                    print("remote push without a token (\(namespace.remoteAddress)): \(pushed.status) \(pushed.body)")
                    #expect(pushed.status == 403)
                    #expect(pushed.body.contains("\(namespace.remoteAddress) is not a loopback client"))
                    #expect(pushed.body.contains("ingest.token"))
                    let withSomeToken = try await Self.put(
                        segment, to: "\(remote)/ingest/evil/r/0.ts", token: "guess", from: namespace,
                        in: origin.directory)
                    #expect(withSomeToken.status == 403)
                    let admin = try await Self.get("\(remote)/admin/channels", from: namespace, in: origin.directory)
                    print("remote admin without a token: \(admin.status)")
                    #expect(admin.status == 403)
                    // Reading stays open to remote players.
                    #expect(
                        try await Self.get("\(remote)/healthz", from: namespace, in: origin.directory).status == 200)
                    let local = try await Self.put(
                        segment, to: "\(origin.baseURL)/ingest/mine/r/0.ts", from: nil, in: origin.directory)
                    print("loopback push without a token: \(local.status) \(local.body)")
                    #expect(local.status == 201)
                    let metrics = try await Self.get("\(origin.baseURL)/metrics", from: nil, in: origin.directory).body
                    #expect(
                        metrics.contains("hlsorigin_refusals_total{route=\"ingest\",reason=\"forbidden_remote\"} 2"))
                    #expect(metrics.contains("hlsorigin_refusals_total{route=\"admin\",reason=\"forbidden_remote\"} 1"))
                    #expect(metrics.contains("hlsorigin_channels 1\n"))
                }
                let log = origin.child.standardError
                #expect(log.contains("no ingest token is configured: pushes are accepted from loopback clients only"))
                #expect(log.contains("hlsorigin.audit"))
                #expect(log.contains("audit.outcome=forbidden_remote"))
            }
        }

        @Test func aRemoteEncoderPushesWithItsChannelsTokenAndNoOther() async throws {
            let configuration = """
                logLevel: info
                tokens:
                  - {name: encoder-news, secret: \(Self.newsToken)}
                  - {name: encoder-sport, secret: \(Self.sportToken)}
                ingest: {autoCreate: true, defaults: {segmentDuration: 2}}
                channels:
                  - {name: news, segmentDuration: 2, ingest: {tokens: [encoder-news]}}
                  - {name: sport, segmentDuration: 2, ingest: {tokens: [encoder-sport]}}
                """
            try await OriginProcess.withRunning(configuration: configuration, label: "remote-tokens") { origin in
                try await NetworkNamespace.with { namespace in
                    let directory = origin.directory
                    let segment = try await Self.segment(in: directory)
                    let remote = "http://\(namespace.hostAddress):\(origin.port)"
                    let none = try await Self.put(
                        segment, to: "\(remote)/ingest/news/r/0.ts", from: namespace, in: directory)
                    let other = try await Self.put(
                        segment, to: "\(remote)/ingest/news/r/0.ts", token: Self.sportToken, from: namespace,
                        in: directory)
                    let loopbackNone = try await Self.put(
                        segment, to: "\(origin.baseURL)/ingest/news/r/0.ts", from: nil, in: directory)
                    print(
                        "news: no token \(none.status), sport's token \(other.status), loopback no token \(loopbackNone.status)"
                    )
                    #expect(none.status == 401)
                    #expect(other.status == 403)
                    #expect(other.body.contains("token 'encoder-sport' does not grant pushes into channel 'news'"))
                    #expect(loopbackNone.status == 401)
                    // ffmpeg in the namespace, as an encoder on another host pushes, with the channel's token.
                    let ffmpeg = try await namespace.run(
                        "ffmpeg",
                        [
                            "-hide_banner", "-loglevel", "warning", "-re", "-f", "lavfi", "-i",
                            "testsrc2=size=320x180:rate=25", "-t", "6", "-c:v", "libx264", "-preset", "veryfast",
                            "-g", "50", "-keyint_min", "50", "-sc_threshold", "0", "-f", "hls", "-hls_time", "2",
                            "-hls_list_size", "3", "-method", "PUT", "-headers",
                            "Authorization: Bearer \(Self.newsToken)\r\n", "\(remote)/ingest/news/180p/index.m3u8",
                        ], in: directory, timeout: .seconds(30))
                    #expect(ffmpeg.status == 0, "\(ffmpeg.standardError)")
                    let playlist = try await Self.get(
                        "\(remote)/live/news/180p/index.m3u8", from: namespace, in: directory)
                    print("news/180p after ffmpeg's remote push: \(playlist.status)\n\(playlist.body)")
                    #expect(playlist.status == 200)
                    #expect(playlist.body.contains("#EXTINF:2.000,"))
                    let curlAccepted = try await Self.put(
                        segment, to: "\(remote)/ingest/sport/r/0.ts", token: Self.sportToken, from: namespace,
                        in: directory)
                    #expect(curlAccepted.status == 201, "\(curlAccepted.body)")
                }
                let log = origin.child.standardError
                #expect(log.contains("audit.credential=encoder-sport"))
                #expect(log.contains("rendition created"))
                #expect(!log.contains(Self.newsToken) && !log.contains(Self.sportToken))
            }
        }

        @Test func aHostileRemoteClientWithATokenStaysWithinTheLimits() async throws {
            let configuration = """
                logLevel: warning
                ingest: {token: h0stile-has-the-global-token, autoCreate: true, defaults: {segmentDuration: 2}}
                limits: {channels: 20, renditionsPerChannel: 8, autoCreationsPerMinute: 1000,
                         channelMemoryBytes: 4000000, channelDiskBytes: 8000000}
                channels: []
                """
            try await OriginProcess.withRunning(configuration: configuration, label: "remote-limits") { origin in
                try await NetworkNamespace.with { namespace in
                    let directory = origin.directory
                    let segment = try await Self.segment(in: directory)
                    let remote = "http://\(namespace.hostAddress):\(origin.port)"
                    let before = try Self.residentBytes(origin.child.pid)
                    // One curl, one connection: 10,000 channels, then 10,000 renditions of one channel.
                    var lines = [
                        #"header = "Authorization: Bearer h0stile-has-the-global-token""#,
                        #"write-out = "%{http_code}\n""#,
                    ]
                    for index in 0..<10_000 {
                        lines += [
                            #"url = "\#(remote)/ingest/evil\#(index)/r/0.ts""#, #"upload-file = "\#(segment.path)""#,
                            #"output = "/dev/null""#,
                        ]
                    }
                    for index in 0..<10_000 {
                        lines += [
                            #"url = "\#(remote)/ingest/evil0/r\#(index)/0.ts""#, #"upload-file = "\#(segment.path)""#,
                            #"output = "/dev/null""#,
                        ]
                    }
                    let config = directory.appendingPathComponent("hostile.curlrc")
                    try Data(lines.joined(separator: "\n").utf8).write(to: config)
                    let started = ContinuousClock.now
                    let hostile = try await namespace.run(
                        "curl", ["-sS", "-K", config.path], in: directory, timeout: .seconds(180))
                    let elapsed = ContinuousClock.now - started
                    let codes = hostile.standardOutput.split(separator: "\n")
                    let channelCodes = Dictionary(codes.prefix(10_000).map { ($0, 1) }, uniquingKeysWith: +)
                    let renditionCodes = Dictionary(codes.dropFirst(10_000).map { ($0, 1) }, uniquingKeysWith: +)
                    let after = try Self.residentBytes(origin.child.pid)
                    let du = try await ChildProcess.run("du", ["-sb", "data"], in: directory)
                    let stored = Int(du.standardOutput.split(separator: "\t").first ?? "") ?? -1
                    print(
                        "hostile client from \(namespace.remoteAddress): 20,000 pushes in \(elapsed); channels \(channelCodes), "
                            + "renditions \(renditionCodes); RSS \(before / 1024) KiB -> \(after / 1024) KiB; "
                            + "data directory \(stored) bytes; segment \(try Data(contentsOf: segment).count) bytes")
                    #expect(codes.count == 20_000)
                    #expect(channelCodes == ["201": 20, "403": 9_980])
                    #expect(renditionCodes == ["201": 7, "403": 9_993])
                    let metrics = try await Self.get("\(origin.baseURL)/metrics", from: nil, in: directory).body
                    #expect(metrics.contains("hlsorigin_channels 20\n"))
                    #expect(
                        metrics.contains("hlsorigin_refusals_total{route=\"ingest\",reason=\"channel_limit\"} 9980"))
                    #expect(
                        metrics.contains("hlsorigin_refusals_total{route=\"ingest\",reason=\"rendition_limit\"} 9993"))
                    // What 20 channels of at most 8 renditions may hold, and far below 10,000 channels' worth.
                    #expect(after - before < 64 << 20)
                    #expect(stored < 20 * 8_000_000)
                }
            }
        }

        /// The resident set size of a process, in bytes (`VmRSS` of /proc/PID/status).
        static func residentBytes(_ pid: Int32) throws -> Int {
            let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
                let kib = Int(line.split(separator: " ").dropFirst().first ?? "")
            else { throw EndToEndError("no VmRSS in /proc/\(pid)/status") }
            return kib * 1024
        }
    }
}
