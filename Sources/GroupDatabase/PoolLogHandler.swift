import Logging
import Synchronization

/// The connection pool's log: what it says at warning and above goes on to the origin's log; the error of a failed
/// connection attempt (which the pool logs at info, once per attempt) is kept, so that a call that times out waiting
/// for a connection says why (refused, TLS, authentication) instead of only that it waited.
struct PoolLogHandler: LogHandler {
    let forward: Logger
    let lastConnectionError: LastConnectionError

    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        if let error = merged["psql_error"] { lastConnectionError.set("\(error)") }
        guard event.level >= .warning else { return }
        forward.log(
            level: event.level, event.message, metadata: merged, source: event.source, file: event.file,
            function: event.function, line: event.line)
    }
}

/// The last error the pool logged for a connection attempt; cleared when a call succeeds.
final class LastConnectionError: Sendable {
    private let value = Mutex<String?>(nil)
    func set(_ text: String?) { value.withLock { $0 = text } }
    var current: String? { value.withLock { $0 } }
}
