import Dispatch
import Foundation
public import Logging
import NIOCore
import PostgresNIO
public import ServiceLifecycle
import SharedBytes
import Synchronization

/// What a group of origins shares through PostgreSQL: the marker books (`GroupDatabase+Markers.swift`) and the
/// recordings (`GroupDatabase+Recordings.swift`). Every change NOTIFYs the group from a trigger in the change's own
/// transaction, so every origin hears of it at once (`listen`).
///
/// A `Service`: `run()` runs postgres-nio's `PostgresClient` (its connection pool) and the listener, and must run
/// in the process's `ServiceGroup` (before the origin in its list, so it is shut down after the origin has drained).
/// The queries are async on the pool; the synchronous calls the origin's stores make (`SharedMarkerBooks`,
/// `SharedRecordings`) wait for them at most `timeout`, on the calling thread, which is one of the origin's
/// background-work threads (`OriginCore.BackgroundWork`), never a libmicrohttpd thread nor a Swift task (checked
/// in debug builds). A call that cannot reach the database throws `GroupDatabaseError` and leaves nothing half-done:
/// a change is either committed (and announced) or not.
public final class GroupDatabase: Service, Sendable {
    /// Where the database is: `postgres://user[:password]@host[:port]/database` (or `postgresql://`).
    public struct Location: Sendable, Hashable, CustomStringConvertible {
        public let host: String
        public let port: Int
        public let username: String
        public let password: String?
        public let database: String
        /// `?sslmode=` of the URL (libpq's names): whether the connection is encrypted and what is verified.
        public let sslMode: SSLMode
        /// `?sslrootcert=`: a PEM file of the certificate authorities to trust (default: the system's).
        public let sslRootCertificate: String?

        /// libpq's `sslmode` values this origin takes.
        public enum SSLMode: String, Sendable, Hashable, CaseIterable {
            /// No TLS (the default, as before `sslmode` was read).
            case disable
            /// TLS if the server offers it, nothing verified.
            case prefer
            /// TLS or no connection; the certificate is not verified (libpq's `require` without a root file).
            case require
            /// TLS, the certificate verified against the trusted authorities, any host name.
            case verifyCA = "verify-ca"
            /// TLS, the certificate verified and issued for the URL's host.
            case verifyFull = "verify-full"
        }

        /// Reads a `postgres://` URL.
        /// - Throws: `GroupDatabaseError` naming what is missing or malformed.
        public init(url: String) throws(GroupDatabaseError) {
            guard let components = URLComponents(string: url),
                let scheme = components.scheme, scheme == "postgres" || scheme == "postgresql"
            else {
                throw GroupDatabaseError("database.url must look like postgres://user:password@host:5432/database")
            }
            guard let host = components.host, !host.isEmpty else {
                throw GroupDatabaseError("database.url has no host")
            }
            guard let user = components.user, !user.isEmpty else {
                throw GroupDatabaseError("database.url has no user name (postgres://USER@host/database)")
            }
            let database = String(components.path.drop(while: { $0 == "/" }))
            guard !database.isEmpty else { throw GroupDatabaseError("database.url names no database") }
            self.host = host
            self.port = components.port ?? 5432
            self.username = user
            self.password = components.password
            self.database = database
            var sslMode = SSLMode.disable
            var rootCertificate: String?
            for item in components.queryItems ?? [] {
                switch item.name {
                case "sslmode":
                    guard let mode = item.value.flatMap(SSLMode.init(rawValue:)) else {
                        throw GroupDatabaseError(
                            "database.url sslmode '\(item.value ?? "")' is not one of "
                                + SSLMode.allCases.map(\.rawValue).joined(separator: ", "))
                    }
                    sslMode = mode
                case "sslrootcert":
                    guard let path = item.value, !path.isEmpty else {
                        throw GroupDatabaseError("database.url sslrootcert names no file")
                    }
                    rootCertificate = path
                default:
                    throw GroupDatabaseError(
                        "database.url parameter '\(item.name)' is not known (sslmode and sslrootcert are)")
                }
            }
            self.sslMode = sslMode
            self.sslRootCertificate = rootCertificate
        }

