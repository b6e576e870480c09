import Foundation
import Glibc
import HLSPlaylist
import Synchronization
import TestSupport
import Testing

extension EndToEndRestarts {
    /// Recordings shared through PostgreSQL (docs/redundancy.md, "Recordings"): two origins of a redundancy group
    /// with the same `database.url` (a throwaway cluster made by the test), fed by one real ffmpeg through its tee
    /// muxer. A recording posted to one is made by both, each from its own store, with the same VOD playlists and
    /// bytes; a DELETE on the other deletes it on both; with PostgreSQL stopped, posts answer 503 with the reason and
    /// the known recordings keep playing.
    @Suite("End to end: recordings shared by two origins through PostgreSQL", .tags(.endToEnd))
    struct SharedRecordingTests {
        static let channel = RedundantOriginsTests.channel
        static let playlist = "/live/\(channel)/hi/index.m3u8"

        static func configuration(database: String) -> String {
            RedundantOriginsTests.configuration.replacingOccurrences(
                of: "channels: []", with: "database:\n  url: \(database)\nchannels: []")
        }

        @Test("posted to one origin, recorded by both with the same VOD playlist; deleted on the other; 503 while down")
        func recordingsAreSharedAndSurviveADatabaseOutage() async throws {
            let database = try await PostgresCluster(label: "recordings")
            let configuration = Self.configuration(database: database.url)
            let first = try await OriginProcess(configuration: configuration, label: "recordings-a")
            let second = try await OriginProcess(configuration: configuration, label: "recordings-b")
            let encoder = try RedundantOriginsTests.startTeePush(
                ports: [first.port, second.port], directory: first.directory)
            let restarted = Mutex<OriginProcess?>(nil)
            defer {
                encoder.signal(SIGKILL)
                first.kill()
                second.kill()
                restarted.withLock { $0?.kill() }
            }
            do {
                try await Self.scenario(
                    database: database, a: HTTPClient(port: first.port), b: HTTPClient(port: second.port)
                ) {
                    // kill -9 of B right after an acknowledged post, restarted on its port and data directory.
                    second.kill()
                    let again = try await OriginProcess(
                        configuration: configuration, label: "recordings-b2", port: second.port,
                        restarting: second.directory)
                    restarted.withLock { $0 = again }
                }
            } catch {
                await database.remove()
                throw EndToEndError(
                    "\(error)\n--- origin A ---\n\(first.logTail())\n--- origin B ---\n\(second.logTail())\n"
                        + "--- B restarted ---\n\(restarted.withLock { $0?.logTail() } ?? "")")
            }
            await database.remove()
        }

