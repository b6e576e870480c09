import Foundation
import GroupDatabase
public import Logging
public import MicroHTTPD
public import OriginCore
import Persistence
import PeerRepair
public import SRTInput
public import ServiceLifecycle
import Synchronization
import TestSourceInput
import UnixSignals

/// The running origin: the core, its ingest loop and the HTTP server (and the HTTPS one, `server.tls`), with
/// graceful shutdown.
///
/// A `Service`: run it in a `ServiceGroup` (the command line does, with SIGTERM and SIGINT as graceful shutdown
/// signals). `run()` listens, runs the ingest loop until the graceful shutdown (or cancellation), then drains the
/// requests in flight and writes the journals.
public final class OriginService: Service, Sendable {
    /// The core.
    public let origin: Origin
    /// The HTTP listener; nil with `server.tls.only`.
    private let httpServer: HTTPServer?
    /// The HTTPS listener (`server.tls`): the same handler behind GnuTLS.
    private let httpsServer: HTTPServer?
    private let handler: OriginHTTPHandler
    private let logger: Logger
    private let listening = Mutex(false)
    /// The marker books and recordings shared through PostgreSQL, when `databaseURL` is set.
    private let database: GroupDatabase?
    /// Repairs slots this origin's feed missed from the peers of its redundancy group, when peers are configured.
    private let peerRepairer: PeerRepairer?
    /// Content Steering's health monitor (`steering:`); nil without it.
    private let steeringMonitor: SteeringHealthMonitor?
    /// Feeds the `.testSource` channels from the built-in generator.
    private let testSource: TestSourceInput
    /// Reload without restart: SIGHUP and `POST /admin/reload`.
    public let reloader: ConfigurationReloader
    /// The SRT input (`ingest.srt`); nil without it.
    public let srt: SRTListener?
    /// Tells a supervisor (systemd, `Type=notify`) when the listeners listen, a SIGHUP reload runs, shutdown begins.
    private let notifier: SystemdNotifier

    /// Builds the origin and the HTTP server from the configuration (nothing listens until `startListening()` or `run()`).
    /// - Parameter clock: the shared clock; default: the system clock shifted by `clockOffsetMilliseconds`.
    /// - Parameter source: re-reads the configuration for a reload (SIGHUP, `POST /admin/reload`): the file and the
    ///   command line's overrides; nil: reloads are refused.
    /// - Parameter notifier: the supervisor's readiness socket (the command line passes `NOTIFY_SOCKET`'s).
    public init(
        configuration: ServerConfiguration, clock: (any OriginClock)? = nil,
        source: (@Sendable () throws -> ServerConfiguration)? = nil, notifier: SystemdNotifier = .none, logger: Logger
    ) throws {
        self.notifier = notifier
        let clock = clock ?? SystemClock(offsetMicroseconds: configuration.clockOffsetMilliseconds * 1000)
        self.logger = logger
        try DurableFile.makeDirectories(configuration.dataDirectory)
        var originConfiguration = configuration.origin
        originConfiguration.dataDirectory = originConfiguration.dataDirectory ?? configuration.dataDirectory
        let database = try configuration.databaseURL.map { url in
            GroupDatabase(location: try GroupDatabase.Location(url: url), logger: logger)
        }
        self.database = database
        // The port is bound before the channels are restored (reading the durable store takes a moment after a
        // restart): players' connections meanwhile wait in the backlog instead of being refused, which ends some
        // readers (ffmpeg's HLS demuxer stops at the first failed playlist reload).
        var http = Self.httpConfiguration(configuration)
        var https = configuration.tls.map { Self.httpsConfiguration(configuration, tls: $0) }
        var listeningSockets: [Int32] = []
        let audit = Logger(label: "hlsorigin.audit")
        do {
            if configuration.tls?.only != true {
                http.listeningSocket = try HTTPServer.listen(http)
                listeningSockets.append(http.listeningSocket!)
            }
            if let unbound = https {
                let socket = try HTTPServer.listen(unbound)
                https?.listeningSocket = socket
                listeningSockets.append(socket)
            }
            origin = try Origin(
                configuration: originConfiguration, clock: clock, logger: logger, sharedMarkers: database,
                sharedRecordings: database, audit: audit, sourceCheck: TestSourceInput.check,
                sourcePrepare: TestSourceInput.prepare)
            testSource = try TestSourceInput(origin: origin, logger: logger)
        } catch {
            for socket in listeningSockets { close(socket) }
            throw error
        }
        if let tls = configuration.tls {
            logger.info(
                "TLS certificate loaded",
                metadata: ["tls.certificate": "\(tls.certificate)", "tls.file": "\(tls.certificatePath)"])
            if let warning = tls.keyFileWarning { logger.warning("\(warning)") }
        }
        if let database {
            logger.info(
                "markers and recordings are shared through PostgreSQL", metadata: ["database": "\(database.location)"])
            // Notifications arrive in the database's listening task; reading the database again blocks, so it runs
            // as background work.
            database.listen { [origin] change in
                BackgroundWork.run {
                    switch change {
                    case .markers(let channel): origin.sharedMarkersChanged(channel: channel)
                    case .recordings: origin.sharedRecordingsChanged()
                    case .everything:
                        origin.sharedMarkersChanged(channel: nil)
                        origin.sharedRecordingsChanged()
                    }
                }
            }
        }
        let peers = configuration.peers.compactMap(PeerURL.init)
        let repairer = peers.isEmpty ? nil : PeerRepairer(origin: origin, peers: peers, logger: logger)
        peerRepairer = repairer
        if !peers.isEmpty {
            logger.info("slots this origin misses are repaired from its peers", metadata: ["peers": "\(peers)"])
        }
        let steeringMonitor = configuration.steering.map { [origin, database, logger] steering in
            SteeringHealthMonitor(origin: origin, steering: steering, database: database, logger: logger)
        }
        self.steeringMonitor = steeringMonitor
        let access = AccessControl(configuration)
        access.logSummary(logger)
        let srt = try SRTListener.make(configuration, origin: origin, access: access, logger: logger)
        self.srt = srt?.listener
        let reloader = ConfigurationReloader(
            origin: origin, running: configuration, source: source, access: access,
            tlsCredentials: https?.tls?.credentials, logger: logger)
        self.reloader = reloader
        let handler = OriginHTTPHandler(
            origin: origin, configuration: configuration, metrics: RequestMetrics(), peerRepairer: repairer,
            testSource: testSource, reloader: reloader, access: access, srt: srt?.listener,
            srtStreams: srt?.segmenter, logger: logger)
        self.handler = handler
        handler.steering.monitor = steeringMonitor
        httpServer =
            http.listeningSocket == nil ? nil : HTTPServer(configuration: http, handler: handler, logger: logger)
        httpsServer = https.map { HTTPServer(configuration: $0, handler: handler, logger: logger) }
    }

