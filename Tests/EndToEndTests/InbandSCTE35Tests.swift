import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEndRestarts {
    /// SCTE-35 from the pushed stream (docs/markers.md, "SCTE-35 from the stream"): a 20 s MPEG-TS with a standard
    /// SCTE-35 PID (stream_type 0x86, cues added by scripts/add-scte35-to-ts: a splice_insert out-point 7 s in with a
    /// 6 s break, its cue-in at 13 s) is pushed by ONE real `ffmpeg -copyts -re ... -map 0 -c copy -f hls -method PUT` as two
    /// renditions to two origins of a redundancy group. ffmpeg re-muxes the PID as stream_type 0x06 / PES 0xFC: both
    /// origins must read it, list the break as one date range whose SCTE35-OUT/IN are the injected sections and
    /// whose START-DATE is the splice mapped through the segment's PTS, identical in every playlist of both; threefive
    /// decodes the listed SCTE35-OUT back to the cue; the status reports the placement error (1 s: the splice is
    /// mid-segment).
    @Suite("End to end: SCTE-35 read from a real push", .tags(.endToEnd))
    struct InbandSCTE35Tests {
        static let adminToken = "e2e-admin-token"
        static let channel = "cued"
        static let renditions = ["hi", "lo"]
        static let configuration = """
            logLevel: info
            admin:
              token: \(adminToken)
            redundancy: { clockTolerance: 0.5 }
            ingest:
              autoCreate: true
              defaults:
                segmentDuration: 2
                window: { segments: 15 }
            channels: []
            """

        static func run(_ tool: String, _ arguments: [String], in directory: URL) async throws -> String {
            let output = try await ChildProcess.run(tool, arguments, in: directory, timeout: .seconds(60))
            guard output.status == 0 else {
                throw EndToEndError("\(tool) \(arguments.joined(separator: " ")): \(output.standardError)")
            }
            return output.standardOutput
        }

        static func python() -> String {
            OriginProcess.packageRoot.appendingPathComponent(".build/threefive-venv/bin/python").path
        }

        static func hex(_ value: UInt64, digits: Int) -> String {
            let text = String(value, radix: 16)
            return String(repeating: "0", count: max(0, digits - text.count)) + text
        }

        /// The EXT-X-DATERANGE lines of a playlist and its segments: URI, PDT (ms; carried forward from the last
        /// EXT-X-PROGRAM-DATE-TIME) and duration (ms).
        static func read(_ text: String) throws -> (
            dateRanges: [String], segments: [(uri: String, start: Int64, duration: Int64)]
        ) {
            let playlist = try MediaPlaylistText(text)
            var segments: [(uri: String, start: Int64, duration: Int64)] = []
            var next: Int64?
            for entry in playlist.entries {
                if let pdt = entry.programDateTime, let date = Self.date(pdt) {
                    next = Int64((date.timeIntervalSince1970 * 1000).rounded())
                }
                guard let start = next else { continue }
                let duration = Int64((entry.duration * 1000).rounded())
                segments.append((entry.uri, start, duration))
                next = start + duration
            }
            let ranges = text.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-DATERANGE:") }.map(String.init)
            return (ranges, segments)
        }

        static func date(_ text: String) -> Date? {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return formatter.date(from: text)
        }

        static func attribute(_ name: String, in tag: String) -> String? {
            for part in tag.dropFirst("#EXT-X-DATERANGE:".count).split(separator: ",") where part.hasPrefix(name + "=") {
                return String(part.dropFirst(name.count + 1)).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
            return nil
        }

        @Test("ffmpeg -c copy carries the cues; both origins list one identical break with the injected bytes")
        func pushedCuesBecomeIdenticalMarkers() async throws {
            let first = try await OriginProcess(configuration: Self.configuration, label: "scte-a")
            let second = try await OriginProcess(configuration: Self.configuration, label: "scte-b")
            defer {
                first.kill()
                second.kill()
            }
            let directory = first.directory
            let root = OriginProcess.packageRoot.path
            _ = try await Self.run(
                "ffmpeg",
                [
                    "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25", "-f", "lavfi",
                    "-i", "sine=frequency=440:sample_rate=48000", "-t", "20", "-c:v", "libx264", "-preset", "veryfast",
                    "-g", "50", "-keyint_min", "50", "-sc_threshold", "0", "-b:v", "200k", "-c:a", "aac", "-b:a",
                    "64k", "-ac", "2", "-f", "mpegts", "source.ts",
                ], in: directory)
            let script = root + "/scripts/add-scte35-to-ts"
            let base = try #require(
                UInt64(try await Self.run(script, ["--first-pts", "source.ts"], in: directory)
                    .trimmingCharacters(in: .whitespacesAndNewlines)))
            let eventId: UInt64 = 0x5A01
            let outPTS = base + 7 * 90_000
            let inPTS = base + 13 * 90_000
            // The cues, made by threefive (an independent encoder).
            let made = try await Self.run(
                Self.python(),
                [
                    "-c",
                    """
                    import threefive
                    from threefive.encode import mk_splice_insert
                    print(mk_splice_insert(\(eventId), pts=\(outPTS)/90000, duration=6.0, out=True).bites.hex())
                    print(mk_splice_insert(\(eventId), pts=\(inPTS)/90000, out=False).bites.hex())
                    """,
                ], in: directory)
            let sections = made.split(separator: "\n").map(String.init)
            try #require(sections.count == 2, "threefive printed \(made)")
            // Sent 2 s and 1 s ahead of their splices, as encoders do.
            _ = try await Self.run(script, ["source.ts", "cued.ts", "5.0:\(sections[0])", "12.0:\(sections[1])"], in: directory)

            // One ffmpeg, four HLS outputs (two renditions to each origin). Without -max_interleave_delta the sparse
            // SCTE-35 stream holds the muxer's interleaving queue until its next packet (or 10 s): segments would come
            // in bursts, ahead of the clock. Without -copyts and -muxdelay 0 -muxpreload 0 ffmpeg re-bases the media
            // timestamps (to start at 1.4 s, or +1.4 s with -copyts alone) but not the splice times inside the
            // sections, and every cue moves by that much (docs/markers.md).
            var arguments = ["-nostdin", "-v", "error", "-copyts", "-re", "-i", "cued.ts"]
            for port in [first.port, second.port] {
                for rendition in Self.renditions {
                    arguments += [
                        "-map", "0", "-c", "copy", "-muxdelay", "0", "-muxpreload", "0", "-max_interleave_delta", "500000",
                        "-f", "hls", "-hls_time", "2",
                        "-hls_list_size", "6", "-method", "PUT",
                        "http://127.0.0.1:\(port)/ingest/\(Self.channel)/\(rendition)/index.m3u8",
                    ]
                }
            }
            let push = try await ChildProcess.run("ffmpeg", arguments, in: directory, timeout: .seconds(40))
            #expect(push.status == 0, "ffmpeg: \(push.standardError)")

            let clients = [HTTPClient(port: first.port), HTTPClient(port: second.port)]
            var listed: [String: (dateRanges: [String], segments: [(uri: String, start: Int64, duration: Int64)])] = [:]
            try await waitUntil("the closed break in every playlist", timeout: .seconds(15), interval: .milliseconds(500)) {
                for (index, client) in clients.enumerated() {
                    for rendition in Self.renditions {
                        let response = try await client.get("/live/\(Self.channel)/\(rendition)/index.m3u8")
                        guard response.status == 200 else { return false }
                        listed["\(index)/\(rendition)"] = try Self.read(response.text)
                    }
                }
                return listed.values.allSatisfy { $0.dateRanges.contains { $0.contains("SCTE35-IN=") } }
            }
            let reference = try #require(listed["0/hi"])
            for (key, value) in listed {
                #expect(value.dateRanges == reference.dateRanges, "\(key): \(value.dateRanges) vs \(reference.dateRanges)")
            }
            try #require(reference.dateRanges.count == 1, "\(reference.dateRanges)")
            let tag = reference.dateRanges[0]
            #expect(Self.attribute("ID", in: tag) == "scte35-" + Self.hex(eventId, digits: 8) + "-" + Self.hex(outPTS, digits: 9))
            #expect(Self.attribute("SCTE35-OUT", in: tag)?.lowercased() == "0x" + sections[0])
            #expect(Self.attribute("SCTE35-IN", in: tag)?.lowercased() == "0x" + sections[1])
            #expect(Self.attribute("DURATION", in: tag) == "6")
            // START-DATE: the splice mapped through the segment that carried the cue: its PDT plus the splice PTS
            // minus its first PTS. That segment is found by its bytes.
            let start = try #require(Self.attribute("START-DATE", in: tag).flatMap(Self.date))
            let startMilliseconds = Int64((start.timeIntervalSince1970 * 1000).rounded())
            let outBytes = Data(stride(from: 0, to: sections[0].count, by: 2).map {
                UInt8(sections[0].dropFirst($0).prefix(2), radix: 16)!
            })
            var carrier: (start: Int64, pts: UInt64)?
            for segment in reference.segments {
                let response = try await clients[0].get("/live/\(Self.channel)/hi/\(segment.uri)")
                guard response.status == 200, Data(response.body).range(of: outBytes) != nil else { continue }
                let file = directory.appendingPathComponent("carrier.ts")
                try Data(response.body).write(to: file)
                let pts = try #require(
                    UInt64(try await Self.run(script, ["--first-pts", file.path], in: directory)
                        .trimmingCharacters(in: .whitespacesAndNewlines)))
                carrier = (segment.start, pts)
                break
            }
            let (carrierStart, carrierPTS) = try #require(carrier, "no listed segment carries the SCTE35-OUT section")
            let offset = (Int64(outPTS) - Int64(carrierPTS)) / 90
            #expect(startMilliseconds == carrierStart + offset, "\(tag) vs \(reference.segments)")
            #expect(offset == 3000, "the cue came in the segment of media 4-6 s, 3 s before the splice")
            print("inband SCTE-35 e2e: START-DATE \(startMilliseconds) = carrier PDT \(carrierStart) + \(offset) ms")

            // threefive reads the listed SCTE35-OUT back to the injected cue.
            let decoded = try await Self.run(
                Self.python(),
                [
                    "-c",
                    """
                    import sys, threefive
                    cue = threefive.Cue(sys.argv[1]); cue.decode(); c = cue.command
                    print(c.splice_event_id, c.out_of_network_indicator, round(c.pts_time * 90000), c.break_duration)
                    """,
                    try #require(Self.attribute("SCTE35-OUT", in: tag)),
                ], in: directory)
            #expect(decoded.trimmingCharacters(in: .whitespacesAndNewlines) == "\(eventId) True \(outPTS) 6.0")

            // The status: sections read (both renditions, both cues), placement error 1 s (splice mid-segment).
            let status = try await clients[0].get(
                "/admin/channels/\(Self.channel)", headers: [("Authorization", "Bearer \(Self.adminToken)")])
            let object = try #require(try JSONSerialization.jsonObject(with: Data(status.body)) as? [String: Any])
            let cues = try #require(object["inbandCues"] as? [String: Any], "\(status.text)")
            #expect(cues["sectionsRead"] as? Int == 4, "\(cues)")
            #expect(cues["markersCreated"] as? Int == 1, "\(cues)")
            #expect(cues["markersClosed"] as? Int == 1, "\(cues)")
            let placement = try #require(cues["placement"] as? [String: Any], "\(cues)")
            #expect(placement["lastErrorMilliseconds"] as? Int == 1000, "\(placement)")
            print("inband SCTE-35 e2e: status inbandCues \(cues)")
        }
    }
}
