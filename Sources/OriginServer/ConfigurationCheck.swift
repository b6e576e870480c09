import Foundation
import LiveTimeline
import MicroHTTPD
import OriginCore
import TestSourceInput

/// `hlsorigin check-config FILE`: what the origin checks of its configuration before it starts, run without
/// starting. Loading (`ConfigurationFile.load`) already decodes strictly (unknown keys, wrong types), resolves the
/// named tokens (`secretFile`, `secretEnv`), reads and checks the TLS certificate and key and every slate clip;
/// this adds what `Origin` checks of each configured channel at start (its name, `OriginNames`; the inputs' check,
/// `TestSourceInput.check`) and says what the origin would run with.
public enum ConfigurationCheck {
    /// The summary of a configuration that passed, one line each (warnings start with `warning:`); throws the first
    /// thing the origin would refuse at start.
    public static func run(_ configuration: ServerConfiguration) throws -> [String] {
        try run(configuration, now: Date())
    }

    static func run(_ configuration: ServerConfiguration, now: Date) throws -> [String] {
        for channel in configuration.origin.channels {
            // The name rule `Origin.init` applies to configured channels.
            guard OriginNames.isValid(channel.name) else { throw IngestError.invalidName("channel", channel.name) }
            try TestSourceInput.check(channel)
        }
        var lines: [String] = []
        let listeners =
            configuration.tls?.only == true ? [] : ["http \(configuration.host):\(configuration.port)"]
        let https = configuration.tls.map { ["https \($0.host ?? configuration.host):\($0.port)"] } ?? []
        lines.append("listens: \((listeners + https).joined(separator: ", "))")
        lines.append("data directory: \(configuration.dataDirectory)")
        for channel in configuration.origin.channels {
            let source = channel.source == .testSource ? "test source" : "push"
            let renditions = channel.renditions.map(\.name).joined(separator: ", ")
            lines.append("channel \(channel.name): \(source), renditions \(renditions)")
        }
        if configuration.origin.channels.isEmpty { lines.append("channels: none configured") }
        let tokens = configuration.access.tokens.map(\.name)
        var admin = configuration.access.admin
        if configuration.adminToken != nil { admin.append("admin") }
        lines.append("named tokens: \(tokens.isEmpty ? "none" : tokens.joined(separator: ", "))")
        lines.append(
            admin.isEmpty
                ? "admin API: loopback clients only (no admin token)" : "admin API: tokens \(admin.joined(separator: ", "))")
        if let tls = configuration.tls {
            let certificate = tls.certificate
            let expiry = HTTPDate.format(secondsSince1970: certificate.notAfter)
            lines.append("TLS certificate: \(certificate.subject), expires \(expiry)")
            let left = Double(certificate.notAfter) - now.timeIntervalSince1970
            if left < 0 {
                lines.append("warning: the TLS certificate expired on \(expiry)")
            } else if left < 14 * 86_400 {
                lines.append("warning: the TLS certificate expires in \(Int(left / 86_400)) days (\(expiry))")
            }
            if let warning = tls.keyFileWarning { lines.append("warning: \(warning)") }
        }
        return lines
    }
}
