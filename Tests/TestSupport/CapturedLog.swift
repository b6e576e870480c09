public import Logging
import Synchronization

/// Log entries kept in memory, so a test reads what was logged (the audit log's outcomes, a server's messages): each
/// entry's level, message and metadata (the logger's and the call's, merged), in order. Safe to log to from any
/// thread.
public final class CapturedLog: Sendable {
    /// One logged entry; metadata values as their text.
    public struct Entry: Sendable {
        public let level: Logger.Level
        public let message: String
        public let metadata: [String: String]
    }

    private let entries = Mutex<[Entry]>([])

    public init() {}

    /// Every entry so far, oldest first.
    public var all: [Entry] { entries.withLock { $0 } }

    /// Every entry's message, oldest first.
    public var messages: [String] { all.map(\.message) }

    /// Every entry's text and metadata, one line each (to look for a secret anywhere).
    public var text: String {
        all.map { "\($0.message) \($0.metadata.sorted { $0.key < $1.key })" }.joined(separator: "\n")
    }

    /// A logger (level `.trace`: it keeps everything) writing here.
    public func logger(label: String = "hlsorigin.audit") -> Logger {
        Logger(label: label) { _ in Handler(log: self) }
    }

    func add(_ entry: Entry) { entries.withLock { $0.append(entry) } }

    struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var merged = metadata
            for (key, value) in event.metadata ?? [:] { merged[key] = value }
            log.add(Entry(level: event.level, message: "\(event.message)", metadata: merged.mapValues { "\($0)" }))
        }
    }
}
