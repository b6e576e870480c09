import Foundation
public import Markers
import PostgresNIO
import Synchronization

/// The marker books: one row per channel (`hlsorigin_marker_books`: the book as JSON and a version that grows with
/// every change); a change replaces a book only over the version it read.
extension GroupDatabase {
    /// A channel's book as stored, and the version that a change must name to replace it.
    public struct StoredBook: Sendable {
        public let book: MarkerBook
        public let version: Int64
    }

    /// The stored book of `channel`, nil if none was ever saved.
    public func loadBook(channel: String) throws(GroupDatabaseError) -> StoredBook? {
        let rows = try run("load the marker book of '\(channel)'") { [logger] connection in
            try await connection.query(
                "SELECT version, book FROM hlsorigin_marker_books WHERE channel = \(channel)",
                logger: logger
            ).collect()
        }
        guard let row = rows.first else { return nil }
        let cells = row.makeRandomAccess()
        guard let version = cells[data: "version"].int64, let text = cells[data: "book"].string else {
            throw GroupDatabaseError("the marker book of '\(channel)' in the database has no version or book")
        }
        do {
            return StoredBook(book: try JSONDecoder().decode(MarkerBook.self, from: Data(text.utf8)), version: version)
        } catch {
            throw GroupDatabaseError("the marker book of '\(channel)' in the database cannot be read: \(error)")
        }
    }

    /// Stores `book` as the new book of `channel` if the stored one is still `version` (nil: none stored yet).
    /// - Returns: the new version, or nil when another origin changed the book first (load it again and retry).
    public func saveBook(
        channel: String, book: MarkerBook, replacing version: Int64?
    ) throws(GroupDatabaseError) -> Int64? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let text: String
        do {
            text = String(decoding: try encoder.encode(book), as: UTF8.self)
        } catch {
            throw GroupDatabaseError("the marker book of '\(channel)' cannot be encoded: \(error)")
        }
        let rows = try writer.withLock { _ throws(GroupDatabaseError) in
            try run("save the marker book of '\(channel)'") { [logger] connection in
                if let version {
                    return try await connection.query(
                        """
                        UPDATE hlsorigin_marker_books SET version = version + 1, book = \(text), updated_at = now()
                        WHERE channel = \(channel) AND version = \(version) RETURNING version
                        """, logger: logger
                    ).collect()
                }
                return try await connection.query(
                    """
                    INSERT INTO hlsorigin_marker_books (channel, version, book) VALUES (\(channel), 1, \(text))
                    ON CONFLICT (channel) DO NOTHING RETURNING version
                    """, logger: logger
                ).collect()
            }
        }
        return rows.first?.makeRandomAccess()[data: "version"].int64
    }
}

extension GroupDatabase: SharedMarkerBooks {
    public func load(channel: String) throws(MarkerError) -> SharedMarkerBook? {
        do {
            let stored = try loadBook(channel: channel)
            return stored.map { SharedMarkerBook(book: $0.book, version: $0.version) }
        } catch {
            throw MarkerError(.unavailable, field: nil, "marker database unavailable: \(error.message)")
        }
    }

    public func save(channel: String, book: MarkerBook, replacing version: Int64?) throws(MarkerError) -> Int64? {
        do {
            return try saveBook(channel: channel, book: book, replacing: version)
        } catch {
            throw MarkerError(.unavailable, field: nil, "marker database unavailable: \(error.message)")
        }
    }
}
