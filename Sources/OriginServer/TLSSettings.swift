import Glibc
public import MicroHTTPD

/// `server.tls`: an HTTPS listener beside the HTTP one (or instead of it, with `only`), serving the same routes.
/// The certificate and key are read and checked when the configuration is loaded, so a file that is missing, not
/// PEM, or a key that does not match stops the start (or a reload) with the reason.
public struct TLSSettings: Sendable {
    /// PEM certificate chain, leaf first (`server.tls.certificate`); a relative path is from the working directory.
    public var certificatePath: String
    /// PEM private key, unencrypted (`server.tls.key`): keep it mode 0600, owned by the user the origin runs as.
    public var keyPath: String
    /// HTTPS port (`server.tls.port`). Default: 8443 (0 picks a free one).
    public var port: Int = 8443
    /// Address the HTTPS listener binds (`server.tls.host`); nil: `server.host`. Lets HTTP stay on loopback while
    /// HTTPS faces the network. Default: nil.
    public var host: String?
    /// HTTPS only: no HTTP listener at all (`server.tls.only`). Default: false.
    public var only: Bool = false
    /// GnuTLS priority string (`server.tls.priorities`); nil: libmicrohttpd's default. Default: nil.
    public var priorities: String?
    /// What was read from the two files, checked.
    public var certificate: TLSCertificate
    /// Set when the key file can be read by other users than its owner (said in the log at start and reload).
    public var keyFileWarning: String?

    /// - Parameters: see the properties.
    public init(
        certificatePath: String, keyPath: String, certificate: TLSCertificate, port: Int = 8443, host: String? = nil,
        only: Bool = false, priorities: String? = nil, keyFileWarning: String? = nil
    ) {
        self.host = host
        self.certificatePath = certificatePath
        self.keyPath = keyPath
        self.certificate = certificate
        self.port = port
        self.only = only
        self.priorities = priorities
        self.keyFileWarning = keyFileWarning
    }

    /// Reads `certificatePath` and `keyPath` and checks them (`TLSCertificate`).
    /// - Throws: `ConfigurationError` naming the file and the reason (missing, unreadable, not PEM, encrypted key,
    ///   key not matching the certificate). The message never contains key material.
    public static func load(
        certificatePath: String, keyPath: String, label: String = "server.tls"
    ) throws -> (certificate: TLSCertificate, keyFileWarning: String?) {
        let chain = try read(certificatePath, label: "\(label).certificate")
        var key = try read(keyPath, label: "\(label).key")
        defer { key.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        let certificate: TLSCertificate
        do {
            certificate = try TLSCertificate(certificateChainPEM: chain, keyPEM: key)
        } catch {
            throw ConfigurationError(
                "\(label): \(certificatePath) and \(keyPath) cannot be used: \(error)")
        }
        var status = stat()
        var warning: String?
        if stat(keyPath, &status) == 0, status.st_mode & 0o077 != 0 {
            warning =
                "\(label).key \(keyPath) can be read by other users (mode \(String(status.st_mode & 0o777, radix: 8))):"
                + " chmod 600 it"
        }
        return (certificate, warning)
    }

    /// The whole file, or a `ConfigurationError` with the system's reason.
    private static func read(_ path: String, label: String) throws -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw ConfigurationError("\(label): cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw ConfigurationError("\(label): cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            bytes += buffer[0..<count]
            guard bytes.count <= 1024 * 1024 else {
                throw ConfigurationError("\(label): \(path) is larger than 1 MiB: not a PEM certificate or key")
            }
        }
        buffer.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
        return bytes
    }
}
