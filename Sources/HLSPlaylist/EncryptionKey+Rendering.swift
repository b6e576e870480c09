extension EncryptionKey {
    /// The attribute list after the tag's colon: `METHOD=NONE`, or `METHOD=AES-128,URI="…"` with `,IV=0x…` (32
    /// upper-case hex digits for 16 bytes) when an IV is set.
    var renderedAttributes: String {
        switch self {
        case .none:
            return "METHOD=NONE"
        case .aes128(let uri, let iv):
            var text = "METHOD=AES-128,URI=" + AttributeList.quoted(uri)
            if let iv {
                text += ",IV=" + NumberFormatting.hexadecimal(iv)
            }
            return text
        }
    }

    /// The `#EXT-X-KEY:` line of a media playlist, without a line break.
    public var renderedKeyTag: String { "#EXT-X-KEY:" + renderedAttributes }

    /// The `#EXT-X-SESSION-KEY:` line of a multivariant playlist, without a line break.
    public var renderedSessionKeyTag: String { "#EXT-X-SESSION-KEY:" + renderedAttributes }

    /// Whether this key encrypts (AES-128), as opposed to METHOD=NONE.
    public var encrypts: Bool {
        if case .aes128 = self { return true }
        return false
    }

    /// The lowest EXT-X-VERSION this key needs: 2 with an IV attribute, else 1.
    var minimumVersion: Int {
        if case .aes128(_, let iv) = self, iv != nil { return 2 }
        return 1
    }
}

extension EncryptionKey {
    /// Reads an EXT-X-KEY / EXT-X-SESSION-KEY attribute list: METHOD=NONE, or METHOD=AES-128 with URI (variables
    /// substituted) and an optional IV of 16 bytes; nil for other methods (SAMPLE-AES, SAMPLE-AES-CTR) and for a
    /// KEYFORMAT other than `identity`, which this model does not carry.
    static func parse(
        _ attributes: TagAttributes, variables: VariableTable
    ) throws(PlaylistParseError) -> EncryptionKey? {
        guard let method = try attributes.enumerated("METHOD") else { throw attributes.error("METHOD is required") }
        switch method {
        case "NONE":
            for name in ["URI", "IV", "KEYFORMAT", "KEYFORMATVERSIONS"] where attributes.has(name) {
                throw attributes.error("\(name) is not allowed with METHOD=NONE")
            }
            return EncryptionKey.none
        case "AES-128":
            if let format = try attributes.quoted("KEYFORMAT", variables: variables), format != "identity" {
                return nil
            }
            let uri = try attributes.requiredQuoted("URI", variables: variables)
            var iv: [UInt8]?
            if let raw = attributes.values["IV"] {
                guard raw.count == 34, let bytes = AttributeList.hexadecimalBytes(raw), bytes.count == 16 else {
                    throw attributes.error("IV must be 0x followed by 32 hexadecimal digits")
                }
                iv = bytes
            }
            return .aes128(uri: uri, iv: iv)
        case "SAMPLE-AES", "SAMPLE-AES-CTR":
            return nil
        default:
            throw attributes.error("METHOD must be NONE, AES-128, SAMPLE-AES or SAMPLE-AES-CTR")
        }
    }
}
