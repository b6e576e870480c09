import Foundation
import Logging
import Markers
import Persistence
import Synchronization

/// One channel's marker book behind locks, with its journal: every change is on disk before it is visible or
/// acknowledged.
///
/// Two locks: `writer` serialises changes (held while the journal is written and fsynced), `visible` holds the book
/// the renderer reads and is only held to copy or swap it, so ingest never waits for a disk write. The lock order
/// of the core is written down at `Channel.state`.
public final class MarkerStore: Sendable {
    /// The journal, nil when markers are kept in memory only (no data directory).
    public let journal: MarkerJournal?
    private let writer: Mutex<MarkerBook>
    private let visible: Mutex<MarkerBook>
    /// The last journal write failure, shown in the channel status.
    private let failure = Mutex<String?>(nil)
    private let logger: Logger

    /// A store starting from `book`.
    /// - Parameters:
    ///   - book: markers loaded from the journal (or an empty book).
    ///   - journal: where changes are written, nil for memory only.
    public init(book: MarkerBook = MarkerBook(), journal: MarkerJournal? = nil, logger: Logger) {
        self.journal = journal
        self.writer = Mutex(book)
        self.visible = Mutex(book)
        self.logger = logger
    }

    /// Opens the journal of `channel` under `dataDirectory` and loads it. A journal that cannot be read is moved
    /// aside (`.unreadable-{random}`) with an error in the log, and the channel starts with no markers.
    public static func open(channel: String, dataDirectory: String?, logger: Logger) -> MarkerStore {
        guard let dataDirectory else { return MarkerStore(logger: logger) }
        let journal = MarkerJournal(dataDirectory: dataDirectory, channel: channel)
        do {
            let book = try journal.load() ?? MarkerBook()
            if !book.markers.isEmpty {
                logger.info(
                    "markers restored from the journal",
                    metadata: ["hls.channel": "\(channel)", "hls.markers": "\(book.markers.count)"])
            }
            return MarkerStore(book: book, journal: journal, logger: logger)
        } catch {
            let aside = journal.path + ".unreadable-" + String(UInt32.random(in: .min ... .max), radix: 36)
            try? FileManager.default.moveItem(atPath: journal.path, toPath: aside)
            logger.error(
                "marker journal unreadable: moved aside, channel starts without markers",
                metadata: ["hls.channel": "\(channel)", "error": "\(error)", "path": "\(aside)"])
            return MarkerStore(journal: journal, logger: logger)
        }
    }

    /// The last failed journal write, if any (shown in the channel status).
    public var writeFailure: String? { failure.withLock { $0 } }

    /// The book as the playlists show it.
    public var book: MarkerBook { visible.withLock { $0 } }

    /// Applies a change to the book; when it changed anything, journals the new book before making it visible.
    /// - Returns: the change's result and whether the book changed.
    func change<Result>(
        _ body: (inout MarkerBook) throws(MarkerError) -> (Result, changed: Bool)
    )
        throws(MarkerError) -> (Result, changed: Bool)
    {
        try writer.withLock { current throws(MarkerError) -> (Result, changed: Bool) in
            var next = current
            let (result, changed) = try body(&next)
            guard changed else { return (result, false) }
            if let journal {
                do {
                    try journal.save(next)
                } catch {
                    // Like the state journal: reported to the caller, logged, shown in the channel status.
                    failure.withLock { $0 = "marker journal write failed: \(error)" }
                    logger.error("marker journal write failed", metadata: ["error": "\(error)"])
                    throw MarkerError(.notPersisted, field: nil, "the marker could not be persisted: \(error)")
                }
            }
            current = next
            visible.withLock { $0 = next }
            return (result, true)
        }
    }
}
