import Foundation
import HLSPlaylist
import Testing
import TestSupport

/// SRT contribution (issue 31) with real callers: ffmpeg's libsrt output, srt-live-transmit relaying a file, and a
/// libsrt caller of the test's own where the reject reason a caller is told must be read (ffmpeg and
/// srt-live-transmit print only "Application-defined rejection reason").
@Suite(.tags(.endToEnd), .serialized)
struct SRTContributionTests {
    /// ffmpeg pushes H.264 (x264's default lookahead: the first packet comes a second late, a gap longer than the
    /// listener's receive wait) to `live/video`; the caller's SRT statistics are in the channel status and /metrics
    /// while it pushes, a second caller for the rendition is refused with 1409, and the playlist lists the segments
    /// the origin cut.
    @Test func ffmpegCallerFeedsTheChannelAndItsStatisticsAreShown() async throws {
        try await OriginProcess.withRunning(configuration: Self.configuration(srtPort: 0), label: "srt-ffmpeg") {
            origin in
            let srtPort = try await SRTProbe.port(of: origin)
            let http = HTTPClient(port: origin.port)
            let push = try ChildProcess(
                executable: try #require(ChildProcess.locate("ffmpeg")),
                arguments: [
                    "-hide_banner", "-loglevel", "warning", "-re", "-f", "lavfi", "-i",
                    "testsrc=size=320x180:rate=25", "-t", "9", "-c:v", "libx264", "-preset", "veryfast", "-g", "10",
                    "-f", "mpegts", "srt://127.0.0.1:\(srtPort)?streamid=#!::r=live/video,m=publish",
                ], directory: origin.directory, label: "ffmpeg-srt")
            var caller: [String: Any] = [:]
            try await waitUntil("the caller's statistics in the channel status", timeout: .seconds(8)) {
                let answer = try await http.get("/admin/channels/live")
                guard answer.status == 200,
                    let status = try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any],
                    let callers = status["srtCallers"] as? [[String: Any]], let first = callers.first,
                    (first["receivedBytes"] as? Int ?? 0) > 10_000
                else { return false }
                caller = first
                return true
            }
            #expect(caller["rendition"] as? String == "video")
            #expect((caller["peer"] as? String)?.hasPrefix("127.0.0.1:") == true)
            #expect(caller["credential"] as? String == "loopback")
            #expect(caller["rttMilliseconds"] is Double)
            // The segmenter's side of the caller: its session's status by rendition.
            try await waitUntil("the caller's stream in the channel status", timeout: .seconds(8)) {
                let answer = try await http.get("/admin/channels/live")
                guard let status = try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any],
                    let streams = status["srtStreams"] as? [String: [String: Any]],
                    let video = streams["video"], let segmenter = video["segmenter"] as? [String: Any],
                    let demuxer = segmenter["demuxer"] as? [String: Any]
                else { return false }
                return (demuxer["packets"] as? Int ?? 0) > 0 && (video["bytesReceived"] as? Int ?? 0) > 0
            }
            #expect((caller["bitsPerSecond"] as? Double ?? 0) > 0)
            let metrics = String(decoding: try await http.get("/metrics").body, as: UTF8.self)
            #expect(metrics.contains("hlsorigin_srt_callers 1\n"))
            #expect(metrics.contains("hlsorigin_srt_received_bytes_total{channel=\"live\",rendition=\"video\"} "))
            #expect(metrics.contains("hlsorigin_srt_rtt_seconds{channel=\"live\",rendition=\"video\"} "))
            // A backup encoder is refused while the first one feeds the rendition.
            #expect(
                SRTProbe.connect(port: srtPort, streamID: "#!::r=live/video,m=publish") == .rejected(1409))
            let status = await push.wait(timeout: .seconds(20))
            #expect(status == 0, "ffmpeg: \(push.standardError)")
            try await waitUntil("the rendition's playlist lists the cut segments", timeout: .seconds(6)) {
                let playlist = try await http.get("/live/live/video/index.m3u8")
                guard playlist.status == 200 else { return false }
                let media = try MediaPlaylist.parse(String(decoding: playlist.body, as: UTF8.self))
                return media.segments.filter { !$0.gap }.count >= 3
            }
            try await waitUntil("the feed drop is counted", timeout: .seconds(4)) {
                String(decoding: try await http.get("/metrics").body, as: UTF8.self)
                    .contains("hlsorigin_srt_feed_drops_total{reason=\"disconnected\"} 1\n")
            }
            // The first caller has dropped: a backup encoder now takes the rendition over.
            guard case .connected(let backup) = SRTProbe.connect(port: srtPort, streamID: "live/video") else {
                Issue.record("the backup caller was refused after the first dropped")
                return
            }
            SRTProbe.close(backup)
        }
    }

    /// srt-live-transmit relays a TS file (paced by ffmpeg -re, as a contribution link would carry it) with the plain
    /// `channel/rendition` stream id, encrypted with the listener's passphrase (AES-256).
    @Test func srtLiveTransmitRelaysAFileIntoTheChannel() async throws {
        let passphrase = "listener-passphrase-1"
        try await OriginProcess.withRunning(
            configuration: Self.configuration(srtPort: 0, passphrase: passphrase), label: "srt-relay"
        ) { origin in
            let srtPort = try await SRTProbe.port(of: origin)
            let clip = origin.directory.appendingPathComponent("clip.ts")
            _ = try await ChildProcess.run(
                "ffmpeg",
                [
                    "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=320x180:rate=25", "-f",
                    "lavfi", "-i", "sine=frequency=440", "-t", "6", "-c:v", "libx264", "-preset", "veryfast", "-g",
                    "10", "-c:a", "aac", "-f", "mpegts", clip.path,
                ], in: origin.directory)
            let relay = try await ChildProcess.run(
                "sh",
                [
                    "-c",
                    "ffmpeg -hide_banner -loglevel error -re -i \(clip.path) -c copy -f mpegts - | "
                        // -a:no: no reconnect once the origin drops the caller, silent after the file's end.
                        + "srt-live-transmit -q -a:no -chunk:1316 file://con "
                        + "'srt://127.0.0.1:\(srtPort)?streamid=relay/main&passphrase=\(passphrase)&pbkeylen=32'",
                ], in: origin.directory, timeout: .seconds(30))
            #expect(relay.status == 0, "srt-live-transmit: \(relay.standardError)")
            let http = HTTPClient(port: origin.port)
            try await waitUntil("the relayed rendition's playlist lists segments", timeout: .seconds(6)) {
                let playlist = try await http.get("/live/relay/main/index.m3u8")
                guard playlist.status == 200 else { return false }
                let media = try MediaPlaylist.parse(String(decoding: playlist.body, as: UTF8.self))
                return media.segments.filter { !$0.gap }.count >= 2
            }
            #expect(origin.logTail(200).contains("SRT caller connected"))
            // The relay's caller is gone first (srt-live-transmit ends without closing the connection: the origin
            // drops it after the idle timeout, 2 s here); before that a second caller for relay/main is refused as
            // a conflict (1409) in the handshake, before SRT compares passphrases (one full CI run probed that early).
            try await waitUntil("the relay's caller dropped", timeout: .seconds(15)) {
                origin.logTail(400).contains("SRT caller ended: feed drop")
            }
            // Without the passphrase, the caller is refused by SRT itself.
            #expect(SRTProbe.connect(port: srtPort, streamID: "relay/main") == .rejected(SRTProbe.unsecure))
        }
    }

    /// Refused callers are told why in the handshake (the access-control reject codes), audited and counted; a
    /// silent caller is dropped after the idle timeout.
    @Test func refusedCallersAreToldWhyInTheHandshake() async throws {
        let configuration = """
            tokens:
              - name: encoder-news
                secret: news-passphrase-0123
            ingest:
              autoCreate: false
              srt: { port: 0, idleTimeoutMilliseconds: 500 }
            channels:
              - name: news
                renditions: [{ name: video }]
                ingest: { tokens: [encoder-news] }
              - name: open
                renditions: [{ name: video }]
            """
        try await OriginProcess.withRunning(configuration: configuration, label: "srt-refusals") { origin in
            let srtPort = try await SRTProbe.port(of: origin)
            #expect(SRTProbe.connect(port: srtPort, streamID: "#!::r=nochannel/video,m=publish") == .rejected(1404))
            #expect(SRTProbe.connect(port: srtPort, streamID: "#!::r=news/video,m=request") == .rejected(1405))
            #expect(SRTProbe.connect(port: srtPort, streamID: "#!::r=news,m=publish") == .rejected(1400))
            #expect(
                SRTProbe.connect(port: srtPort, streamID: "#!::r=news/video,m=publish,s=not-a-token") == .rejected(1401))
            #expect(
                SRTProbe.connect(port: srtPort, streamID: "#!::r=open/video,m=publish,u=encoder-news")
                    == .rejected(1403))
            // news takes only encoder-news's passphrase.
            #expect(
                SRTProbe.connect(port: srtPort, streamID: "news/video", passphrase: "wrong-passphrase")
                    == .rejected(SRTProbe.badSecret))
            // ffmpeg, a real encoder, is refused too (it prints no reason: "Input/output error").
            let refusedFFmpeg = try await ChildProcess.run(
                "ffmpeg",
                [
                    "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc", "-t", "1", "-c:v",
                    "libx264", "-f", "mpegts", "srt://127.0.0.1:\(srtPort)?streamid=#!::r=nochannel/video,m=publish",
                ], in: origin.directory, timeout: .seconds(20))
            #expect(refusedFFmpeg.status != 0)
            // The token's secret as the passphrase: admitted. Then it sends null packets only (a CBR encoder whose
            // source died): no media, so it is silent and dropped after 500 ms.
            guard
                case .connected(let socket) = SRTProbe.connect(
                    port: srtPort, streamID: "#!::r=news/video,m=publish,u=encoder-news",
                    passphrase: "news-passphrase-0123")
            else {
                Issue.record("the caller with the token's passphrase was refused")
                return
            }
            defer { SRTProbe.close(socket) }
            let nulls = Task.detached { SRTProbe.sendNullPackets(socket, payloads: 250) }
            let http = HTTPClient(port: origin.port)
            try await waitUntil("the silent caller is dropped", timeout: .seconds(5)) {
                String(decoding: try await http.get("/metrics").body, as: UTF8.self)
                    .contains("hlsorigin_srt_feed_drops_total{reason=\"silent\"} 1\n")
            }
            // The origin closed it while it still sent: sends fail before the 5 s of null packets are through.
            #expect(await nulls.value == false)
            let metrics = String(decoding: try await http.get("/metrics").body, as: UTF8.self)
            for reason in ["unknown_channel", "bad_mode", "bad_request", "unauthorized", "wrong_token"] {
                #expect(metrics.contains("hlsorigin_srt_refusals_total{reason=\"\(reason)\"} "), "\(reason)")
            }
            // The wrong passphrase failed SRT's key exchange, after the stream id was admitted: audited too.
            #expect(metrics.contains("hlsorigin_srt_refusals_total{reason=\"bad_passphrase\"} 1\n"))
            let log = origin.logTail(400)
            #expect(log.contains("SRT caller refused"))
            #expect(log.contains("audit.outcome=unknown_channel"))
            #expect(log.contains("audit.outcome=bad_passphrase"))
            #expect(!log.contains("not-a-token"), "a secret from a stream id reached the log")
        }
    }

    @Test func aCallerPastTheChannelOrRenditionLimitIsRefusedInTheHandshake() async throws {
        let configuration = """
            limits: { channels: 1, renditionsPerChannel: 1 }
            ingest:
              autoCreate: true
              srt: { port: 0 }
            channels:
              - name: news
                renditions: [{ name: video }]
            """
        try await OriginProcess.withRunning(configuration: configuration, label: "srt-limits") { origin in
            let srtPort = try await SRTProbe.port(of: origin)
            // A new channel past limits.channels, a new rendition past renditionsPerChannel: refused, not admitted
            // to hold a caller slot while every segment is refused.
            #expect(SRTProbe.connect(port: srtPort, streamID: "other/video") == .rejected(1402))
            #expect(SRTProbe.connect(port: srtPort, streamID: "news/audio") == .rejected(1402))
            guard case .connected(let socket) = SRTProbe.connect(port: srtPort, streamID: "news/video") else {
                Issue.record("the caller for the configured rendition was refused")
                return
            }
            SRTProbe.close(socket)
            let metrics = String(decoding: try await HTTPClient(port: origin.port).get("/metrics").body, as: UTF8.self)
            #expect(metrics.contains("hlsorigin_srt_refusals_total{reason=\"channel_limit\"} 1\n"))
            #expect(metrics.contains("hlsorigin_srt_refusals_total{reason=\"rendition_limit\"} 1\n"))
            #expect(origin.logTail(200).contains("audit.outcome=channel_limit"))
        }
    }

    static func configuration(srtPort: Int, passphrase: String? = nil) -> String {
        """
        ingest:
          autoCreate: true
          srt:
            port: \(srtPort)
            latencyMilliseconds: 120
            idleTimeoutMilliseconds: 2000
        \(passphrase.map { "    passphrase: \($0)" } ?? "")
        """
    }
}

extension SRTProbe {
    /// The SRT port of an origin started with `ingest.srt.port: 0`, read from its `SRT listener ready` log line
    /// (`srt.port=`): the origin binds the port itself, so two origins of parallel tests never race for one.
    static func port(of origin: OriginProcess) async throws -> Int {
        var port: Int?
        try await waitUntil("the SRT listener's port in the log", timeout: .seconds(10)) {
            port = origin.child.standardError.split(separator: "\n").lazy.compactMap { line -> Int? in
                guard line.contains("SRT listener ready"), let key = line.range(of: "srt.port=") else { return nil }
                return Int(line[key.upperBound...].prefix { $0.isNumber })
            }.first
            return port != nil
        }
        return try #require(port)
    }
}
