import ArgumentParser
import Foundation
import Glibc
import GroupDatabase
import Logging
import OriginServer
import ServiceLifecycle
import UnixSignals

/// `hlsorigin [--config FILE] [--host ADDR] [--port N] [--data-dir DIR]`: flags override the file.
/// `hlsorigin validate URL`: the stream validator (``ValidateCommand``); `hlsorigin check-config FILE`: the
/// configuration checked without starting (``CheckConfigCommand``); without a subcommand the origin runs.
/// `--generate-completion-script bash|zsh|fish` prints a shell completion script (ArgumentParser's).
@main
struct HLSOriginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hlsorigin", abstract: "A live HLS origin: encoders push segments, players pull a live window.",
        subcommands: [ValidateCommand.self, CheckConfigCommand.self])

    /// ArgumentParser's `main`, except that a usage error of `hlsorigin validate` exits with status 2 (its documented
    /// status) instead of ArgumentParser's 64.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asynchronous = command as? AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch {
            if CommandLine.arguments.dropFirst().first == ValidateCommand.configuration.commandName,
                exitCode(for: error) == .validationFailure
            {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Glibc.exit(ValidateCommand.usageStatus)
            }
            exit(withError: error)
        }
    }

    @Option(name: .long, help: "Configuration file (YAML). Default: config/default.yaml if present.")
    var config: String?

    @Option(name: .long, help: "Address to listen on (default 0.0.0.0).")
    var host: String?

    @Option(name: .long, help: "TCP port (default 8080; 0 picks a free one).")
    var port: Int?

    @Option(name: .customLong("data-dir"), help: "Directory for the state journal (default ./data).")
    var dataDir: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String?

    @Option(
        name: .customLong("log-format"),
        help: "text (default) or json: one JSON object per line (time, level, label, message, metadata).")
    var logFormat: LogFormat = .text

    /// How log lines are written (standard error).
    enum LogFormat: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    func validate() throws {
        if let port, !ServerConfiguration.validPorts.contains(port) {
            throw ValidationError("--port must be between 0 and 65535")
        }
        if let logLevel, Logger.Level(rawValue: logLevel) == nil {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
    }

    /// What the command line says over the configuration file, kept for reloads (SIGHUP re-reads the file and
    /// applies the same overrides).
    struct Overrides: Sendable {
        var path: String?
        var host: String?
        var port: Int?
        var dataDirectory: String?
        var logLevel: String?

        /// The configuration file (or the built-in defaults), the flags and the environment over it.
        func load() throws -> ServerConfiguration {
            var settings: ServerConfiguration
            do {
                settings = try path.map(ConfigurationFile.load(path:)) ?? ServerConfiguration()
            } catch {
                throw ValidationError("\(error)")
            }
            if let host { settings.host = host }
            if let port { settings.port = port }
            if let dataDirectory { settings.dataDirectory = dataDirectory }
            if let logLevel { settings.logLevel = logLevel }
            let environment = ProcessInfo.processInfo.environment
            if let token = environment["HLSORIGIN_ADMIN_TOKEN"], !token.isEmpty { settings.adminToken = token }
            if let token = environment["HLSORIGIN_INGEST_TOKEN"], !token.isEmpty { settings.ingestToken = token }
            if let url = environment["HLSORIGIN_DATABASE_URL"], !url.isEmpty {
                do {
                    _ = try GroupDatabase.Location(url: url)
                } catch {
                    throw ValidationError("HLSORIGIN_DATABASE_URL: \(error.message)")
                }
                settings.databaseURL = url
            }
            return settings
        }
    }

    func run() async throws {
        let path =
            config ?? (FileManager.default.fileExists(atPath: "config/default.yaml") ? "config/default.yaml" : nil)
        let overrides = Overrides(path: path, host: host, port: port, dataDirectory: dataDir, logLevel: logLevel)
        let settings = try overrides.load()

        let level = Logger.Level(rawValue: settings.logLevel) ?? .info
        // Under systemd with the journal on stderr: no timestamps (journald adds them), levels as priorities.
        let journal = JournalLogHandler.stderrIsJournal()
        let json = logFormat == .json
        LoggingSystem.bootstrap { label in
            if json {
                var handler = JSONLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
            if journal { return JournalLogHandler.standardError(label: label, logLevel: level) }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "hlsorigin")
        signal(SIGPIPE, SIG_IGN)
        // SIGHUP (reload) is received by a dispatch source that `OriginService.run()` installs before READY=1; until
        // then it is ignored rather than ending the process (its default action).
        signal(SIGHUP, SIG_IGN)
        // NOTIFY_SOCKET (systemd `Type=notify`): READY=1 once listening, RELOADING=1 around SIGHUP, STOPPING=1.
        let service = try OriginService(
            configuration: settings, source: overrides.load, notifier: SystemdNotifier(), logger: logger)
        try service.startListening()
        // Print the bound ports on stdout so scripts and tests can find them (port 0 picks a free one): the HTTPS
        // line first, so that a reader waiting for the HTTP line finds both.
        if settings.tls != nil {
            print("hlsorigin listening for https on \(settings.tls?.host ?? settings.host):\(service.tlsPort)")
        }
        if settings.tls?.only != true {
            print("hlsorigin listening on \(settings.host):\(service.port) (config: \(path ?? "built-in defaults"))")
        }
        fflush(nil)
        // SIGTERM and SIGINT start a graceful shutdown: the service drains requests and writes the journals.
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: service.services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}