    /// The HTTPS listener's settings: those of the HTTP one on `tls.port`, with the certificate and priorities.
    public static func httpsConfiguration(
        _ configuration: ServerConfiguration, tls: TLSSettings, threadCount: Int? = nil
    ) -> HTTPServerConfiguration {
        var https = httpConfiguration(configuration, threadCount: threadCount)
        https.port = tls.port
        https.host = tls.host ?? configuration.host
        https.tls = TLSConfiguration(credentials: TLSCredentials(tls.certificate), priorities: tls.priorities)
        return https
    }

    /// The HTTP server settings for a server configuration (tests use it to build the same server).
    public static func httpConfiguration(
        _ configuration: ServerConfiguration, threadCount: Int? = nil
    )
        -> HTTPServerConfiguration
    {
        var http = HTTPServerConfiguration(
            host: configuration.host, port: configuration.port,
            threadCount: threadCount
                ?? (configuration.threads > 0 ? configuration.threads : HTTPServerConfiguration.activeProcessorCount),
            connectionLimit: configuration.connectionLimit,
            perIPConnectionLimit: configuration.perClientConnectionLimit,
            connectionTimeout: configuration.connectionTimeoutSeconds,
            // libmicrohttpd zeroes a connection's whole memory pool after every keep-alive request: 32 KiB cost
            // ~10% of the CPU serving playlists, 16 KiB ~5% of the throughput at 512 connections against 8 KiB
            // (docs/performance.md). 8 KiB holds request heads of about 6 KiB (players and CDNs send far less).
            connectionMemoryLimit: configuration.connectionMemoryKiB * 1024)
        http.remoteClientConnectionLimit = configuration.remoteClientConnectionLimit
        http.requestBodyTimeLimit = configuration.requestBodyTimeLimitSeconds
        http.requestBodyMinimumRate = configuration.requestBodyMinimumBytesPerSecond
        http.standardHeaders = OriginHTTPHandler.standardHeaders
        return http
    }

    /// Binds the port and answers HTTP from now on (the ingest loop runs in `run()`). Call it
    /// before `run()` to learn the port, or to fail early when it is taken; `run()` calls it otherwise.
    /// The supervisor hears `READY=1` from `run()`, once the SIGHUP handler is installed.
    public func startListening() throws {
        let started = try listening.withLock { listening in
            guard !listening else { return false }
            Self.raiseOpenFileLimit(
                connectionLimit: servers.reduce(0) { $0 + $1.configuration.connectionLimit }, logger: logger)
            for server in servers { try server.start() }
            listening = true
            return true
        }
        if started {
            var metadata: Logger.Metadata = [:]
            if let httpServer { metadata["port"] = "\(httpServer.boundPort)" }
            if let httpsServer { metadata["tls.port"] = "\(httpsServer.boundPort)" }
            logger.info("hlsorigin listening", metadata: metadata)
            // Media is served without it; the route answers 500 with the same text.
            if case .failure(let missing) = AdminOpenAPIDocument.loaded { logger.error("\(missing)") }
        }
    }

