import Foundation
public import Logging
public import Markers
public import Persistence
import SharedBytes
import Synchronization

/// One channel's marker book behind locks, with its journal: every change is on disk before it is visible or
/// acknowledged. With shared books (`SharedMarkerBooks`: a database the origins of a group share), every change is
/// made on the stored book as it is now and stored there before it is visible or acknowledged; the journal then only
/// keeps the last book known, so that a restart while the database is down still shows the markers.
///
/// Two locks: `writer` serialises changes (held while the journal is written and fsynced), `visible` holds the book
/// the renderer reads and is only held to copy or swap it, so ingest never waits for a disk write. The lock order
/// of the core is written down at `Channel.state`.
public final class MarkerStore: Sendable {
    /// The journal, nil when markers are kept in memory only (no data directory).
    public let journal: MarkerJournal?
    /// The shared books, nil when this origin's journal is the only copy.
    public let shared: (any SharedMarkerBooks)?
    /// The channel (the shared books' key).
    let channel: String
    private let writer: RankedMutex<MarkerBook>
    /// The version of the shared book that `writer` holds (nil: none stored yet, or no shared books).
    private let sharedVersion = Mutex<Int64?>(nil)
    private let visible: RankedMutex<MarkerBook>
    /// The last journal write failure, shown in the channel status.
    private let failure = Mutex<String?>(nil)
    private let logger: Logger

    /// A store starting from `book`.
    /// - Parameters:
    ///   - book: markers loaded from the journal (or an empty book).
    ///   - journal: where changes are written, nil for memory only.
    ///   - shared: the group's shared books, if configured; `channel` is their key.
    public init(
        book: MarkerBook = MarkerBook(), journal: MarkerJournal? = nil, shared: (any SharedMarkerBooks)? = nil,
        channel: String = "", logger: Logger
    ) {
        self.journal = journal
        self.shared = shared
        self.channel = channel
        self.writer = RankedMutex(book, rank: .markerWriter)
        self.visible = RankedMutex(book, rank: .markerVisible)
        self.logger = logger
    }

