import Foundation
import Glibc
import HLSPlaylist
import TestSupport
import Testing

extension EndToEnd {
    /// Cue tag mode `cue` (docs/markers.md): a real ffmpeg pushes two renditions, a break is posted through the admin
    /// API, and the live playlists show EXT-OATCLS-SCTE35 + EXT-X-CUE-OUT on the first segment starting at or after
    /// the splice, EXT-X-CUE-OUT-CONT while it lasts and EXT-X-CUE-IN after it, the same in both renditions, while
    /// ffmpeg as a player reads the live stream through the break without an error.
    @Suite("End to end: cue tag mode with a real push and a player", .tags(.endToEnd))
    struct CueTagTests {
        static let adminToken = "e2e-admin-token"
        static let channel = "live"
        static let names = ["hi", "lo"]
        static let configuration = """
            logLevel: warning
            admin:
              token: \(adminToken)
            ingest:
              autoCreate: false
            channels:
              - name: \(channel)
                segmentDuration: 2
                window: { segments: 10 }
                cueTags: cue
                oatcls: true
                renditions: [{name: hi}, {name: lo}]
            """
        static let renditions = [
            FFmpeg.PushedRendition(name: "hi", width: 640, height: 360, videoBitrate: "500k"),
            FFmpeg.PushedRendition(name: "lo", width: 320, height: 180, videoBitrate: "200k"),
        ]

        /// One listed segment: MSN, PDT (s) and its cue lines.
        struct Listed: Equatable {
            let msn: UInt64
            let start: Double
            let cues: [String]
        }

        static func listed(_ client: HTTPClient, _ rendition: String) async throws -> (listed: [Listed], text: String)? {
            let response = try await client.get("/live/\(channel)/\(rendition)/index.m3u8")
            guard response.status == 200 else { return nil }
            let playlist = try MediaPlaylist.parse(response.text)
            var result: [Listed] = []
            for (offset, segment) in playlist.segments.enumerated() {
                guard let pdt = segment.programDateTime else { return nil }
                result.append(
                    Listed(
                        msn: playlist.mediaSequence + UInt64(offset), start: Double(pdt.millisecondsSince1970) / 1000,
                        cues: segment.extraTags.filter { $0.hasPrefix("#EXT-X-CUE") || $0.hasPrefix("#EXT-OATCLS") }))
            }
            return (result, response.text)
        }

        @Test("CUE-OUT on a segment boundary, CONT, CUE-IN in both renditions; a player reads through the break")
        func cueModeWithAPlayer() async throws {
            try await OriginProcess.withRunning(configuration: Self.configuration, label: "cue-tags") { origin in
                let client = HTTPClient(port: origin.port)
                let encoder = try FFmpeg.startPush(
                    port: origin.port, channel: Self.channel, renditions: Self.renditions,
                    directory: origin.directory, label: "encoder")
                defer { encoder.signal(SIGKILL) }
                try await waitUntil("both renditions to list 3 segments", timeout: .seconds(30), interval: .milliseconds(500)) {
                    for name in Self.names {
                        guard let (listed, _) = try await Self.listed(client, name), listed.count >= 3 else {
                            return false
                        }
                    }
                    return true
                }
                let recording = origin.directory.appendingPathComponent("player.ts")
                let player = try FFmpeg.startRecorder(
                    url: "\(origin.baseURL)/live/\(Self.channel)/index.m3u8", seconds: 24, output: recording,
                    directory: origin.directory, label: "player", logLevel: "warning")
                defer { player.signal(SIGKILL) }

                // An 8 s break starting 1 s from now: inside a segment, so its CUE-OUT goes on the next one.
                let spliceMilliseconds = Int64(Date().timeIntervalSince1970 * 1000) + 1000
                let splice = Double(spliceMilliseconds) / 1000
                let formatter = ISO8601DateFormatter()
                formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                let body = try JSONSerialization.data(withJSONObject: [
                    "id": "brk-1", "startDate": formatter.string(from: Date(timeIntervalSince1970: splice)),
                    "duration": 8, "scte35": "out",
                ])
                let posted = try await client.request(
                    "POST", "/admin/channels/\(Self.channel)/dateranges",
                    headers: [("Authorization", "Bearer \(Self.adminToken)"), ("Content-Type", "application/json")],
                    body: Array(body))
                #expect(posted.status == 201, "\(posted.text)")
                let tag = try #require(
                    ((try JSONSerialization.jsonObject(with: Data(posted.body))) as? [String: Any])?["tag"] as? String)
                let outHex = try #require(
                    tag.split(separator: ",").first { $0.hasPrefix("SCTE35-OUT=0x") }?.dropFirst("SCTE35-OUT=0x".count))