        /// postgres-nio's TLS setting for `sslMode`.
        func tls() -> PostgresClient.Configuration.TLS {
            guard sslMode != .disable else { return .disable }
            var configuration = TLSConfiguration.makeClientConfiguration()
            switch sslMode {
            case .disable, .prefer, .require: configuration.certificateVerification = .none
            case .verifyCA: configuration.certificateVerification = .noHostnameVerification
            case .verifyFull: configuration.certificateVerification = .fullVerification
            }
            if let sslRootCertificate { configuration.trustRoots = .file(sslRootCertificate) }
            return sslMode == .prefer ? .prefer(configuration) : .require(configuration)
        }

        /// The location without the password, for logs and status.
        public var description: String {
            "postgres://\(username)@\(host):\(port)/\(database)" + (sslMode == .disable ? "" : "?sslmode=\(sslMode.rawValue)")
        }
    }

    /// Whether the database answered the last call, and why not if it did not.
    public struct Health: Sendable, Hashable {
        public var reachable: Bool
        public var lastError: String?
    }

    /// Where the database is.
    public let location: Location
    private let timeout: Duration
    let logger: Logger
    /// The connection pool; its `run()` runs in `run()`.
    let client: PostgresClient
    /// Why the pool's last connection attempt failed (nil once a call succeeded).
    private let lastConnectionError: LastConnectionError
    /// Serialises changes (one change statement at a time from this origin).
    let writer = Mutex<Void>(())
    private let healthState = Mutex(Health(reachable: false, lastError: "not connected yet"))
    /// Whether the tables and triggers were made (once, and again after a call failed: the database may be new).
    let schemaReady = Atomic<Bool>(false)
    /// What `run()` tells of the changes it hears (set by `listen` before `run()`).
    private let listener = Mutex<(@Sendable (Change) -> Void)?>(nil)
    private static let markerChannel = "hlsorigin_markers"
    private static let recordingChannel = "hlsorigin_recordings"

    /// What changed, as the listener hears it.
    public enum Change: Sendable, Hashable {
        /// The marker book of a channel.
        case markers(channel: String)
        /// The recordings (the payload names the recording; the whole list is read again anyway).
        case recordings
        /// The listener (re)connected: changes may have been missed, read everything again.
        case everything
    }

    /// A database at `location`; nothing is connected until `run()` runs and a call is made.
    /// - Parameter timeout: the longest a call waits for the database (connecting included).
    public init(location: Location, timeout: Duration = .seconds(2), logger: Logger) {
        self.location = location
        self.timeout = timeout
        self.logger = logger
        var configuration = PostgresClient.Configuration(
            host: location.host, port: location.port, username: location.username, password: location.password,
            database: location.database, tls: location.tls())
        configuration.options.connectTimeout = timeout
        // The server ends a statement no caller waits for any more (a lock wait, a slow disk): `statement_timeout`
        // set at connection start, `timeout` in ms. It cannot end a query on a half-dead connection (the server is
        // gone); postgres-nio's pool sets no TCP keepalive or user timeout on its channels, so the steering
        // monitor's heartbeat starts a fresh call beside a hung one instead (docs/content-steering.md, "Health").
        configuration.options.additionalStartupParameters = [
            ("statement_timeout", "\(max(timeout.wholeMilliseconds, 1))")
        ]
        // The pool logs every failed connection attempt at info: kept as the reason of a call that then times out,
        // `note(failure:)` reports an outage once.
        let lastConnectionError = LastConnectionError()
        self.lastConnectionError = lastConnectionError
        client = PostgresClient(
            configuration: configuration,
            backgroundLogger: Logger(label: logger.label) { _ in
                PoolLogHandler(forward: logger, lastConnectionError: lastConnectionError)
            })
    }

    /// Whether the last call reached the database.
    public var health: Health { healthState.withLock { $0 } }