    /// Opens the journal of `channel` under `dataDirectory` and loads it. A journal that cannot be read is moved
    /// aside (`.unreadable-{random}`) with an error in the log, and the channel starts with no markers.
    /// With `shared` books, the journal's book is only where the store starts: `refresh()` reads the shared one.
    public static func open(
        channel: String, dataDirectory: String?, shared: (any SharedMarkerBooks)? = nil, logger: Logger
    ) -> MarkerStore {
        guard let dataDirectory else { return MarkerStore(shared: shared, channel: channel, logger: logger) }
        let journal = MarkerJournal(dataDirectory: dataDirectory, channel: channel)
        do {
            let book = try journal.load() ?? MarkerBook()
            if !book.markers.isEmpty {
                logger.info(
                    "markers restored from the journal",
                    metadata: ["hls.channel": "\(channel)", "hls.markers": "\(book.markers.count)"])
            }
            return MarkerStore(book: book, journal: journal, shared: shared, channel: channel, logger: logger)
        } catch {
            let aside = journal.path + ".unreadable-" + String(UInt32.random(in: .min ... .max), radix: 36)
            try? FileManager.default.moveItem(atPath: journal.path, toPath: aside)
            logger.error(
                "marker journal unreadable: moved aside, channel starts without markers",
                metadata: ["hls.channel": "\(channel)", "error": "\(error)", "path": "\(aside)"])
            return MarkerStore(journal: journal, shared: shared, channel: channel, logger: logger)
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
        if let shared { return try changeShared(shared, body) }
        return try writer.withLock { current throws(MarkerError) -> (Result, changed: Bool) in
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

    /// Most attempts at a change while other origins keep changing the same book.
    static let sharedAttempts = 4

    /// A change made on the shared book as stored now (so a PATCH here sees a POST made on another origin), stored
    /// there only if no other origin changed it meanwhile (else read again and retried), then made visible.
    private func changeShared<Result>(
        _ shared: any SharedMarkerBooks, _ body: (inout MarkerBook) throws(MarkerError) -> (Result, changed: Bool)
    ) throws(MarkerError) -> (Result, changed: Bool) {
        do {
            // Read and stored again while other origins change the book first.
            return try writer.withLock { current throws(MarkerError) -> (Result, changed: Bool) in
                for _ in 0..<Self.sharedAttempts {
                    let stored = try shared.load(channel: channel)
                    var next = stored?.book ?? MarkerBook()
                    let (result, changed) = try body(&next)
                    guard changed else {
                        if let stored { adopt(stored, into: &current) }
                        return (result, false)
                    }
                    guard let version = try shared.save(channel: channel, book: next, replacing: stored?.version)
                    else {
                        continue  // another origin changed the book first: read it again
                    }
                    adopt(SharedMarkerBook(book: next, version: version), into: &current)
                    return (result, true)
                }
                throw MarkerError(
                    .unavailable, field: nil,
                    "the marker book of '\(channel)' kept changing on other origins: try again")
            }
        } catch  where error.reason == .unavailable {
            failure.withLock { $0 = error.message }
            logger.error("marker change refused: shared marker books unavailable", metadata: ["error": "\(error)"])
            throw error
        }
    }

    /// Reads the shared book again (another origin changed it, or the database came back) and shows it if it is
    /// newer than the one shown. Nothing changes while the database cannot be reached: the markers known stay, and
    /// the read is tried again after 0.5 s, 1 s, 2 s ... (at most `retryCeiling` apart) until one succeeds or a newer
    /// refresh starts, so a change announced while the read failed is not missed until the next announcement.
    /// - Parameter laterChange: called when a retried read changed the visible book (the caller republishes).
    /// - Returns: whether the visible book changed (by this first read).
    @discardableResult
    public func refresh(laterChange: (@Sendable () -> Void)? = nil) -> Bool {
        let generation = refreshes.add(1, ordering: .relaxed).newValue
        return refresh(generation: generation, delay: Self.firstRetry, laterChange: laterChange)
    }

    /// The first wait before a failed read is tried again, and the longest.
    static let firstRetry: Duration = .milliseconds(500)
    static let retryCeiling: Duration = .seconds(30)
    /// Counts refreshes: a retry stops once a newer refresh has started (it reads for itself).
    private let refreshes = Atomic<Int>(0)

    private func refresh(generation: Int, delay: Duration, laterChange: (@Sendable () -> Void)?) -> Bool {
        guard let shared else { return false }
        let stored: SharedMarkerBook?
        do {
            stored = try shared.load(channel: channel)
        } catch {
            failure.withLock { $0 = error.message }
            BackgroundWork.run(after: delay) { [self] in
                guard refreshes.load(ordering: .relaxed) == generation else { return }
                let next = min(delay * 2, Self.retryCeiling)
                if refresh(generation: generation, delay: next, laterChange: laterChange) { laterChange?() }
            }
            return false
        }
        guard let stored else { return false }
        return writer.withLock { current in adopt(stored, into: &current) }
    }

    /// Makes `stored` the book (writer and visible) if it is newer than the one held, and keeps it in the journal as
    /// the last book known. Called with the writer lock held.
    @discardableResult
    private func adopt(_ stored: SharedMarkerBook, into current: inout MarkerBook) -> Bool {
        let newer = sharedVersion.withLock { version -> Bool in
            guard version.map({ stored.version > $0 }) ?? true else { return false }
            version = stored.version
            return true
        }
        failure.withLock { $0 = nil }
        guard newer, stored.book != current else { return false }
        current = stored.book
        visible.withLock { $0 = stored.book }
        if let journal {
            do {
                try journal.save(stored.book)
            } catch {
                // Only the local copy: the shared book holds the change.
                logger.warning("marker journal (local copy) write failed", metadata: ["error": "\(error)"])
            }
        }
        return true
    }
}
