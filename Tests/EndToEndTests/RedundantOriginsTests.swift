import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEnd {
    /// Two origins of a redundancy group (`redundancy:` configured on both) fed by ONE real ffmpeg whose `tee` muxer
    /// sends every segment of two renditions to both, one after the other, as an encoder feeding a redundant pair
    /// does. Every second for a minute both media playlists of each rendition are read and compared entry by entry
    /// for every MSN both list: MSN, URI, EXTINF, PDT, discontinuity sequence, GAP and DISCONTINUITY must be
    /// identical (docs/redundancy.md).
    @Suite("End to end: redundant origins publish identical playlists", .tags(.endToEnd))
    struct RedundantOriginsTests {
        static let channel = "pair"
        static let renditions = ["hi", "lo"]
        static let configuration = """
            logLevel: info
            redundancy: { clockTolerance: 0.5 }
            ingest:
              autoCreate: true
              defaults:
                segmentDuration: 2
                window: { segments: 6 }
            channels: []
            """

        /// ffmpeg encoding a test pattern and a tone once per rendition and pushing each rendition to every origin
        /// through the tee muxer (one HLS muxer per origin, fed the same packets).
        static func startTeePush(ports: [Int], directory: URL) throws -> ChildProcess {
            guard let ffmpeg = ChildProcess.locate("ffmpeg") else { throw EndToEndError("ffmpeg is not on the PATH") }
            var arguments = [
                "-nostdin", "-v", "error", "-re",
                "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25",
                "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
            ]
            for (rendition, size, bitrate) in [("hi", "640x360", "800k"), ("lo", "320x180", "300k")] {
                let outputs = ports.map { port in
                    "[f=hls:hls_time=2:hls_list_size=6:method=PUT:http_persistent=1]"
                        + "http://127.0.0.1:\(port)/ingest/\(channel)/\(rendition)/index.m3u8"
                }
                arguments += [
                    "-map", "0:v", "-map", "1:a",
                    "-c:v", "libx264", "-preset", "veryfast", "-profile:v", "main", "-pix_fmt", "yuv420p",
                    "-s", size, "-g", "50", "-keyint_min", "50", "-sc_threshold", "0",
                    "-b:v", bitrate, "-maxrate", bitrate, "-bufsize", bitrate,
                    "-c:a", "aac", "-b:a", "64k", "-ac", "2",
                    "-f", "tee", outputs.joined(separator: "|"),
                ]
            }
            return try ChildProcess(executable: ffmpeg, arguments: arguments, directory: directory, label: "tee")
        }

        /// One entry as both origins must publish it (the URI is relative, so it names the same resource on each).
        struct Published: Equatable, CustomStringConvertible {
            let uri: String
            let duration: Double
            let programDateTime: String?
            let discontinuitySequence: UInt64
            let gap: Bool
            let discontinuity: Bool
            var description: String {
                "\(uri) \(duration) \(programDateTime ?? "-") dsn \(discontinuitySequence)"
                    + "\(gap ? " GAP" : "")\(discontinuity ? " DISC" : "")"
            }
        }

        static func published(_ text: String) throws -> [UInt64: Published] {
            let playlist = try MediaPlaylistText(text)
            var sequence = playlist.discontinuitySequence
            var entries: [UInt64: Published] = [:]
            for entry in playlist.entries {
                if entry.discontinuity { sequence += 1 }
                entries[entry.msn] = Published(
                    uri: entry.uri, duration: entry.duration, programDateTime: entry.programDateTime,
                    discontinuitySequence: sequence, gap: entry.gap, discontinuity: entry.discontinuity)
            }
            return entries
        }

        @Test("one ffmpeg tee to two origins: every MSN both list is identical, every second for a minute")
        func twoOriginsFedByOneTeeListIdenticalEntries() async throws {
            let first = try await OriginProcess(configuration: Self.configuration, label: "pair-a")
            let second = try await OriginProcess(configuration: Self.configuration, label: "pair-b")
            let encoder = try Self.startTeePush(ports: [first.port, second.port], directory: first.directory)
            defer {
                encoder.signal(SIGKILL)
                first.kill()
                second.kill()
            }
            let clients = [HTTPClient(port: first.port), HTTPClient(port: second.port)]
            for client in clients {
                for rendition in Self.renditions {
                    let path = "/live/\(Self.channel)/\(rendition)/index.m3u8"
                    try await waitUntil("\(path) on port \(client.port)", timeout: .seconds(20)) {
                        (try? await client.get(path))?.status == 200
                    }
                }
            }
            var compared = 0
            var differences: [String] = []
            var msnsSeen = Set<UInt64>()
            for _ in 0..<60 {
                for rendition in Self.renditions {
                    let path = "/live/\(Self.channel)/\(rendition)/index.m3u8"
                    async let readA = clients[0].get(path)
                    async let readB = clients[1].get(path)
                    let (a, b) = try await (readA, readB)
                    guard a.status == 200, b.status == 200 else {
                        differences.append("\(path): \(a.status) / \(b.status)")
                        continue
                    }
                    let (entriesA, entriesB) = (try Self.published(a.text), try Self.published(b.text))
                    for msn in Set(entriesA.keys).intersection(entriesB.keys).sorted() {
                        compared += 1
                        msnsSeen.insert(msn)
                        if entriesA[msn] != entriesB[msn] {
                            differences.append("\(rendition) msn \(msn): \(entriesA[msn]!) | \(entriesB[msn]!)")
                        }
                    }
                }
                try await Task.sleep(for: .seconds(1))
            }
            #expect(encoder.isRunning, "ffmpeg exited: \(encoder.standardError)")
            #expect(
                differences.isEmpty,
                "\(differences.count) differences:\n\(differences.prefix(20).joined(separator: "\n"))")
            // A minute of 2 s segments: about 30 MSNs, each compared in both renditions on several reloads.
            #expect(msnsSeen.count >= 25, "only \(msnsSeen.count) MSNs listed by both")
            #expect(compared >= 500, "only \(compared) entries compared")
            print(
                "redundant pair: \(compared) entries compared over \(msnsSeen.count) MSNs, \(differences.count) differ")
        }
    }
}
