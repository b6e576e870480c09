/// VIDEO-RANGE of EXT-X-STREAM-INF / EXT-X-I-FRAME-STREAM-INF (RFC 8216bis section 4.4.6.2).
public enum HLSVideoRange: String, Sendable, Hashable, CaseIterable {
    case sdr = "SDR"
    case hlg = "HLG"
    case pq = "PQ"
}

extension HLSVideoRange {
    /// The range an ITU-T H.273 TransferCharacteristics code point stands for (RFC 8216bis section 4.4.6.2): 16
    /// (SMPTE ST 2084) is PQ, 18 (ARIB STD-B67) HLG, every other value (1, 6, 13, 14, 15 named by RFC 8216bis, 2
    /// unspecified) SDR.
    public init(transferCharacteristics: UInt8) {
        switch transferCharacteristics {
        case 16: self = .pq
        case 18: self = .hlg
        default: self = .sdr
        }
    }
}

/// The video attributes EXT-X-STREAM-INF and EXT-X-I-FRAME-STREAM-INF share: SUPPLEMENTAL-CODECS, VIDEO-RANGE,
/// HDCP-LEVEL and ALLOWED-CPC (rendered in that order, each only when set).
public struct VideoAttributes: Sendable, Hashable {
    public var supplementalCodecs: [String]
    public var videoRange: HLSVideoRange?
    public var hdcpLevel: HDCPLevel?
    public var allowedCPC: AllowedCPC?

    public init(
        supplementalCodecs: [String] = [], videoRange: HLSVideoRange? = nil, hdcpLevel: HDCPLevel? = nil,
        allowedCPC: AllowedCPC? = nil
    ) {
        self.supplementalCodecs = supplementalCodecs
        self.videoRange = videoRange
        self.hdcpLevel = hdcpLevel
        self.allowedCPC = allowedCPC
    }
}

/// A stream listed with the video attributes: ``VariantStream`` and ``IFrameStream``.
public protocol VideoAttributed {
    var supplementalCodecs: [String] { get set }
    var videoRange: HLSVideoRange? { get set }
    var hdcpLevel: HDCPLevel? { get set }
    var allowedCPC: AllowedCPC? { get set }
}

extension VideoAttributed {
    /// The four video attributes as one value, read and set together (a variant and its I-frame stream take the
    /// same ones).
    public var videoAttributes: VideoAttributes {
        get {
            VideoAttributes(
                supplementalCodecs: supplementalCodecs, videoRange: videoRange, hdcpLevel: hdcpLevel,
                allowedCPC: allowedCPC)
        }
        set {
            supplementalCodecs = newValue.supplementalCodecs
            videoRange = newValue.videoRange
            hdcpLevel = newValue.hdcpLevel
            allowedCPC = newValue.allowedCPC
        }
    }
}

extension VariantStream: VideoAttributed {}
extension IFrameStream: VideoAttributed {}

/// HDCP-LEVEL of EXT-X-STREAM-INF / EXT-X-I-FRAME-STREAM-INF: the output protection a client must apply.
public enum HDCPLevel: String, Sendable, Hashable, CaseIterable {
    /// Play only over HDCP Type 0 (or better) protected outputs.
    case type0 = "TYPE-0"
    /// Play only over HDCP 2.2 Type 1 protected outputs.
    case type1 = "TYPE-1"
    /// No output protection needed.
    case none = "NONE"
}

/// ALLOWED-CPC of EXT-X-STREAM-INF: per key format, the Content Protection Configuration labels that may play the
/// variant, e.g. `com.apple.streamingkeydelivery:AppleMain/Main,com.microsoft.playready:SL2000`.
public struct AllowedCPC: Sendable, Hashable {
    /// One key format and its CPC labels.
    public struct Entry: Sendable, Hashable {
        /// A KEYFORMAT value (`com.apple.streamingkeydelivery`, `urn:uuid:...`).
        public var keyFormat: String
        /// CPC labels: letters, digits and `-` (RFC 8216bis: `[A-Z0-9-]`; lowercase taken too, as Apple's
        /// `AppleMain`), at least one.
        public var labels: [String]
    }

    public var entries: [Entry]

    /// The longest ALLOWED-CPC value taken (a configuration value, not a stream fact).
    public static let maximumLength = 1024

    /// Parses and validates the attribute's value. Each comma-separated entry is a key format, a colon, and
    /// slash-separated labels of `[A-Za-z0-9-]`; the key format (split at the entry's last colon, since `urn:uuid:`
    /// formats contain colons) is printable ASCII without spaces, quotes or commas. Throws a message naming the fault.
    public init(_ value: String) throws(AllowedCPCError) {
        guard !value.isEmpty else { throw AllowedCPCError("ALLOWED-CPC is empty") }
        guard value.utf8.count <= Self.maximumLength else {
            throw AllowedCPCError("ALLOWED-CPC is longer than \(Self.maximumLength) bytes")
        }
        var entries: [Entry] = []
        for part in value.split(separator: ",", omittingEmptySubsequences: false) {
            guard let colon = part.lastIndex(of: ":") else {
                throw AllowedCPCError("ALLOWED-CPC entry '\(part)' has no KEYFORMAT:LABEL colon")
            }
            let keyFormat = String(part[..<colon])
            let isKeyFormatByte = { (byte: UInt8) in byte > 0x20 && byte < 0x7F && byte != 0x22 && byte != 0x2C }
            guard !keyFormat.isEmpty, keyFormat.utf8.allSatisfy(isKeyFormatByte) else {
                throw AllowedCPCError("ALLOWED-CPC entry '\(part)' has an empty or invalid KEYFORMAT")
            }
            let labels = part[part.index(after: colon)...].split(separator: "/", omittingEmptySubsequences: false)
            let isLabelByte = { (byte: UInt8) in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == 0x2D
            }
            guard labels.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy(isLabelByte) }) else {
                throw AllowedCPCError(
                    "ALLOWED-CPC entry '\(part)': CPC labels are letters, digits and '-', '/'-separated")
            }
            entries.append(Entry(keyFormat: keyFormat, labels: labels.map(String.init)))
        }
        self.entries = entries
    }

    /// The attribute value (unquoted).
    public var rendered: String {
        entries.map { $0.keyFormat + ":" + $0.labels.joined(separator: "/") }.joined(separator: ",")
    }
}

/// Why an ALLOWED-CPC value was refused.
public struct AllowedCPCError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
