/// What the origin tells CDNs and players about its answers (CMSD, CTA-5006) and reads from players (CMCD,
/// CTA-5004): `delivery:` in the configuration file (docs/cmsd-cmcd.md).
public struct DeliveryConfiguration: Sendable, Equatable {
    /// `CMSD-Static` on every answer (and `CMSD-Dynamic` on held blocking reloads). Default: true.
    public var cmsd = true
    /// The origin's id, CMSD's `n` (printable ASCII, at most 64 characters). Default: `hlsorigin`; give each origin
    /// of a redundancy group its own.
    public var originID = "hlsorigin"
    /// CMCD read from players' requests (the `CMCD` query argument, the `CMCD-*` headers) counted per channel in
    /// `/metrics`. Default: true.
    public var cmcdMetrics = true
    /// Each request's CMCD (the checked values, never the raw text) logged at info level. Default: false.
    public var cmcdLog = false

    public init() {}

    /// Longest origin id.
    public static let maximumOriginIDLength = 64
}

extension ConfigurationFile {
    /// `delivery: { cmsd, originId, cmcd: { metrics, log } }`.
    struct DeliveryModel: StrictKeys {
        var cmsd: Bool?
        var originId: String?
        var cmcd: CMCDModel?
        enum CodingKeys: String, CodingKey, CaseIterable { case cmsd, originId, cmcd }

        func configuration(source: String) throws -> DeliveryConfiguration {
            var delivery = DeliveryConfiguration()
            delivery.cmsd = cmsd ?? delivery.cmsd
            if let originId {
                guard !originId.isEmpty, originId.utf8.count <= DeliveryConfiguration.maximumOriginIDLength,
                    originId.utf8.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E })
                else {
                    throw ConfigurationError(
                        "\(source): delivery.originId must be 1 to \(DeliveryConfiguration.maximumOriginIDLength) "
                            + "printable ASCII characters (it is sent in CMSD-Static as n=\"...\")")
                }
                delivery.originID = originId
            }
            delivery.cmcdMetrics = cmcd?.metrics ?? delivery.cmcdMetrics
            delivery.cmcdLog = cmcd?.log ?? delivery.cmcdLog
            return delivery
        }
    }

    /// `delivery.cmcd: { metrics, log }`.
    struct CMCDModel: StrictKeys {
        var metrics: Bool?
        var log: Bool?
        enum CodingKeys: String, CodingKey, CaseIterable { case metrics, log }
    }
}
