import Logging
import PostgresNIO
import Synchronization

/// Where the steering monitor writes its heartbeat and reads the group's (`GroupDatabase`; a fake in tests).
public protocol HeartbeatStore: Sendable {
    /// Writes this origin's heartbeat (nil origin: none) and reads every origin's row with its age; `prune` deletes
    /// the rows not written for a day first.
    func beat(origin: String?, report: String?, prune: Bool) async throws -> [GroupDatabase.Heartbeat]
}

extension GroupDatabase: HeartbeatStore {}

/// Heartbeats for Content Steering (docs/content-steering.md, "Health"): one row per origin
/// (`hlsorigin_origin_health`) holding its own health report, written every second by the origin's steering monitor,
/// so that an origin that cannot reach a peer over HTTP still sees whether the peer is alive. Ages are measured by the
/// database's clock (`now() - beat_at`), so the origins' clocks need not agree for this.
extension GroupDatabase {
    /// One origin's heartbeat row.
    public struct Heartbeat: Sendable, Hashable {
        /// The origin's base URL (`steering.self`).
        public var origin: String
        /// Its health report (JSON, `OriginHealthReport`).
        public var report: String
        /// Milliseconds since it was written, by the database's clock.
        public var ageMilliseconds: Int64

        public init(origin: String, report: String, ageMilliseconds: Int64) {
            self.origin = origin
            self.report = report
            self.ageMilliseconds = ageMilliseconds
        }
    }

    static let heartbeatTable = """
        CREATE TABLE IF NOT EXISTS hlsorigin_origin_health (
            origin text PRIMARY KEY,
            report text NOT NULL,
            beat_at timestamptz NOT NULL DEFAULT now()
        )
        """

    /// Writes this origin's heartbeat (its report, now by the database's clock) and reads every origin's row with
    /// its age. Async on the pool: call it from a task (the steering monitor's loop), never an HTTP thread. On a
    /// failure the schema is made again at the next call (the table may have been dropped or the database replaced).
    /// - Parameters:
    ///   - origin: this origin's name (`steering.self`); nil: nothing is written, the rows are only read.
    ///   - prune: delete the rows not written for a day first (origins gone for good).
    public func beat(origin: String?, report: String?, prune: Bool = false) async throws -> [Heartbeat] {
        do {
            return try await beatOnce(origin: origin, report: report, prune: prune)
        } catch {
            schemaReady.store(false, ordering: .relaxed)
            throw error
        }
    }

    private func beatOnce(origin: String?, report: String?, prune: Bool) async throws -> [Heartbeat] {
        try await ensureSchema()
        return try await client.withConnection { [logger] connection in
            if prune {
                try await connection.query(
                    "DELETE FROM hlsorigin_origin_health WHERE beat_at < now() - interval '1 day'", logger: logger)
            }
            if let origin, let report {
                try await connection.query(
                    """
                    INSERT INTO hlsorigin_origin_health (origin, report, beat_at) VALUES (\(origin), \(report), now())
                    ON CONFLICT (origin) DO UPDATE SET report = EXCLUDED.report, beat_at = now()
                    """, logger: logger)
            }
            let rows = try await connection.query(
                """
                SELECT origin, report, (extract(epoch FROM (now() - beat_at)) * 1000)::bigint AS age
                FROM hlsorigin_origin_health
                """, logger: logger
            ).collect()
            return rows.compactMap { row -> Heartbeat? in
                let columns = row.makeRandomAccess()
                guard let origin = columns[data: "origin"].string, let report = columns[data: "report"].string,
                    let age = columns[data: "age"].int64
                else { return nil }
                return Heartbeat(origin: origin, report: report, ageMilliseconds: age)
            }
        }
    }
}