    /// `health` as the shared stores' protocols report it (status and metrics).
    public var reachability: (reachable: Bool, lastError: String?) {
        let health = self.health
        return (health.reachable, health.lastError)
    }

    /// Listens, while `run()` runs, for changes made by any origin of the group (this one included): `changed`
    /// gets what changed, or `.everything` after (re)connecting, when changes may have been missed. Reconnects every
    /// second while the database cannot be reached. Call before `run()`. `changed` is called from a task: it must
    /// not block (hand the reading to background work).
    public func listen(_ changed: @escaping @Sendable (Change) -> Void) {
        listener.withLock { $0 = changed }
    }

    /// Runs the connection pool and the listener until a graceful shutdown (or cancellation); calls fail after.
    public func run() async throws {
        let changed = listener.withLock { $0 }
        await withDiscardingTaskGroup { group in
            group.addTask { await self.client.run() }
            if let changed {
                group.addTask { await cancelWhenGracefulShutdown { await self.listenUntilCancelled(changed) } }
            }
        }
    }

    // MARK: - Listening

    /// LISTENs on one pooled connection for as long as it lasts, then again a second later, until cancelled.
    /// A call or the schema check that got no answer within `timeout`, with the pool's last connection error.
    private func noAnswerError() -> GroupDatabaseError {
        let why = lastConnectionError.current.map { " (connecting: \($0))" } ?? ""
        return GroupDatabaseError("no answer from the database within \(Self.seconds(timeout))\(why)")
    }

