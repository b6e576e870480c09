import MicroHTTPD

extension ConfigurationFile {
    /// `server.tls: { certificate, key, port, only, priorities }`: an HTTPS listener (docs/security.md, "TLS").
    struct TLSModel: StrictKeys {
        var certificate: String?
        var key: String?
        var port: Int?
        var host: String?
        var only: Bool?
        var priorities: String?
        enum CodingKeys: String, CodingKey, CaseIterable { case certificate, key, port, host, only, priorities }

        /// The settings, with both files read and checked.
        func settings(source: String) throws -> TLSSettings {
            guard let certificate, !certificate.isEmpty else {
                throw ConfigurationError("\(source): server.tls.certificate is required (a PEM certificate chain file)")
            }
            guard let key, !key.isEmpty else {
                throw ConfigurationError("\(source): server.tls.key is required (a PEM private key file)")
            }
            let port = port ?? 8443
            guard ServerConfiguration.validPorts.contains(port) else {
                throw ConfigurationError("\(source): server.tls.port \(port) out of range")
            }
            if let host, host.isEmpty {
                throw ConfigurationError("\(source): server.tls.host is empty (leave it out for server.host)")
            }
            if let priorities, priorities.isEmpty {
                throw ConfigurationError("\(source): server.tls.priorities is empty (leave it out for the default)")
            }
            let loaded: (certificate: TLSCertificate, keyFileWarning: String?)
            do {
                loaded = try TLSSettings.load(certificatePath: certificate, keyPath: key)
            } catch {
                throw ConfigurationError("\(source): \(error)")
            }
            return TLSSettings(
                certificatePath: certificate, keyPath: key, certificate: loaded.certificate, port: port, host: host,
                only: only ?? false, priorities: priorities, keyFileWarning: loaded.keyFileWarning)
        }
    }
}