        static func scenario(
            database: PostgresCluster, a: HTTPClient, b: HTTPClient, restartB: () async throws -> Void
        ) async throws {
            let recordings = "/admin/channels/\(channel)/recordings"
            func post(_ client: HTTPClient, _ id: String, _ start: Int64, _ end: Int64) async throws -> RawHTTPResponse
            {
                let body =
                    #"{"id": "\#(id)", "start": "\#(RecordingTests.iso(start))", "end": "\#(RecordingTests.iso(end))"}"#
                return try await client.request(
                    "POST", recordings, headers: [("Content-Type", "application/json")], body: Array(body.utf8))
            }
            func ids(_ client: HTTPClient) async throws -> [String] {
                let response = try await client.get(recordings)
                let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
                return ((object?["recordings"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String }
            }
            /// Seconds until `client` lists exactly `expected` (nil: not within `seconds`).
            func listed(_ client: HTTPClient, _ expected: [String], within seconds: Double) async throws -> Double? {
                let start = ContinuousClock.now
                while ContinuousClock.now - start < .milliseconds(Int(seconds * 1000)) {
                    if try await ids(client) == expected {
                        let elapsed = ContinuousClock.now - start
                        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                    }
                    try await Task.sleep(for: .milliseconds(50))
                }
                return nil
            }
            func finished(_ client: HTTPClient, _ id: String) async throws -> Bool {
                let deadline = ContinuousClock.now + .seconds(30)
                while ContinuousClock.now < deadline {
                    let response = try await client.get("\(recordings)/\(id)")
                    let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
                    if object?["state"] as? String == "finished" { return true }
                    try await Task.sleep(for: .milliseconds(500))
                }
                return false
            }
            // Both origins have 3 segments; the recording: the last 4 s before the live edge and the next 2 s.
            let edgeA = try await liveEdge(a)
            _ = try await liveEdge(b)
            let created = try await post(a, "clip", edgeA - 4000, edgeA + 2000)
            #expect(created.status == 201, "POST to A: \(created.status) \(created.text)")
            let onB = try await listed(b, ["clip"], within: 2)
            #expect(onB != nil && onB! <= 1.0, "B listed A's recording after \(onB.map { "\($0) s" } ?? "never")")
            let repeated = try await post(b, "clip", edgeA - 4000, edgeA + 2000)
            #expect(repeated.status == 200, "the same POST to B: \(repeated.status) \(repeated.text)")
            let conflicting = try await post(b, "clip", edgeA - 4000, edgeA + 4000)
            #expect(conflicting.status == 409, "another recording with its ID on B: \(conflicting.status)")

            // Both finish it from their own store, with the same playlists.
            #expect(try await finished(a, "clip"), "A did not finish the recording")
            #expect(try await finished(b, "clip"), "B did not finish the recording")
            var compared: [String] = []
            for path in ["/vod/clip/index.m3u8", "/vod/clip/hi/index.m3u8"] {
                let onA = try await a.get(path)
                let onB = try await b.get(path)
                #expect(onA.status == 200 && onB.status == 200, "\(path): A \(onA.status), B \(onB.status)")
                #expect(onA.text == onB.text, "\(path) differs:\nA:\n\(onA.text)\nB:\n\(onB.text)")
                let entries = onA.text.split(separator: "\n").filter { $0.hasPrefix("#EXTINF") }.count
                compared.append(entries == 0 ? path : "\(path) with \(entries) segments")
            }
            let vod = try MediaPlaylist.parse(try await a.get("/vod/clip/hi/index.m3u8").text)
            #expect(vod.segments.count >= 3, "the recording lists \(vod.segments.count) segments")
            if let segment = vod.segments.first {
                let uri = "/vod/clip/hi/\(segment.uri)"
                let (bytesA, bytesB) = (try await a.get(uri), try await b.get(uri))
                #expect(bytesA.status == 200 && bytesA.body == bytesB.body, "\(uri): not the same bytes on A and B")
            }

            // DELETE on B: gone on both.
            let deleted = try await b.request("DELETE", "\(recordings)/clip")
            #expect(deleted.status == 204, "DELETE on B: \(deleted.status) \(deleted.text)")
            let goneOnA = try await listed(a, [], within: 2)
            #expect(goneOnA != nil, "A still lists the recording deleted on B")
            #expect(try await a.get("/vod/clip/index.m3u8").status == 404)

            // PostgreSQL down: posts and deletions answer 503 with the reason; what is known stays and finishes.
            let edge = try await liveEdge(a)
            #expect(try await post(a, "kept", edge - 4000, edge + 2000).status == 201)
            _ = try await listed(b, ["kept"], within: 2)
            await database.stop()
            let refused = try await post(b, "new", edge - 4000, edge + 2000)
            #expect(refused.status == 503, "POST with the database down: \(refused.status) \(refused.text)")
            #expect(refused.text.contains("database"), "no reason given: \(refused.text)")
            #expect(refused.header("Retry-After") != nil)
            let refusedDeletion = try await a.request("DELETE", "\(recordings)/kept")
            #expect(refusedDeletion.status == 503, "DELETE with the database down: \(refusedDeletion.status)")
            #expect(try await finished(b, "kept"), "B did not finish the recording while the database was down")
            #expect(try await b.get("/vod/kept/hi/index.m3u8").status == 200)
            #expect(try await ids(b) == ["kept"])

            // Back: posts work again once the origin reconnects.
            try await database.start()
            var accepted: RawHTTPResponse?
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                let response = try await post(b, "after", edge - 4000, edge + 2000)
                if response.status == 201 {
                    accepted = response
                    break
                }
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(accepted != nil, "no POST accepted within 10 s of the database's return")
            let afterOnA = try await listed(a, ["after", "kept"], within: 2)
            let listedOnA = try await ids(a)
            #expect(afterOnA != nil, "A does not list the recording posted to B after the outage: \(listedOnA)")

            // Acknowledged means durable: B killed (-9) right after it acknowledged a post lists it when it is back.
            #expect(try await post(b, "last", edge - 4000, edge + 2000).status == 201)
            try await restartB()
            let afterRestart = try await listed(b, ["after", "kept", "last"], within: 10)
            let listedOnB = try await ids(b)
            #expect(afterRestart != nil, "the restarted B lists \(listedOnB)")
            print(
                "shared recordings: posted to A, listed on B after \(String(format: "%.3f", onB ?? -1)) s; VOD "
                    + "playlists identical on A and B (\(compared.joined(separator: ", "))); DELETE on B gone "
                    + "on A after \(String(format: "%.3f", goneOnA ?? -1)) s; database down: POST \(refused.status) "
                    + "(\(refused.text.trimmingCharacters(in: .whitespacesAndNewlines))), DELETE "
                    + "\(refusedDeletion.status); back: POST \(accepted?.status ?? 0); after kill -9 of B every "
                    + "recording still listed")
        }

        /// The end of the newest segment of the channel's `hi` rendition (ms since the epoch), once it lists 3.
        static func liveEdge(_ client: HTTPClient) async throws -> Int64 {
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                let response = try await client.get(playlist)
                if response.status == 200, let playlist = try? MediaPlaylist.parse(response.text),
                    playlist.segments.count >= 3, let last = playlist.segments.last, let pdt = last.programDateTime
                {
                    return pdt.millisecondsSince1970 + Int64(last.duration * 1000)
                }
                try await Task.sleep(for: .milliseconds(500))
            }
            throw EndToEndError("no playlist with 3 segments within 30 s")
        }
    }
}
