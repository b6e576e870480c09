import Foundation
import MicroHTTPD
import SharedBytes
import TestSupport
import Testing

/// HTTPS listeners (GnuTLS through libmicrohttpd) with certificates made by `openssl` for the test, read by curl and
/// `openssl s_client`.
@Suite("TLS: HTTPS listeners, certificate checks, certificate replaced while running", .offThePool)
struct TLSServerTests {
    let directory: URL
    let authority: TestCertificateAuthority
    let first: TestCertificateAuthority.Issued

    init() throws {
        directory = try TemporaryDirectory.make("microhttpd-tls")
        authority = try TestCertificateAuthority.make(in: directory)
        first = try authority.issue(name: "first", serial: 0x1001)
    }

    static func certificate(_ issued: TestCertificateAuthority.Issued, chain: Bool = false) throws -> TLSCertificate {
        try TLSCertificate(
            certificateChainPEM: Array(try Data(contentsOf: chain ? issued.chainURL : issued.certificateURL)),
            keyPEM: Array(try Data(contentsOf: issued.keyURL)))
    }

    /// Starts an HTTPS server on 127.0.0.1 with `credentials`, runs `body` with its port, stops it.
    func withTLSServer<R>(
        _ credentials: TLSCredentials, priorities: String? = nil,
        _ handler: @escaping @Sendable (HTTPRequestHead) -> HTTPRequestAction, _ body: (Int) throws -> R
    ) throws -> R {
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, threadCount: 2)
        configuration.tls = TLSConfiguration(credentials: credentials, priorities: priorities)
        let server = HTTPServer(configuration: configuration, handler: handler)
        try server.start()
        defer { server.stop() }
        #expect(server.isTLS)
        return try body(server.boundPort)
    }

    func curl(_ arguments: [String]) throws -> ToolOutput {
        try ChildProcess.runBlocking("curl", ["-sS", "--max-time", "10"] + arguments, in: directory)
    }

    @Test("a client that trusts the CA is answered; the request is marked TLS and keeps its loopback address")
    func answersOverTLS() throws {
        let certificate = try Self.certificate(first, chain: true)
        #expect(certificate.serialNumber == first.serialNumber)
        #expect(certificate.subject == "CN=localhost")
        #expect(certificate.issuer == "CN=hlsorigin test CA")
        #expect(certificate.chainLength == 2)
        let seen = Recorder<String>()
        try withTLSServer(TLSCredentials(certificate)) { head in
            seen.record("\(head.isTLS) \(head.isLoopback) \(head.remoteAddress ?? "-")")
            return .respond(.text(200, "hello over TLS\n"))
        } _: { port in
            let answer = try curl([
                "--cacert", authority.certificateURL.path, "-w", "%{http_code} %{ssl_verify_result}",
                "https://localhost:\(port)/hello",
            ])
            #expect(answer.status == 0, "\(answer.standardError)")
            #expect(answer.standardOutput == "hello over TLS\n200 0")
            #expect(seen.all == ["true true 127.0.0.1"])
            #expect(try authority.servedSerialNumber(port: port) == first.serialNumber)

            // Without the CA the client refuses the server (curl: 60, peer certificate cannot be authenticated).
            let refused = try curl(["https://localhost:\(port)/hello"])
            #expect(refused.status == 60, "\(refused.status) \(refused.standardError)")
            // Plain HTTP to the HTTPS port gets no HTTP answer.
            let plain = try curl(["-w", "%{http_code}", "http://127.0.0.1:\(port)/hello"])
            #expect(plain.status != 0 && !plain.standardOutput.hasPrefix("2"), "\(plain.standardOutput)")
        }
    }

    @Test(
        "a key that is not the certificate's, a file that is not PEM and an encrypted key are refused with the reason")
    func unusableCertificatesAreRefused() throws {
        let other = try authority.issue(name: "other", serial: 0x2002)
        let certificate = Array(try Data(contentsOf: first.certificateURL))
        let otherKey = Array(try Data(contentsOf: other.keyURL))
        #expect {
            try TLSCertificate(certificateChainPEM: certificate, keyPEM: otherKey)
        } throws: { error in
            "\(error)".contains("certificate and key") && "\(error)".contains("do not match")
        }
        #expect {
            try TLSCertificate(certificateChainPEM: Array("not a certificate".utf8), keyPEM: otherKey)
        } throws: { "\($0)" == "certificate: no PEM certificate (-----BEGIN CERTIFICATE-----)" }
        #expect {
            try TLSCertificate(certificateChainPEM: certificate, keyPEM: certificate)
        } throws: { "\($0)".hasPrefix("private key: no PEM private key") }
        // A damaged certificate: GnuTLS's reason.
        var damaged = certificate
        damaged[100] = UInt8(ascii: "!")
        #expect {
            try TLSCertificate(certificateChainPEM: damaged, keyPEM: Array(try Data(contentsOf: first.keyURL)))
        } throws: { "\($0)".hasPrefix("certificate: ") }
        let encrypted = directory.appendingPathComponent("encrypted.key")
        try TestCertificateAuthority.openssl(
            ["pkcs8", "-topk8", "-in", first.keyURL.path, "-out", encrypted.path, "-passout", "pass:secret"],
            in: directory)
        #expect {
            try TLSCertificate(certificateChainPEM: certificate, keyPEM: Array(try Data(contentsOf: encrypted)))
        } throws: { "\($0)".contains("the key is encrypted") }
        // An unknown priority string: libmicrohttpd refuses to start and says why.
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.tls = TLSConfiguration(
            credentials: TLSCredentials(try Self.certificate(first)), priorities: "NO-SUCH-PRIORITY")
        let server = HTTPServer(configuration: configuration, handler: { _ in .respond(.text(200, "")) })
        #expect {
            try server.start()
        } throws: { error in
            "\(error)".hasPrefix("could not start the HTTPS server on 127.0.0.1 port 0: ")
                && "\(error)".contains("priorit")
        }
    }

    @Test("a replaced certificate is shown to new connections while a keep-alive connection goes on")
    func replacedCertificateReachesNewConnections() throws {
        let renewed = try authority.issue(name: "renewed", serial: 0x3003)
        let credentials = TLSCredentials(try Self.certificate(first))
        let renewedCertificate = try Self.certificate(renewed)
        try withTLSServer(credentials) { head in
            // The first request renews the certificate before it is answered; the second comes on the same
            // connection.
            if head.path == "/renew" { credentials.replace(with: renewedCertificate) }
            return .respond(.text(200, "\(head.path)\n"))
        } _: { port in
            #expect(try authority.servedSerialNumber(port: port) == first.serialNumber)
            let answer = try curl([
                "--cacert", authority.certificateURL.path, "-w", "connects=%{num_connects} %{http_code}\n",
                "https://localhost:\(port)/renew", "https://localhost:\(port)/after",
            ])
            #expect(answer.status == 0, "\(answer.standardError)")
            #expect(answer.standardOutput == "/renew\nconnects=1 200\n/after\nconnects=0 200\n")
            #expect(try authority.servedSerialNumber(port: port) == renewed.serialNumber)
            #expect(credentials.certificate.serialNumber == renewed.serialNumber)
        }
    }

    @Test("an answer given in the middle of a streamed upload reaches the client over TLS, then the connection ends")
    func earlyAnswerMidBodyOverTLS() throws {
        try withTLSServer(TLSCredentials(try Self.certificate(first))) { _ in
            .streamBody(limit: 64 * 1024 * 1024, receiver: EarlyRefusal())
        } _: { port in
            // The head and one chunk of a body that never ends; s_client prints what comes back until the server
            // ends the connection (-ign_eof: not when its input ends).
            let request =
                #"PUT /ingest HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n"#
            let answer = try ChildProcess.runBlocking(
                "sh",
                [
                    "-c",
                    "printf '\(request)' | openssl s_client -quiet -ign_eof -connect 127.0.0.1:\(port) "
                        + "-CAfile \(authority.certificateURL.path) -verify_return_error",
                ], in: directory, timeout: .seconds(20))
            #expect(
                answer.standardOutput.hasPrefix("HTTP/1.1 422 "), "\(answer.standardOutput) \(answer.standardError)")
            #expect(answer.standardOutput.hasSuffix("\r\n\r\nrefused at the first piece\n"), "\(answer.standardOutput)")
            #expect(answer.standardOutput.contains("Connection: close\r\n"))
        }
    }
}

/// Answers 422 at the first piece of the body.
private final class EarlyRefusal: HTTPBodyReceiver {
    func receive(_ piece: UnsafeRawBufferPointer) -> HTTPResponse? { .text(422, "refused at the first piece\n") }
    func finish() -> HTTPResponse { .text(200, "whole body\n") }
    func abandon() {}
}
