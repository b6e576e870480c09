public import SRTInput

extension ConfigurationFile {
    /// `ingest.srt`: the SRT listener (docs/srt.md).
    struct SRTModel: StrictKeys {
        var port: Int?
        var host: String?
        var latencyMilliseconds: Int?
        var passphrase: String?
        var maxCallers: Int?
        var idleTimeoutMilliseconds: Int?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case port, host, latencyMilliseconds, passphrase, maxCallers, idleTimeoutMilliseconds
        }

        func configuration(source: String) throws -> SRTConfiguration {
            func fail(_ message: String) -> ConfigurationError { ConfigurationError("\(source): ingest.srt.\(message)") }
            guard let port else { throw fail("port is required") }
            guard (0...65_535).contains(port) else { throw fail("port \(port) out of range") }
            var srt = SRTConfiguration(port: port)
            srt.host = host ?? srt.host
            srt.latencyMilliseconds = latencyMilliseconds ?? srt.latencyMilliseconds
            guard (20...10_000).contains(srt.latencyMilliseconds) else {
                throw fail("latencyMilliseconds must be 20-10000 (SRT's default 120; 4 x the RTT on lossy paths)")
            }
            if let passphrase, !SRTAccessRules.passphraseLengths.contains(passphrase.utf8.count) {
                throw fail("passphrase must be 10-79 characters (an SRT passphrase)")
            }
            srt.passphrase = passphrase
            srt.maxCallers = maxCallers ?? srt.maxCallers
            guard (1...1_000).contains(srt.maxCallers) else { throw fail("maxCallers must be 1-1000") }
            srt.idleTimeoutMilliseconds = idleTimeoutMilliseconds ?? srt.idleTimeoutMilliseconds
            guard (100...60_000).contains(srt.idleTimeoutMilliseconds) else {
                throw fail("idleTimeoutMilliseconds must be 100-60000")
            }
            return srt
        }
    }
}

extension SRTAccessRules {
    /// The ingest grants of the configuration's tokens, for SRT callers.
    public init(configuration: ServerConfiguration) { self.init(configuration) }

    init(_ configuration: ServerConfiguration) {
        let access = configuration.accessWithLegacyTokens
        self.init(
            secrets: Dictionary(access.tokens.map { ($0.name, $0.secret) }, uniquingKeysWith: { first, _ in first }),
            ingest: Set(access.ingest), channels: access.channels.mapValues(Set.init),
            renditions: access.renditions.mapValues { $0.mapValues(Set.init) },
            passphrase: configuration.srt?.passphrase)
    }
}
