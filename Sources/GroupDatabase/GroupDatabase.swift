import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// What a group of origins shares through PostgreSQL: the marker books (`GroupDatabase+Markers.swift`) and the
/// recordings (`GroupDatabase+Recordings.swift`). Every change NOTIFYs the group from a trigger in the change's own
/// transaction, so every origin hears of it at once (`listen`).
///
/// Calls block the calling thread (the admin API's libmicrohttpd thread) for at most `timeout`; they use SwiftNIO's
/// event loops, never the Swift concurrency pool. A call that cannot reach the database throws
/// `GroupDatabaseError` and leaves nothing half-done: a change is either committed (and announced) or not.
public final class GroupDatabase: Sendable {
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
        func tls() throws -> PostgresConnection.Configuration.TLS {
            guard sslMode != .disable else { return .disable }
            var configuration = TLSConfiguration.makeClientConfiguration()
            switch sslMode {
            case .disable, .prefer, .require: configuration.certificateVerification = .none
            case .verifyCA: configuration.certificateVerification = .noHostnameVerification
            case .verifyFull: configuration.certificateVerification = .fullVerification
            }
            if let sslRootCertificate { configuration.trustRoots = .file(sslRootCertificate) }
            let context = try NIOSSLContext(configuration: configuration)
            return sslMode == .prefer ? .prefer(context) : .require(context)
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
    private let timeout: TimeAmount
    private let logger: Logger
    private let group: any EventLoopGroup
    /// The connection for reads and writes (one at a time: `writer` serialises changes).
    private let connection = Mutex<PostgresConnection?>(nil)
    /// Serialises changes (one statement at a time on `connection`).
    let writer = Mutex<Void>(())
    private let healthState = Mutex(Health(reachable: false, lastError: "not connected yet"))
    private let listening = Mutex<Listening>(Listening())
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

    private struct Listening: Sendable {
        var connection: PostgresConnection?
        var stopped = false
    }

    /// A database at `location`; nothing is connected until the first call.
    /// - Parameter timeout: the longest a call waits for the database (connecting included).
    public init(location: Location, timeout: Duration = .seconds(2), logger: Logger) {
        self.location = location
        let (seconds, attoseconds) = timeout.components
        self.timeout = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        self.logger = logger
        self.group = MultiThreadedEventLoopGroup.singleton
    }

    /// Whether the last call reached the database.
    public var health: Health { healthState.withLock { $0 } }

    /// `health` as the shared stores' protocols report it (status and metrics).
    public var reachability: (reachable: Bool, lastError: String?) {
        let health = self.health
        return (health.reachable, health.lastError)
    }

    /// Listens for changes made by any origin of the group (this one included) until `stop()`: `changed` gets what
    /// changed, or `.everything` after (re)connecting, when changes may have been missed. Reconnects every second
    /// while the database cannot be reached.
    public func listen(_ changed: @escaping @Sendable (Change) -> Void) {
        connectListener(changed)
    }

    /// Stops listening and closes the connections.
    public func stop() {
        let listener = listening.withLock { state -> PostgresConnection? in
            state.stopped = true
            defer { state.connection = nil }
            return state.connection
        }
        listener.map(Self.close)
        let current = connection.withLock { connection -> PostgresConnection? in
            defer { connection = nil }
            return connection
        }
        current.map(Self.close)
    }

    // MARK: - Connections

    private func connectListener(_ changed: @escaping @Sendable (Change) -> Void) {
        guard !listening.withLock({ $0.stopped }) else { return }
        let eventLoop = group.any()
        connect(on: eventLoop).flatMap { connection -> EventLoopFuture<PostgresConnection> in
            connection.addListener(channel: Self.markerChannel) { _, notification in
                changed(.markers(channel: notification.payload))
            }
            connection.addListener(channel: Self.recordingChannel) { _, _ in changed(.recordings) }
            return connection.query("LISTEN \(Self.markerChannel)", []).flatMap { _ in
                connection.query("LISTEN \(Self.recordingChannel)", [])
            }.map { _ in connection }
        }.whenComplete { [self] result in
            switch result {
            case .success(let connection):
                let keep = listening.withLock { state -> Bool in
                    guard !state.stopped else { return false }
                    state.connection = connection
                    return true
                }
                guard keep else {
                    Self.close(connection)
                    return
                }
                logger.info("group database: listening for changes", metadata: ["database": "\(location)"])
                // The database answered: reachable again (a post that failed while it was down set it otherwise).
                healthState.withLock { $0 = Health(reachable: true, lastError: nil) }
                changed(.everything)
                connection.closeFuture.whenComplete { [self] _ in
                    logger.warning("group database: listening connection closed; reconnecting")
                    eventLoop.scheduleTask(in: .seconds(1)) { self.connectListener(changed) }
                }
            case .failure(let error):
                note(failure: "listen: \(Self.describe(error))")
                eventLoop.scheduleTask(in: .seconds(1)) { self.connectListener(changed) }
            }
        }
    }

    /// A new connection with the schema in place (made once per connection: idempotent, under an advisory lock so
    /// that origins starting together do not race).
    private func connect(on eventLoop: any EventLoop) -> EventLoopFuture<PostgresConnection> {
        let tls: PostgresConnection.Configuration.TLS
        do {
            tls = try location.tls()
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        var configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.username, password: location.password,
            database: location.database, tls: tls)
        configuration.options.connectTimeout = timeout
        return PostgresConnection.connect(
            on: eventLoop, configuration: configuration, id: 1, logger: logger
        ).flatMap { connection in
            // One statement per query (the extended protocol takes no lists), in one transaction.
            Self.schema.reduce(eventLoop.makeSucceededVoidFuture()) { done, statement in
                done.flatMap { connection.query(statement, []).map { _ in } }
            }.map { connection }.flatMapErrorThrowing { error in
                Self.close(connection)
                throw error
            }
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
        + [
            "COMMIT"
        ]

    /// Runs `body` on the shared connection (connecting first if needed) and waits at most `timeout`.
    func run<Value: Sendable>(
        _ what: String, _ body: @escaping @Sendable (PostgresConnection) -> EventLoopFuture<Value>
    ) throws(GroupDatabaseError) -> Value {
        let eventLoop = group.any()
        let current = connection.withLock { connection -> PostgresConnection? in
            if let open = connection, !open.isClosed { return open }
            connection = nil
            return nil
        }
        let ready = current.map { eventLoop.makeSucceededFuture($0) } ?? connect(on: eventLoop)
        let promise = eventLoop.makePromise(of: Value.self)
        let deadline = eventLoop.scheduleTask(in: timeout) {
            promise.fail(GroupDatabaseError("no answer from the database within \(Self.seconds(self.timeout))"))
        }
        ready.flatMap { [self] connection -> EventLoopFuture<Value> in
            guard current == nil else { return body(connection) }
            // Two first callers may both have connected: the first one's connection is kept, the other closed
            // once its call is done.
            let kept = self.connection.withLock { stored -> Bool in
                if let open = stored, !open.isClosed { return false }
                stored = connection
                return true
            }
            return body(connection).always { _ in if !kept { Self.close(connection) } }
        }.whenComplete { result in
            deadline.cancel()
            promise.completeWith(result)
        }
        do {
            let value = try promise.futureResult.wait()
            healthState.withLock { $0 = Health(reachable: true, lastError: nil) }
            return value
        } catch {
            // A connection that failed or timed out is not reused: the next call connects anew.
            let broken = connection.withLock { connection -> PostgresConnection? in
                defer { connection = nil }
                return connection
            }
            broken.map(Self.close)
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

    /// Closes a connection without waiting (the future form: the async one would need a task).
    private static func close(_ connection: PostgresConnection) {
        // Kept until it is closed: PostgresNIO asserts (debug builds) that a connection is closed before it is freed,
        // and `stop()` used to drop the last reference while the close was under way (SIGTERM crashed the process).
        let closed: EventLoopFuture<Void> = connection.close()
        closed.whenComplete { _ in withExtendedLifetime(connection) {} }
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

    static func seconds(_ amount: TimeAmount) -> String {
        String(format: "%.1f s", Double(amount.nanoseconds) / 1e9)
    }
}

/// Why the group database could not do what was asked.
public struct GroupDatabaseError: Error, Sendable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
