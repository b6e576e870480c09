public import Foundation

/// A throwaway certificate authority made with the real `openssl` command in a test's directory, and the server
/// certificates it signs (ECDSA P-256, valid for two days, for `localhost` and `127.0.0.1`). Each `openssl` run takes
/// milliseconds, so tests make their own instead of keeping keys in fixtures.
public struct TestCertificateAuthority: Sendable {
    /// The directory holding the CA's files and the certificates it issued.
    public let directory: URL
    /// The CA certificate (PEM): what a client trusts (`curl --cacert`, ffmpeg `-ca_file`).
    public let certificateURL: URL
    private let keyURL: URL

    /// A server certificate and its key, as files.
    public struct Issued: Sendable {
        /// The certificate (PEM), the leaf alone.
        public let certificateURL: URL
        /// The leaf followed by the CA certificate (PEM): a chain as a server sends it.
        public let chainURL: URL
        /// The private key (PEM, unencrypted, mode 0600).
        public let keyURL: URL
        /// The serial number, lowercase hex as GnuTLS and `openssl x509 -serial` print it.
        public let serialNumber: String
        /// The subject's common name.
        public let commonName: String
    }

    /// Makes a CA named `name` in `directory`.
    public static func make(in directory: URL, name: String = "hlsorigin test CA") throws -> TestCertificateAuthority {
        let certificate = directory.appendingPathComponent("ca.pem")
        let key = directory.appendingPathComponent("ca.key")
        try openssl(
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key.path,
                "-out", certificate.path, "-subj", "/CN=\(name)", "-days", "2",
            ], in: directory)
        return TestCertificateAuthority(directory: directory, certificateURL: certificate, keyURL: key)
    }

    /// Issues a server certificate for `localhost` and `127.0.0.1`, with the files named `<name>.pem`,
    /// `<name>-chain.pem` and `<name>.key`.
    /// - Parameters:
    ///   - serial: the serial number (distinct serials tell a renewed certificate from the old one).
    ///   - commonName: the subject's CN.
    public func issue(name: String, serial: UInt32, commonName: String = "localhost") throws -> Issued {
        let key = directory.appendingPathComponent("\(name).key")
        let request = directory.appendingPathComponent("\(name).csr")
        let certificate = directory.appendingPathComponent("\(name).pem")
        let chain = directory.appendingPathComponent("\(name)-chain.pem")
        let extensions = directory.appendingPathComponent("\(name).ext")
        try Data(
            """
            subjectAltName = DNS:localhost, IP:127.0.0.1
            basicConstraints = CA:FALSE
            keyUsage = digitalSignature
            extendedKeyUsage = serverAuth

            """.utf8
        ).write(to: extensions)
        try Self.openssl(
            [
                "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key.path, "-out",
                request.path, "-subj", "/CN=\(commonName)",
            ], in: directory)
        let serialText = String(serial, radix: 16)
        try Self.openssl(
            [
                "x509", "-req", "-in", request.path, "-CA", certificateURL.path, "-CAkey", keyURL.path,
                "-set_serial", "0x\(serialText)", "-days", "2", "-extfile", extensions.path, "-out", certificate.path,
            ], in: directory)
        try Data(contentsOf: certificate).appending(try Data(contentsOf: certificateURL)).write(to: chain)
        // An even number of hex digits, as a DER integer's bytes (a leading 0 when its top bit would be set).
        var hex = serialText.count % 2 == 1 ? "0" + serialText : serialText
        if let first = hex.first, let digit = Int(String(first), radix: 16), digit >= 8 { hex = "00" + hex }
        return Issued(
            certificateURL: certificate, chainURL: chain, keyURL: key, serialNumber: hex, commonName: commonName)
    }

    /// The serial number (lowercase hex) of the certificate a new TLS connection to 127.0.0.1:`port` is shown,
    /// verified against this CA (`openssl s_client`); "" when the handshake fails.
    public func servedSerialNumber(port: Int) throws -> String {
        Self.serial(from: try ChildProcess.runBlocking("sh", ["-c", servedSerialCommand(port: port)], in: directory))
    }

    /// `servedSerialNumber(port:)` for asynchronous tests.
    public func servedSerialNumber(port: Int) async throws -> String {
        Self.serial(from: try await ChildProcess.run("sh", ["-c", servedSerialCommand(port: port)], in: directory))
    }

    private func servedSerialCommand(port: Int) -> String {
        "openssl s_client -connect 127.0.0.1:\(port) -CAfile \(certificateURL.path) -verify_return_error </dev/null "
            + "2>/dev/null | openssl x509 -noout -serial"
    }

    /// "serial=1001" -> "1001".
    private static func serial(from output: ToolOutput) -> String {
        output.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
            .replacingOccurrences(of: "serial=", with: "")
    }

    /// Runs `openssl` and fails with its message when it fails.
    @discardableResult
    public static func openssl(_ arguments: [String], in directory: URL) throws -> String {
        let output = try ChildProcess.runBlocking("openssl", arguments, in: directory, timeout: .seconds(30))
        guard output.status == 0 else {
            throw TestFailure(
                "openssl \(arguments.joined(separator: " ")) failed (\(output.status)): \(output.standardError)")
        }
        return output.standardOutput
    }
}

extension Data {
    fileprivate func appending(_ other: Data) -> Data {
        var joined = self
        joined.append(other)
        return joined
    }
}
