import HLSCrypto

/// Who may push over SRT: the ingest tokens of the configuration (docs/security.md) read for SRT callers.
///
/// As for HTTP ingest, a channel/rendition no token grants takes loopback callers only. Where tokens grant it, the
/// caller proves one of them either by encrypting with its secret (the SRT passphrase; the stream id's `u=` names the
/// token, or may be left out when one token alone grants the rendition), or by the secret in the stream id (`s=` or
/// `token=`; sent in clear, so prefer the passphrase).
public struct SRTAccessRules: Sendable, Hashable {
    /// Token secrets by token name.
    public var secrets: [String: String]
    /// Names of the tokens that grant every channel (`ingest.tokens`).
    public var ingest: Set<String>
    /// By channel (a channel's `ingest.tokens`).
    public var channels: [String: Set<String>]
    /// By channel then rendition (a channel's `ingest.renditions`).
    public var renditions: [String: [String: Set<String>]]
    /// `ingest.srt.passphrase`: encrypts the callers that no token's passphrase is asked of (loopback callers, or
    /// callers with the token in the stream id).
    public var passphrase: String?

    public init(
        secrets: [String: String] = [:], ingest: Set<String> = [], channels: [String: Set<String>] = [:],
        renditions: [String: [String: Set<String>]] = [:], passphrase: String? = nil
    ) {
        self.secrets = secrets
        self.ingest = ingest
        self.channels = channels
        self.renditions = renditions
        self.passphrase = passphrase
    }

    /// The tokens that grant pushing into `channel`/`rendition`.
    public func grants(channel: String, rendition: String) -> Set<String> {
        ingest.union(channels[channel] ?? []).union(renditions[channel]?[rendition] ?? [])
    }

    /// SRT passphrases are 10 to 79 characters (SRTO_PASSPHRASE).
    public static let passphraseLengths = 10...79

    /// What a caller with this stream id, from a loopback address or not, is: admitted (with the passphrase its
    /// connection must use and the credential the audit log names) or refused with a reject code.
    public func decide(_ id: StreamID, loopback: Bool) -> Result<SRTAdmission, SRTRefusal> {
        let granted = grants(channel: id.channel, rendition: id.rendition)
        if let token = id.token {
            // Every token compared, none stopping at a match: the time says nothing about which one it is.
            let tokens = secrets.sorted { $0.key < $1.key }
            let matches = BearerSecret.matches(token.utf8, among: tokens.map { BearerSecret($0.value.utf8) })
            let name = zip(tokens, matches).first { $0.1 }?.0.key
            guard let name else {
                return .failure(SRTRefusal(code: SRTRefusal.unauthorized, message: "the token is not configured"))
            }
            guard granted.contains(name) else {
                return .failure(
                    SRTRefusal(
                        code: SRTRefusal.forbidden,
                        message: "token '\(name)' does not grant \(id.channel)/\(id.rendition)", reason: "wrong_token"))
            }
            return .success(SRTAdmission(credential: name, passphrase: passphrase))
        }
        if granted.isEmpty {
            guard loopback else {
                return .failure(
                    SRTRefusal(
                        code: SRTRefusal.forbidden,
                        message: "no ingest token is configured for \(id.channel)/\(id.rendition): loopback callers only",
                        reason: "forbidden_remote"))
            }
            if let user = id.user, secrets[user] != nil {
                // A token that grants something else, even from loopback, never reaches past its scope.
                return .failure(
                    SRTRefusal(
                        code: SRTRefusal.forbidden,
                        message: "token '\(user)' does not grant \(id.channel)/\(id.rendition)", reason: "wrong_token"))
            }
            return .success(SRTAdmission(credential: "loopback", passphrase: passphrase))
        }
        let name: String
        if let user = id.user {
            guard granted.contains(user) else {
                let known = secrets[user] != nil
                return .failure(
                    SRTRefusal(
                        code: known ? SRTRefusal.forbidden : SRTRefusal.unauthorized,
                        message: known
                            ? "token '\(user)' does not grant \(id.channel)/\(id.rendition)"
                            : "no token is named '\(user)'",
                        reason: known ? "wrong_token" : "unauthorized"))
            }
            name = user
        } else if granted.count == 1, let only = granted.first {
            name = only
        } else {
            return .failure(
                SRTRefusal(
                    code: SRTRefusal.unauthorized,
                    message:
                        "several tokens grant \(id.channel)/\(id.rendition): name the one whose secret is the passphrase"
                        + " with u=, or send it with s="))
        }
        guard let secret = secrets[name], Self.passphraseLengths.contains(secret.utf8.count) else {
            return .failure(
                SRTRefusal(
                    code: SRTRefusal.unauthorized,
                    message: "token '\(name)' cannot be an SRT passphrase (10-79 characters): send it with s="))
        }
        return .success(SRTAdmission(credential: name, passphrase: secret))
    }
}

/// An admitted caller: the credential the audit log and the status name, and the passphrase its connection is
/// encrypted with (nil: none; a caller that encrypts is then refused by SRT itself).
public struct SRTAdmission: Sendable, Hashable {
    public var credential: String
    public var passphrase: String?
}