    private func listenUntilCancelled(_ changed: @escaping @Sendable (Change) -> Void) async {
        while !Task.isCancelled {
            do {
                // Bounded, so that a database down at start is reported (health, log) as it was while it ran.
                try await withThrowingTaskGroup(of: Void.self) { first in
                    first.addTask { try await self.ensureSchema() }
                    first.addTask {
                        try await Task.sleep(for: self.timeout)
                        throw self.noAnswerError()
                    }
                    defer { first.cancelAll() }
                    try await first.next()
                }
                try await client.withConnection { connection in
                    try await connection.listen(on: Self.markerChannel) { markers in
                        try await connection.listen(on: Self.recordingChannel) { recordings in
                            logger.info("group database: listening for changes", metadata: ["database": "\(location)"])
                            // The database answered: reachable again (a post that failed while it was down set it
                            // otherwise).
                            healthState.withLock { $0 = Health(reachable: true, lastError: nil) }
                            changed(.everything)
                            // Either sequence ends when the connection does.
                            try await withThrowingTaskGroup(of: Void.self) { group in
                                group.addTask {
                                    for try await notification in markers {
                                        changed(.markers(channel: notification.payload))
                                    }
                                }
                                group.addTask { for try await _ in recordings { changed(.recordings) } }
                                defer { group.cancelAll() }
                                try await group.next()
                            }
                        }
                    }
                }
                guard !Task.isCancelled else { return }
                logger.warning("group database: listening connection closed; reconnecting")
            } catch {
                guard !Task.isCancelled else { return }
                schemaReady.store(false, ordering: .relaxed)
                note(failure: "listen: \(Self.describe(error))")
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// A trigger that NOTIFYs `channel` with the row's `column` after every insert or update of `table`, in the
    /// change's own transaction (its function and the trigger, named after `name`).
    private static func announcing(table: String, column: String, on channel: String, name: String) -> [String] {
        [
            """
            CREATE OR REPLACE FUNCTION hlsorigin_announce_\(name)() RETURNS trigger AS $$
            BEGIN
                PERFORM pg_notify('\(channel)', NEW.\(column));
                RETURN NEW;
            END;
            $$ LANGUAGE plpgsql
            """,
            """
            CREATE OR REPLACE TRIGGER hlsorigin_\(name)_changed
                AFTER INSERT OR UPDATE ON \(table)
                FOR EACH ROW EXECUTE FUNCTION hlsorigin_announce_\(name)()
            """,
        ]
    }

    /// The tables, and the triggers that announce every change in its own transaction; run in order.
    static let schema: [String] =
        [
            "BEGIN",
            "SELECT pg_advisory_xact_lock(7152019)",
            """
            CREATE TABLE IF NOT EXISTS hlsorigin_marker_books (
                channel text PRIMARY KEY,
                version bigint NOT NULL,
                book text NOT NULL,
                updated_at timestamptz NOT NULL DEFAULT now()
            )
            """,
        ]
        + announcing(table: "hlsorigin_marker_books", column: "channel", on: markerChannel, name: "marker_book")
        + [
            """
            CREATE TABLE IF NOT EXISTS hlsorigin_recordings (
                id text PRIMARY KEY,
                channel text NOT NULL,
                requested_start text NOT NULL,
                requested_end text NOT NULL,
                start_ms bigint NOT NULL,
                end_ms bigint NOT NULL,
                created_ms bigint NOT NULL,
                deleted_at timestamptz,
                updated_at timestamptz NOT NULL DEFAULT now()
            )
            """
        ]
        + announcing(table: "hlsorigin_recordings", column: "id", on: recordingChannel, name: "recording")
        + [heartbeatTable]
        + [
            "COMMIT"
        ]

    /// Makes the tables and triggers unless done since the last failure.
    func ensureSchema() async throws {
        guard !schemaReady.load(ordering: .acquiring) else { return }
        try await client.withConnection { connection in
            do {
                for statement in Self.schema { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
            } catch {
                // The connection goes back to the pool: not inside a failed transaction.
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
        }
        schemaReady.store(true, ordering: .releasing)
    }

    /// Runs `body` with a pooled connection (the schema made first if needed) and waits at most `timeout` for it,
    /// blocking the calling thread: for the synchronous stores, called from background work only.
    func run<Value: Sendable>(
        _ what: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> Value
    ) throws(GroupDatabaseError) -> Value {
        assert(withUnsafeCurrentTask { $0 == nil }, "a database call blocks its thread: never call it from a task")
        let outcome = Mutex<Result<Value, any Error>?>(nil)
        let answered = DispatchSemaphore(value: 0)
        let call = Task { [self] in
            let result: Result<Value, any Error>
            do {
                try await ensureSchema()
                result = .success(try await client.withConnection { try await body($0) })
            } catch {
                result = .failure(error)
            }
            outcome.withLock { $0 = result }
            answered.signal()
        }
        let result: Result<Value, any Error>
        if answered.wait(timeout: .now() + .nanoseconds(Int(clamping: timeout.wholeNanoseconds))) == .timedOut {
            // Leasing a connection stops at once; a query under way ends when the database answers.
            call.cancel()
            result = .failure(noAnswerError())
        } else {
            result = outcome.withLock { $0 } ?? .failure(GroupDatabaseError("the call ended without an answer"))
        }
        switch result {
        case .success(let value):
            lastConnectionError.set(nil)
            healthState.withLock { $0 = Health(reachable: true, lastError: nil) }
            return value
        case .failure(let error):
            // The database may have been replaced meanwhile: the schema is made again by the next call.
            schemaReady.store(false, ordering: .relaxed)
            let message = "cannot \(what): \(Self.describe(error))"
            note(failure: message)
            throw GroupDatabaseError(message)
        }
    }

    private func note(failure message: String) {
        let first = healthState.withLock { health -> Bool in
            defer { health = Health(reachable: false, lastError: message) }
            return health.reachable || health.lastError != message
        }
        if first { logger.error("group database unreachable", metadata: ["error": "\(message)"]) }
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? GroupDatabaseError { return error.message }
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] { return "database: \(message)" }
            // e.g. "connectionError (connection refused)": what the socket said, not only the category.
            return "\(error.code)" + (error.underlying.map { " (\($0))" } ?? "")
        }
        return "\(error)"
    }

    static func seconds(_ amount: Duration) -> String {
        String(format: "%.1f s", amount.inSeconds)
    }
}

/// Why the group database could not do what was asked.
public struct GroupDatabaseError: Error, Sendable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
