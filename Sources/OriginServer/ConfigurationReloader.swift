import Foundation
public import Logging
public import MicroHTTPD
public import OriginCore
import SRTInput
import Synchronization

/// Reload without restart: re-reads the configuration (the file and the command line's overrides, through
/// `source`) and applies it to the running origin (`Origin.reload`). SIGHUP and `POST /admin/reload` both come here.
/// A configuration that does not load or validate is refused with the reason (logged, and in the answer) and the
/// running one stays. Tokens (`AccessControl`) and `limits:` change live; the HTTPS listener's certificate and key
/// (`server.tls`) are read again and, once the rest is applied, presented to every new TLS handshake, while
/// connections already open keep theirs (docs/security.md, "TLS"); server settings (listen address, threads,
/// connection limits, database, peers, log level) take effect only at a restart: the answer names those that changed.
public final class ConfigurationReloader: Sendable {
    /// What a reload did, or why it was refused.
    public enum Outcome: Sendable {
        /// Applied; `certificate` is the HTTPS listener's certificate, read again, when there is one.
        case applied(ReloadReport, certificate: TLSCertificate?)
        case refused(String)
    }

    private let origin: Origin
    private let source: (@Sendable () throws -> ServerConfiguration)?
    /// The server settings in force (those the origin started with: they change only with a restart).
    private let running: ServerConfiguration
    /// The tokens in force, replaced by every applied reload; nil: tokens are not reloaded.
    private let access: AccessControl?
    private let logger: Logger
    /// The certificate of the running HTTPS listener, replaced by a reload; nil without `server.tls`.
    private let tlsCredentials: TLSCredentials?

    /// - Parameters:
    ///   - source: reads the configuration as the origin was started with it (nil: nothing to re-read).
    ///   - access: the tokens the HTTP handler checks, replaced by a reload.
    ///   - tlsCredentials: the HTTPS listener's certificate, renewed from the files on every reload.
    public init(
        origin: Origin, running: ServerConfiguration, source: (@Sendable () throws -> ServerConfiguration)?,
        access: AccessControl? = nil, tlsCredentials: TLSCredentials? = nil, logger: Logger
    ) {
        self.origin = origin
        self.tlsCredentials = tlsCredentials
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
            return .applied(report, certificate: renewCertificate(from: loaded))
        } catch {
            logger.error(
                "configuration reload refused: the running configuration stays", metadata: ["reason": "\(error)"])
            return .refused(error.message)
        }
    }

    /// Hands the certificate read from the files to new TLS handshakes (already checked when the configuration was
    /// loaded: a file that does not load refused the whole reload before anything was applied).
    private func renewCertificate(from loaded: ServerConfiguration) -> TLSCertificate? {
        guard let tlsCredentials else { return nil }
        guard let tls = loaded.tls else { return tlsCredentials.certificate }
        let previous = tlsCredentials.certificate
        tlsCredentials.replace(with: tls.certificate)
        logger.info(
            "TLS certificate reloaded: new connections get it, open ones keep theirs",
            metadata: [
                "tls.certificate": "\(tls.certificate)", "tls.previous_serial": "\(previous.serialNumber)",
                "tls.file": "\(tls.certificatePath)",
            ])
        if let warning = tls.keyFileWarning { logger.warning("\(warning)") }
        return tls.certificate
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
        check("server.remoteClientConnectionLimit", \.remoteClientConnectionLimit)
        check("server.requestBodyTimeLimitSeconds", \.requestBodyTimeLimitSeconds)
        check("server.requestBodyMinimumBytesPerSecond", \.requestBodyMinimumBytesPerSecond)
        check("server.connectionMemoryKiB", \.connectionMemoryKiB)
        check("database.url", \.databaseURL)
        check("redundancy.peers", \.peers)
        // The channels' pathways follow a reload; the health monitor (self, the peers it reads) is set up at a start.
        check("steering", \.steering)
        check("multivariantMaxAge", \.multivariantMaxAge)
        check("clockOffset", \.clockOffsetMilliseconds)
        check("logLevel", \.logLevel)
        check("delivery", \.delivery)  // CMSD and CMCD are set up with the handler
        // The certificate and key files are read again at every reload; the listener itself changes only at a start.
        check("server.tls", \.tls.isSome)
        if old.tls != nil, new.tls != nil {
            check("server.tls.port", \.tls?.port)
            check("server.tls.host", \.tls?.host)
            check("server.tls.only", \.tls?.only)
            check("server.tls.priorities", \.tls?.priorities)
        }
        // The SRT listener's socket and threads are set up at a start; its passphrase follows a reload (with the
        // tokens, `SRTAccessRules`).
        check("ingest.srt", \.srt.isSome)
        if old.srt != nil, new.srt != nil {
            check("ingest.srt.port", \.srt?.port)
            check("ingest.srt.host", \.srt?.host)
            check("ingest.srt.latencyMilliseconds", \.srt?.latencyMilliseconds)
            check("ingest.srt.maxCallers", \.srt?.maxCallers)
            check("ingest.srt.idleTimeoutMilliseconds", \.srt?.idleTimeoutMilliseconds)
        }
        return changed
    }
}

extension Optional {
    /// Whether there is a value (a key path for "configured or not").
    fileprivate var isSome: Bool { self != nil }
}

/// The answer of `POST /admin/reload`: what changed, and the HTTPS listener's certificate after the reload.
struct ReloadAnswer: Encodable {
    let report: ReloadReport
    let certificate: TLSCertificate?

    private enum CodingKeys: String, CodingKey { case certificate }
    private enum CertificateKeys: String, CodingKey { case subject, issuer, serial, notBefore, notAfter }

    func encode(to encoder: any Encoder) throws {
        try report.encode(to: encoder)
        guard let certificate else { return }
        var container = encoder.container(keyedBy: CodingKeys.self)
        var fields = container.nestedContainer(keyedBy: CertificateKeys.self, forKey: .certificate)
        try fields.encode(certificate.subject, forKey: .subject)
        try fields.encode(certificate.issuer, forKey: .issuer)
        try fields.encode(certificate.serialNumber, forKey: .serial)
        try fields.encode(HTTPDate.format(secondsSince1970: certificate.notBefore), forKey: .notBefore)
        try fields.encode(HTTPDate.format(secondsSince1970: certificate.notAfter), forKey: .notAfter)
    }
}
