import Foundation
import Logging
import MicroHTTPD
import OriginServer
import TestSupport
import Testing

/// `server.tls`: the configuration keys and their checks, and the origin's HTTP and HTTPS listeners side by side,
/// with certificates made by `openssl` for the test and read by curl and `openssl s_client`.
@Suite("TLS: server.tls configuration, HTTP and HTTPS listeners, certificate renewed by a reload", .offThePool)
struct TLSListenerTests {
    static let logger = Logger(label: "tls-listener-tests", factory: { _ in SwiftLogNoOpLogHandler() })
    let directory: URL
    let authority: TestCertificateAuthority
    let first: TestCertificateAuthority.Issued

    init() throws {
        directory = try TemporaryDirectory.make("origin-tls")
        authority = try TestCertificateAuthority.make(in: directory)
        first = try authority.issue(name: "first", serial: 0x1001)
    }

    func yaml(_ tls: String, port: Int = 0) -> String {
        """
        server:
          host: 127.0.0.1
          port: \(port)
          threads: 1
          dataDir: \(directory.appendingPathComponent("data").path)
          tls:
        \(tls.split(separator: "\n").map { "    \($0)" }.joined(separator: "\n"))
        ingest: { autoCreate: true }

        """
    }

    func refusal(_ text: String) -> String? {
        do {
            _ = try ConfigurationFile.parse(text, source: "test.yaml")
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test("server.tls is read: files checked at load, port 8443 by default, only and priorities")
    func parsesTheTLSSettings() throws {
        let parsed = try ConfigurationFile.parse(
            yaml("certificate: \(first.chainURL.path)\nkey: \(first.keyURL.path)"), source: "test.yaml")
        let tls = try #require(parsed.tls)
        #expect(tls.port == 8443)
        #expect(!tls.only)
        #expect(tls.priorities == nil)
        #expect(tls.certificate.serialNumber == first.serialNumber)
        #expect(tls.certificate.chainLength == 2)
        #expect(tls.keyFileWarning == nil)
        #expect(
            refusal(yaml("certificate: x\nkey: y").replacingOccurrences(of: "  tls:\n", with: "  tlz:\n"))?.contains(
                "unknown key 'tlz'") == true)

        let only = try ConfigurationFile.parse(
            yaml(
                "certificate: \(first.certificateURL.path)\nkey: \(first.keyURL.path)\nport: 9443\nonly: true\n"
                    + "host: \"::1\"\n"
                    + "priorities: \"NORMAL:-VERS-TLS1.0:-VERS-TLS1.1\""), source: "test.yaml")
        #expect(only.tls?.port == 9443)
        #expect(only.tls?.only == true)
        #expect(only.tls?.host == "::1")
        #expect(only.tls?.priorities == "NORMAL:-VERS-TLS1.0:-VERS-TLS1.1")
        #expect(try ConfigurationFile.parse("server: {port: 8080}\n").tls == nil)
    }

    @Test("server.tls refusals say which file and why: missing, not PEM, key not matching, unknown key, bad port")
    func refusesUnusableTLSSettings() throws {
        let other = try authority.issue(name: "other", serial: 0x2002)
        let missing = directory.appendingPathComponent("missing.pem").path
        #expect(
            refusal(yaml("key: \(first.keyURL.path)"))
                == "test.yaml: server.tls.certificate is required (a PEM certificate chain file)")
        #expect(
            refusal(yaml("certificate: \(first.certificateURL.path)"))
                == "test.yaml: server.tls.key is required (a PEM private key file)")
        #expect(
            refusal(yaml("certificate: \(missing)\nkey: \(first.keyURL.path)"))
                == "test.yaml: server.tls.certificate: cannot read \(missing): No such file or directory")
        #expect(
            refusal(yaml("certificate: \(first.certificateURL.path)\nkey: \(directory.path)"))?.hasPrefix(
                "test.yaml: server.tls.key: cannot read \(directory.path): ") == true)
        let notPEM = directory.appendingPathComponent("notes.txt")
        try Data("hello\n".utf8).write(to: notPEM)
        #expect(
            refusal(yaml("certificate: \(notPEM.path)\nkey: \(first.keyURL.path)"))
                == "test.yaml: server.tls: \(notPEM.path) and \(first.keyURL.path) cannot be used: certificate: no PEM "
                + "certificate (-----BEGIN CERTIFICATE-----)")
        let mismatch = refusal(yaml("certificate: \(first.certificateURL.path)\nkey: \(other.keyURL.path)"))
        #expect(mismatch?.contains("cannot be used: certificate and key: ") == true, "\(mismatch ?? "accepted")")
        #expect(mismatch?.contains("do not match") == true, "\(mismatch ?? "accepted")")
        // Never key material in a message.
        let keyText = try String(contentsOf: other.keyURL, encoding: .utf8)
        let keyLine = try #require(keyText.split(separator: "\n").dropFirst().first)
        #expect(mismatch?.contains(keyLine) == false)
        #expect(
            refusal(yaml("certificate: \(first.certificateURL.path)\nkey: \(first.keyURL.path)\nport: 70000"))
                == "test.yaml: server.tls.port 70000 out of range")
        #expect(
            refusal(yaml("certificate: \(first.certificateURL.path)\nkey: \(first.keyURL.path)\ncert: x"))?.contains(
                "unknown key 'cert'") == true)
        // A key others can read is accepted, with a warning for the log.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: other.keyURL.path)
        let readable = try ConfigurationFile.parse(
            yaml("certificate: \(other.certificateURL.path)\nkey: \(other.keyURL.path)"), source: "test.yaml")
        #expect(readable.tls?.keyFileWarning?.contains("can be read by other users (mode 644)") == true)
    }

    func curl(_ arguments: [String]) throws -> ToolOutput {
        try ChildProcess.runBlocking("curl", ["-sS", "--max-time", "10"] + arguments, in: directory)
    }

    @Test(
        "HTTP and HTTPS serve the same routes; a reload renews the certificate, and one that does not load is refused",
        .timeLimit(.minutes(1)))
    func listenersSideBySideAndRenewal() throws {
        let configURL = directory.appendingPathComponent("config.yaml")
        let certificate = directory.appendingPathComponent("server.pem")
        let key = directory.appendingPathComponent("server.key")
        func install(_ issued: TestCertificateAuthority.Issued) throws {
            try? FileManager.default.removeItem(at: certificate)
            try? FileManager.default.removeItem(at: key)
            try FileManager.default.copyItem(at: issued.chainURL, to: certificate)
            try FileManager.default.copyItem(at: issued.keyURL, to: key)
        }
        try install(first)
        try Data(yaml("certificate: \(certificate.path)\nkey: \(key.path)\nport: 0").utf8).write(to: configURL)
        let source: @Sendable () throws -> ServerConfiguration = { [configURL] in
            try ConfigurationFile.load(path: configURL.path)
        }
        let service = try OriginService(configuration: try source(), source: source, logger: Self.logger)
        try service.startListening()
        #expect(service.port > 0 && service.tlsPort > 0 && service.port != service.tlsPort)
        let https = "https://localhost:\(service.tlsPort)"
        let ca = ["--cacert", authority.certificateURL.path]

        // The same routes on both; the admin API's loopback rule holds over TLS too.
        for url in ["http://127.0.0.1:\(service.port)", https] {
            let health = try curl(ca + ["-w", " %{http_code}", "\(url)/healthz"])
            #expect(health.standardOutput.hasSuffix(" 200"), "\(url): \(health.standardOutput) \(health.standardError)")
            let admin = try curl(ca + ["-o", "/dev/null", "-w", "%{http_code}", "\(url)/admin/channels"])
            #expect(admin.standardOutput == "200", "\(url): \(admin.standardError)")
        }
        #expect(try authority.servedSerialNumber(port: service.tlsPort) == first.serialNumber)

        // Renewed files, then a reload: new connections see the new certificate.
        let renewed = try authority.issue(name: "renewed", serial: 0x3003)
        try install(renewed)
        let answer = try curl(ca + ["-X", "POST", "-w", " %{http_code}", "\(https)/admin/reload"])
        #expect(answer.standardOutput.hasSuffix(" 200"), "\(answer.standardOutput)")
        #expect(answer.standardOutput.contains(#""serial" : "\#(renewed.serialNumber)""#), "\(answer.standardOutput)")
        #expect(try authority.servedSerialNumber(port: service.tlsPort) == renewed.serialNumber)

        // A key that is not the certificate's: 422 with the reason, the renewed certificate stays.
        try FileManager.default.removeItem(at: key)
        try FileManager.default.copyItem(at: first.keyURL, to: key)
        let refused = try curl(ca + ["-X", "POST", "-w", " %{http_code}", "\(https)/admin/reload"])
        #expect(refused.standardOutput.hasSuffix(" 422"), "\(refused.standardOutput)")
        #expect(refused.standardOutput.contains("do not match"), "\(refused.standardOutput)")
        #expect(try authority.servedSerialNumber(port: service.tlsPort) == renewed.serialNumber)
        #expect(try curl(ca + ["-w", " %{http_code}", "\(https)/healthz"]).standardOutput.hasSuffix(" 200"))
    }
}