    /// The listeners: HTTP, HTTPS, or both.
    private var servers: [HTTPServer] { [httpServer, httpsServer].compactMap { $0 } }

    /// Serves until a graceful shutdown is triggered (or the task is cancelled): listens, runs the ingest loop, then
    /// stops: drains the requests in flight and writes the journals.
    public func run() async throws {
        try startListening()
        // SIGHUP's handler is installed before READY=1: systemd may send a `systemctl reload` the moment it hears it,
        // and SIGHUP's default action ends the process (which systemd takes for a clean exit).
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        // Every listener is bound (the SRT one in `init`): a supervisor may start what depends on the origin.
        notifier.ready(status: "listening" + (httpServer.map { " on port \($0.boundPort)" } ?? ""))
        let loops = backgroundLoops(hangups: hangups)
        await cancelWhenGracefulShutdown { await loops() }
        if Task.isShuttingDownGracefully { logger.info("signal received: shutting down") }
        notifier.stopping()
        await stop()
    }

    /// What the process's `ServiceGroup` runs, in this order: the group database's client (when `databaseURL` is
    /// set; shut down last, after the origin has drained the admin calls that use it), this service, then the inputs
    /// beside the encoder's pushes, shut down first: the test source, peer repair (with peers) and the SRT listener
    /// (with `ingest.srt`; its callers' sessions are closed as a shutdown, not a feed drop).
    public var services: [any Service] {
        [
            database as (any Service)?, self, testSource, peerRepairer as (any Service)?, srt as (any Service)?,
            steeringMonitor as (any Service)?,
        ]
        .compactMap { $0 }
    }

    /// How often markers and recordings are compared with the group's database in full (besides every
    /// notification, and the retries of a read that failed).
    static let fullReconcileInterval: Duration = .seconds(60)

    /// The ingest loop, the pruning of the server's prepared answers and, with a group database, its periodic
    /// full comparison, until the task is cancelled.
    private func backgroundLoops(hangups: UnixSignalsSequence) -> @Sendable () async -> Void {
        let hasDatabase = database != nil
        return { [origin, handler, reloader, notifier] in
            await withTaskGroup(of: Void.self) { loops in
                loops.addTask { await origin.run() }
                loops.addTask {
                    // SIGHUP: reload without restart (the outcome is logged); a supervisor sees it as reloading
                    // until it is applied or refused (systemd waits for that only with `Type=notify-reload`).
                    for await _ in hangups {
                        notifier.reloading()
                        _ = reloader.reload()
                        notifier.ready()
                    }
                }
                loops.addTask { await handler.prunePreparedAnswers() }
                if hasDatabase {
                    // A full comparison with the group's database now and then, whatever notifications were missed.
                    loops.addTask {
                        while !Task.isCancelled {
                            try? await Task.sleep(for: OriginService.fullReconcileInterval)
                            guard !Task.isCancelled else { return }
                            await BackgroundWork.perform {
                                origin.sharedMarkersChanged(channel: nil)
                                origin.sharedRecordingsChanged()
                            }
                        }
                    }
                }
            }
        }
    }

    /// Raises the soft open-file limit to the hard one (as nginx's `worker_rlimit_nofile` does): every connection
    /// is a descriptor, and a default soft limit of 1,024 would cap the
    /// connections far below `connectionLimit`. Warns if even the hard limit leaves too few.
    static func raiseOpenFileLimit(connectionLimit: Int, logger: Logger) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        let available = limit.rlim_cur >= rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
        if available < connectionLimit + 256 {
            logger.warning(
                "open-file limit is below the connection limit",
                metadata: ["limit": "\(available)", "connectionLimit": "\(connectionLimit)"])
        }
    }

    /// The port the HTTP listener listens on; 0 when there is none (`server.tls.only`) or it is not started.
    public var port: Int { httpServer?.boundPort ?? 0 }

    /// The port the HTTPS listener listens on; 0 when there is none or it is not started.
    public var tlsPort: Int { httpsServer?.boundPort ?? 0 }

    /// Longest time a graceful shutdown lets requests in flight finish (a slow reader of a large segment, an encoder's PUT).
    public static let drainGracePeriod: Duration = .seconds(4)

    /// The end of `run()`, once the ingest loop has stopped: stops listening, lets requests in flight finish (up to
    /// `gracePeriod`), closes the remaining connections, then writes every channel's state journal.
    private func stop(gracePeriod: Duration = OriginService.drainGracePeriod) async {
        let inFlight = servers.reduce(0) { $0 + $1.requestsInFlight }
        // Both listeners drain at the same time; stopping one waits for its threads, so it is background work.
        await withTaskGroup(of: Void.self) { stopping in
            for server in servers {
                stopping.addTask { await BackgroundWork.perform { server.stop(gracePeriod: gracePeriod) } }
            }
        }
        await BackgroundWork.perform { [origin] in origin.flushJournals() }
        logger.info("hlsorigin stopped", metadata: ["http.in_flight_at_stop": "\(inFlight)"])
    }
}
