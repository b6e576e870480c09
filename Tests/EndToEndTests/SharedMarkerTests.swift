import Foundation
import Glibc
import TestSupport
import Testing

extension EndToEndRestarts {
    /// Markers shared through PostgreSQL (docs/redundancy.md): two origins configured with the same `database.url`
    /// (a throwaway cluster made by the test with Debian's PostgreSQL) and the same test-source channel. A marker
    /// posted to one appears identically on the other, a PATCH to the other closes it on both; with PostgreSQL
    /// stopped, playlists keep the markers known and posts answer 503 with the reason; once it is back, posts work
    /// again and nothing acknowledged was lost, also across a kill -9 of an origin.
    @Suite("End to end: markers shared by two origins through PostgreSQL", .tags(.endToEnd))
    struct SharedMarkerTests {
        static let channel = "demo"
        static let playlist = "/live/demo/360p/index.m3u8"

        static func configuration(database: String) -> String {
            """
            logLevel: info
            database:
              url: \(database)
            channels:
              - name: \(channel)
                source: test-source
                segmentDuration: 2
                window: { segments: 6 }
                renditions:
                  - { name: 360p, profile: 360p }
            """
        }

        @Test("a marker posted to one origin appears on the other; PostgreSQL down: 503, markers kept; back: no loss")
        func markersAreSharedAndSurviveADatabaseOutage() async throws {
            let database = try await PostgresCluster(label: "markers")
            let configuration = Self.configuration(database: database.url)
            let first = try await OriginProcess(configuration: configuration, label: "shared-a")
            let second = try await OriginProcess(configuration: configuration, label: "shared-b")
            var restarted: OriginProcess?
            defer {
                first.kill()
                second.kill()
                restarted?.kill()
            }
            do {
                try await Self.scenario(database: database, first: first, second: second) { restarted = $0 }
            } catch {
                await database.remove()
                throw EndToEndError(
                    "\(error)\n--- origin A ---\n\(first.logTail())\n--- origin B ---\n\(second.logTail())\n"
                        + "--- A restarted ---\n\(restarted?.logTail() ?? "")")
            }
            await database.remove()
        }

        static func scenario(
            database: PostgresCluster, first: OriginProcess, second: OriginProcess,
            restarted: (OriginProcess) -> Void
        ) async throws {
            let a = HTTPClient(port: first.port)
            let b = HTTPClient(port: second.port)
            let path = "/admin/channels/\(channel)/dateranges"
            func post(_ client: HTTPClient, _ id: String) async throws -> RawHTTPResponse {
                let body = """
                    {"id": "\(id)", "class": "com.example.ad", "plannedDuration": 30, "scte35": "out", \
                    "clientAttributes": {"X-AD-ID": "\(id)"}}
                    """
                return try await client.request(
                    "POST", path, headers: [("Content-Type", "application/json")], body: Array(body.utf8))
            }
            func dateRanges(_ client: HTTPClient) async throws -> [String] {
                let response = try await client.get(playlist)
                guard response.status == 200 else { throw EndToEndError("\(playlist): \(response.status)") }
                return response.text.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-DATERANGE:") }.map(
                    String.init)
            }
            /// Waits up to `seconds` for `client`'s playlist to show a DATERANGE line containing `needle`.
            func shown(
                _ client: HTTPClient, _ needle: String, within seconds: Double
            ) async throws -> (Double, [String])? {
                let start = ContinuousClock.now
                while ContinuousClock.now - start < .milliseconds(Int(seconds * 1000)) {
                    let tags = try await dateRanges(client)
                    if tags.contains(where: { $0.contains(needle) }) {
                        let elapsed = ContinuousClock.now - start
                        return (
                            Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, tags
                        )
                    }
                    try await Task.sleep(for: .milliseconds(50))
                }
                return nil
            }
            // Both origins have a window first.
            for client in [a, b] {
                try await waitUntil("a playlist", timeout: .seconds(15), interval: .milliseconds(200)) {
                    (try? await client.get(playlist).status) == 200
                }
            }

            // Posted to A: on B within a second, the same tag.
            let posted = try await post(a, "ad-1")
            #expect(posted.status == 201, "POST to A: \(posted.status) \(posted.text)")
            // A marker starting now is listed once the slot holding its start is published: up to a segment (2 s)
            // and the ingest loop's tick later, more on a loaded machine.
            let onA = try #require(try await shown(a, "ad-1", within: 4), "A does not show its own marker")
            let onB = try #require(try await shown(b, "ad-1", within: 1.5), "B did not show A's marker")
            #expect(onB.0 <= 1.0, "B showed the marker after \(onB.0) s")
            let tagA = onA.1.first { $0.contains("ad-1") }
            #expect(tagA == onB.1.first { $0.contains("ad-1") }, "the tags differ:\nA: \(onA.1)\nB: \(onB.1)")
            // The same request to B is an idempotent repeat (the book is shared): 200, not a second marker.
            let repeated = try await post(b, "ad-1")
            #expect(repeated.status == 200, "the repeat on B: \(repeated.status) \(repeated.text)")

            // PATCH on B closes it on A too.
            let patch = try await b.request(
                "PATCH", "\(path)/ad-1", headers: [("Content-Type", "application/json")],
                body: Array(#"{"duration": 12}"#.utf8))
            #expect(patch.status == 200, "PATCH on B: \(patch.status) \(patch.text)")
            let closed = try await shown(a, "DURATION=12", within: 1.5)
            let afterPatch = try await dateRanges(a)
            #expect(closed != nil, "A did not show the PATCH made on B: \(afterPatch)")

            // PostgreSQL down: playlists keep the markers, posts answer 503 with the reason.
            await database.stop()
            let during = try await dateRanges(b)
            #expect(during.contains { $0.contains("ad-1") }, "B lost the marker while the database is down: \(during)")
            let refused = try await post(a, "ad-2")
            #expect(refused.status == 503, "POST with the database down: \(refused.status) \(refused.text)")
            #expect(refused.text.contains("database"), "no reason given: \(refused.text)")
            #expect(refused.header("Retry-After") != nil)
            let metrics = try await a.get("/metrics").text
            #expect(metrics.contains("hlsorigin_database_up 0"), "metrics do not say the database is down")

            // Back: posts work again (after the reconnect), and appear on both.
            try await database.start()
            var accepted: RawHTTPResponse?
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                let response = try await post(a, "ad-3")
                if response.status == 201 {
                    accepted = response
                    break
                }
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(accepted != nil, "no POST accepted within 10 s of the database's return")
            #expect(try await shown(b, "ad-3", within: 2) != nil, "B did not show the post made after the outage")

            // kill -9 of A right after an acknowledged post: the restarted A shows every marker.
            let last = try await post(a, "ad-4")
            #expect(last.status == 201, "\(last.status) \(last.text)")
            first.kill()
            let again = try await OriginProcess(
                configuration: configuration(database: database.url), label: "shared-a2", port: first.port,
                restarting: first.directory)
            restarted(again)
            for id in ["ad-1", "ad-3", "ad-4"] {
                #expect(try await shown(a, id, within: 10) != nil, "the restarted A lost \(id)")
            }
            print(
                "shared markers: posted to A, shown on B after \(String(format: "%.3f", onB.0)) s; PATCH on B seen "
                    + "on A after \(closed.map { String(format: "%.3f", $0.0) } ?? "never") s; database down: POST "
                    + "\(refused.status) (\(refused.text.trimmingCharacters(in: .whitespacesAndNewlines))); back: "
                    + "POST \(accepted?.status ?? 0); after kill -9 every marker still listed")
        }
    }
}
