import Foundation
import TestSupport
import Testing

extension EndToEndRestarts {
    /// The pruning of the steering heartbeat table (docs/content-steering.md, "Health") in a real PostgreSQL: the
    /// origin's first heartbeat deletes the rows of origins that have not written theirs for a day, and keeps the rest.
    @Suite("End to end: steering heartbeat rows a day old are pruned", .tags(.endToEnd))
    struct SteeringHeartbeatPruneTests {
        @Test func theFirstHeartbeatDeletesRowsNotWrittenForADayAndKeepsTheOthers() async throws {
            let database = try await PostgresCluster(label: "prune")
            defer { Task { await database.remove() } }
            let psql = try PostgresCluster.program("psql")
            /// psql's output, or nil when it fails (PostgreSQL may still be starting when its port first accepts).
            func query(_ sql: String) async throws -> String? {
                let output = try await ChildProcess.run(
                    psql.path,
                    ["-h", "127.0.0.1", "-p", "\(database.port)", "-U", "hlsorigin", "-d", "postgres", "-At", "-c", sql],
                    in: database.directory, timeout: .seconds(20))
                return output.status == 0 ? String(decoding: output.standardOutputData, as: UTF8.self) : nil
            }
            // The table as the origin makes it, with an origin gone 25 hours ago and one quiet for 23.
            try await waitUntil("PostgreSQL to take the old rows", timeout: .seconds(15), interval: .milliseconds(200)) {
                try await query(
                    """
                    CREATE TABLE IF NOT EXISTS hlsorigin_origin_health (
                        origin text PRIMARY KEY, report text NOT NULL, beat_at timestamptz NOT NULL DEFAULT now());
                    INSERT INTO hlsorigin_origin_health VALUES
                        ('http://gone.invalid:8080', '{}', now() - interval '25 hours'),
                        ('http://quiet.invalid:8080', '{}', now() - interval '23 hours')
                    ON CONFLICT DO NOTHING;
                    """) != nil
            }
            let port = try OriginProcess.freePort()
            let own = "http://127.0.0.1:\(port)"
            let origin = try await OriginProcess(
                configuration: """
                    logLevel: info
                    database: {url: "\(database.url)"}
                    steering:
                      self: \(own)
                      pathways: [{id: a, uri: "\(own)", origins: ["\(own)"]}]
                    channels:
                      - {name: pr, source: test-source, segmentDuration: 1, renditions: [{name: 180p, profile: 180p}]}
                    """, label: "prune", port: port)
            defer { origin.kill() }
            // The first heartbeat prunes, then writes the origin's own row (one connection, in that order).
            let select = "SELECT origin FROM hlsorigin_origin_health ORDER BY origin"
            try await waitUntil("the origin's heartbeat row", timeout: .seconds(15), interval: .milliseconds(200)) {
                (try? await query(select))??.contains(own) == true
            }
            let rows = try #require(try await query(select)).split(separator: "\n").map(String.init)
            #expect(rows == [own, "http://quiet.invalid:8080"])
        }
    }
}
