public import Persistence
import PostgresNIO
import Synchronization

/// The recordings: one row per recording (`hlsorigin_recordings`: the request as posted and resolved); a deletion
/// keeps the row as a tombstone (`deleted_at`) so that an origin that was away when it happened drops the recording
/// when it reads the list again. Tombstones older than 30 days are removed at the next deletion.
extension GroupDatabase: SharedRecordings {
    private static let columns = "id, channel, requested_start, requested_end, start_ms, end_ms, created_ms"

    public func create(
        _ manifest: RecordingManifest
    ) throws(SharedRecordingsUnavailable) -> (stored: RecordingManifest, created: Bool) {
        // One statement: the insert (or the take-over of a deleted recording's ID), else the row already there. The
        // outer SELECT sees the table as it was before the insert, so the two branches never both return a row.
        let rows = try recordingsCall("create recording '\(manifest.id)'") { [logger] connection in
            try await connection.query(
                """
                WITH stored AS (
                    INSERT INTO hlsorigin_recordings (\(unescaped: Self.columns))
                    VALUES (\(manifest.id), \(manifest.channel), \(manifest.requestedStart), \(manifest.requestedEnd),
                        \(manifest.startMilliseconds), \(manifest.endMilliseconds), \(manifest.createdMilliseconds))
                    ON CONFLICT (id) DO UPDATE SET channel = EXCLUDED.channel,
                        requested_start = EXCLUDED.requested_start, requested_end = EXCLUDED.requested_end,
                        start_ms = EXCLUDED.start_ms, end_ms = EXCLUDED.end_ms, created_ms = EXCLUDED.created_ms,
                        deleted_at = NULL, updated_at = now()
                    WHERE hlsorigin_recordings.deleted_at IS NOT NULL
                    RETURNING \(unescaped: Self.columns)
                )
                SELECT \(unescaped: Self.columns), true AS created FROM stored
                UNION ALL
                SELECT \(unescaped: Self.columns), false AS created FROM hlsorigin_recordings
                    WHERE id = \(manifest.id) AND NOT EXISTS (SELECT 1 FROM stored)
                """, logger: logger
            ).collect()
        }
        guard let row = rows.first, let stored = Self.manifest(row) else {
            throw SharedRecordingsUnavailable("the database returned no row for recording '\(manifest.id)'")
        }
        return (stored, row.makeRandomAccess()[data: "created"].bool ?? false)
    }

    public func delete(id: String, channel: String) throws(SharedRecordingsUnavailable) -> Bool {
        let rows = try recordingsCall("delete recording '\(id)'") { [logger] connection in
            let deleted = try await connection.query(
                """
                UPDATE hlsorigin_recordings SET deleted_at = now(), updated_at = now()
                WHERE id = \(id) AND channel = \(channel) AND deleted_at IS NULL RETURNING id
                """, logger: logger
            ).collect()
            try await connection.query(
                "DELETE FROM hlsorigin_recordings WHERE deleted_at < now() - interval '30 days'", logger: logger)
            return deleted
        }
        return !rows.isEmpty
    }

    public func list() throws(SharedRecordingsUnavailable) -> SharedRecordingList {
        let rows = try recordingsCall("list the recordings") { [logger] connection in
            try await connection.query(
                "SELECT \(unescaped: Self.columns), deleted_at IS NOT NULL AS deleted FROM hlsorigin_recordings",
                logger: logger
            ).collect()
        }
        var list = SharedRecordingList(recordings: [], deleted: [])
        for row in rows {
            guard let manifest = Self.manifest(row) else { continue }
            if row.makeRandomAccess()[data: "deleted"].bool == true {
                list.deleted.insert(manifest.id)
            } else {
                list.recordings.append(manifest)
            }
        }
        return list
    }

    private func recordingsCall<Value: Sendable>(
        _ what: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> Value
    ) throws(SharedRecordingsUnavailable) -> Value {
        do {
            return try writer.withLock { _ throws(GroupDatabaseError) in try run(what, body) }
        } catch {
            throw SharedRecordingsUnavailable("recordings database unavailable: \(error.message)")
        }
    }

    private static func manifest(_ row: PostgresRow) -> RecordingManifest? {
        let cells = row.makeRandomAccess()
        guard let id = cells[data: "id"].string, let channel = cells[data: "channel"].string,
            let requestedStart = cells[data: "requested_start"].string,
            let requestedEnd = cells[data: "requested_end"].string, let start = cells[data: "start_ms"].int64,
            let end = cells[data: "end_ms"].int64, let created = cells[data: "created_ms"].int64
        else { return nil }
        return RecordingManifest(
            id: id, channel: channel, requestedStart: requestedStart, requestedEnd: requestedEnd,
            startMilliseconds: start, endMilliseconds: end, createdMilliseconds: created)
    }
}
