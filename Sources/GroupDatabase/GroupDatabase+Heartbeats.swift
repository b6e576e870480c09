import Logging
import PostgresNIO

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
    }

    static let heartbeatTable = """
        CREATE TABLE IF NOT EXISTS hlsorigin_origin_health (
            origin text PRIMARY KEY,
            report text NOT NULL,
            beat_at timestamptz NOT NULL DEFAULT now()
        )
        """

    /// Writes this origin's heartbeat (its report, now by the database's clock) and reads every origin's row with
    /// its age. Async on the pool: call it from a task (the steering monitor's loop), never an HTTP thread.
    public func beat(origin: String, report: String) async throws -> [Heartbeat] {
        try await ensureSchema()
        return try await client.withConnection { [logger] connection in
            try await connection.query(
                """
                INSERT INTO hlsorigin_origin_health (origin, report, beat_at) VALUES (\(origin), \(report), now())
                ON CONFLICT (origin) DO UPDATE SET report = EXCLUDED.report, beat_at = now()
                """, logger: logger)
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
