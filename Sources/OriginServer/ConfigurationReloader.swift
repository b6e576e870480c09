import Foundation
import Logging
import OriginCore
import Synchronization

/// Reload without restart: re-reads the configuration (the file and the command line's overrides, through
/// `source`) and applies it to the running origin (`Origin.reload`). SIGHUP and `POST /admin/reload` both come here.
/// A configuration that does not load or validate is refused with the reason (logged, and in the answer) and the
/// running one stays. Tokens (`AccessControl`) and `limits:` change live; server settings (listen address, threads,
/// connection limits, database, peers, log level) take effect only at a restart: the answer names those that changed.
public final class ConfigurationReloader: Sendable {
    /// What a reload did, or why it was refused.
    public enum Outcome: Sendable {
        case applied(ReloadReport)
        case refused(String)
    }

    private let origin: Origin
    private let source: (@Sendable () throws -> ServerConfiguration)?
    /// The server settings in force (those the origin started with: they change only with a restart).
    private let running: ServerConfiguration
    /// The tokens in force, replaced by every applied reload; nil: tokens are not reloaded.
    private let access: AccessControl?
    private let logger: Logger

    /// - Parameters:
    ///   - source: reads the configuration as the origin was started with it (nil: nothing to re-read).
    ///   - access: the tokens the HTTP handler checks, replaced by a reload.
    public init(
        origin: Origin, running: ServerConfiguration, source: (@Sendable () throws -> ServerConfiguration)?,
        access: AccessControl? = nil, logger: Logger
    ) {
        self.origin = origin
        self.running = running
        self.source = source
        self.access = access
        self.logger = logger
    }

    /// Re-reads the configuration and applies it.
    public func reload() -> Outcome {
        guard let source else {
            return .refused("the origin was started without a configuration to re-read")
        }
        let loaded: ServerConfiguration
        do {
            loaded = try source()
        } catch {
            logger.error(
                "configuration reload refused: the running configuration stays", metadata: ["reason": "\(error)"])
            return .refused("\(error)")
        }
        var requested = loaded.origin
        requested.dataDirectory = requested.dataDirectory ?? loaded.dataDirectory
        do {
            var report = try origin.reload(requested)
            if let access {
                access.update(loaded)
                access.logSummary(logger)
            }
            report.needsRestart = Self.restartOnlyChanges(from: running, to: loaded) + report.needsRestart
            if !report.needsRestart.isEmpty {
                logger.warning(
                    "configuration reload: these settings change only with a restart",
                    metadata: ["settings": "\(report.needsRestart)"])
            }
            return .applied(report)
        } catch {
            logger.error(
                "configuration reload refused: the running configuration stays", metadata: ["reason": "\(error)"])
            return .refused(error.message)
        }
    }

    /// The server settings (outside `origin`) that differ: they take effect at the next start.
    static func restartOnlyChanges(from old: ServerConfiguration, to new: ServerConfiguration) -> [String] {
        var changed: [String] = []
        func check<Value: Equatable>(_ name: String, _ path: KeyPath<ServerConfiguration, Value>) {
            if old[keyPath: path] != new[keyPath: path] { changed.append(name) }
        }
        check("server.host", \.host)
        check("server.port", \.port)
        check("server.threads", \.threads)
        check("server.connectionLimit", \.connectionLimit)
        check("server.perClientConnectionLimit", \.perClientConnectionLimit)
        check("server.connectionTimeout", \.connectionTimeoutSeconds)
        check("server.connectionMemoryKiB", \.connectionMemoryKiB)
        check("database.url", \.databaseURL)
        check("redundancy.peers", \.peers)
        check("multivariantMaxAge", \.multivariantMaxAge)
        check("clockOffset", \.clockOffsetMilliseconds)
        check("logLevel", \.logLevel)
        return changed
    }
}