                // Read both playlists until the CUE-IN is listed (8 s break + a segment + publication).
                var seen: [String: [UInt64: Listed]] = [:]
                var texts: [String: String] = [:]
                try await waitUntil("the CUE-IN in both renditions", timeout: .seconds(25), interval: .milliseconds(500)) {
                    for name in Self.names {
                        guard let (listed, text) = try await Self.listed(client, name) else { return false }
                        texts[name] = text
                        for entry in listed {
                            if let earlier = seen[name]?[entry.msn] {
                                #expect(earlier == entry, "\(name) msn \(entry.msn) changed: \(earlier) -> \(entry)")
                            }
                            seen[name, default: [:]][entry.msn] = entry
                        }
                    }
                    return Self.names.allSatisfy { name in
                        seen[name]?.values.contains { $0.cues.contains("#EXT-X-CUE-IN") } ?? false
                    }
                }
                let hi = try #require(seen["hi"])
                let lo = try #require(seen["lo"])
                for msn in Set(hi.keys).intersection(lo.keys) {
                    #expect(hi[msn]?.cues == lo[msn]?.cues, "msn \(msn): hi \(hi[msn]!.cues), lo \(lo[msn]!.cues)")
                }
                let ordered = hi.values.sorted { $0.msn < $1.msn }
                let out = try #require(ordered.firstIndex { $0.cues.contains("#EXT-X-CUE-OUT:8.000") }, "\(ordered)")
                let cueIn = try #require(ordered.firstIndex { $0.cues.contains("#EXT-X-CUE-IN") })
                // The CUE-OUT segment is the first starting at or after the splice: the one before starts earlier.
                #expect(ordered[out].start >= splice - 0.010, "CUE-OUT at \(ordered[out].start), splice \(splice)")
                if out > 0 { #expect(ordered[out - 1].start < splice - 0.010) }
                #expect(ordered[cueIn].start >= splice + 8 - 0.010)
                #expect(ordered[cueIn - 1].start < splice + 8 - 0.010)
                // EXT-OATCLS-SCTE35 carries the SCTE35-OUT section.
                let oatcls = try #require(ordered[out].cues.first { $0.hasPrefix("#EXT-OATCLS-SCTE35:") })
                let section = try #require(Data(base64Encoded: String(oatcls.dropFirst("#EXT-OATCLS-SCTE35:".count))))
                #expect(section.map { String(format: "%02X", $0) }.joined() == outHex.uppercased())
                for entry in ordered[(out + 1)..<cueIn] {
                    let elapsedMilliseconds = Int64((entry.start * 1000).rounded()) - spliceMilliseconds
                    let elapsed = String(format: "%.3f", Double(elapsedMilliseconds) / 1000)
                    #expect(
                        entry.cues == ["#EXT-X-CUE-OUT-CONT:ElapsedTime=\(elapsed),Duration=8.000"],
                        "msn \(entry.msn): \(entry.cues)")
                }
                #expect(!(texts["hi"] ?? "").contains("#EXT-X-DATERANGE"), "cue mode shows the break by cue tags only")

                // The player read the live stream through the break.
                let status = await player.wait(timeout: .seconds(30))
                #expect(status == 0, "player status \(String(describing: status)): \(player.standardError)")
                let (duration, probeErrors) = try await FFmpeg.formatDuration(of: recording, in: origin.directory)
                #expect(abs(duration - 24) <= 1.5, "the player recorded \(duration) s")
                #expect(probeErrors.isEmpty, "ffprobe of the recording said: \(probeErrors)")
            }
        }
    }
}
