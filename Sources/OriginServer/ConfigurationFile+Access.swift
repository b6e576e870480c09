import Foundation
import OriginCore

/// `tokens:`, `limits:`, `admin.tokens`, `ingest.tokens` and a channel's `ingest:` (docs/security.md).
extension ConfigurationFile {
    /// `tokens:` one named bearer token: exactly one of `secret`, `secretFile` (its content, trailing whitespace
    /// dropped) or `secretEnv` (an environment variable's value). Errors name the token, never its secret.
    struct TokenModel: StrictKeys {
        var name: String?
        var secret: String?
        var secretFile: String?
        var secretEnv: String?
        enum CodingKeys: String, CodingKey, CaseIterable { case name, secret, secretFile, secretEnv }

        func token(source: String, environment: [String: String]) throws -> NamedToken {
            guard let name, !name.isEmpty else { throw ConfigurationError("\(source): a token has no name") }
            let label = "\(source): token '\(name)'"
            let given = [secret != nil, secretFile != nil, secretEnv != nil].filter { $0 }.count
            guard given == 1 else {
                throw ConfigurationError(
                    "\(label): give exactly one of secret, secretFile or secretEnv (\(given) given)")
            }
            var value: String
            if let secret {
                value = secret
            } else if let secretFile {
                guard let data = FileManager.default.contents(atPath: secretFile) else {
                    throw ConfigurationError("\(label): cannot read secretFile '\(secretFile)'")
                }
                value = String(decoding: data, as: UTF8.self)
                while let last = value.last, last.isWhitespace { value.removeLast() }
            } else {
                let variable = secretEnv ?? ""
                guard let fromEnvironment = environment[variable] else {
                    throw ConfigurationError("\(label): environment variable '\(variable)' (secretEnv) is not set")
                }
                value = fromEnvironment
            }
            guard !value.isEmpty else { throw ConfigurationError("\(label): the secret is empty") }
            guard value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw ConfigurationError(
                    "\(label): the secret must be printable ASCII without spaces (it is sent as a bearer token)")
            }
            return NamedToken(name: name, secret: value)
        }
    }

    /// A channel's `ingest:`: the tokens that may push into it (`tokens`) and into one of its renditions only
    /// (`renditions: {name: [tokens]}`).
    struct ChannelIngestModel: StrictKeys {
        var tokens: [String]?
        var renditions: [String: [String]]?
        enum CodingKeys: String, CodingKey, CaseIterable { case tokens, renditions }
    }

    /// `limits:` bounds on what pushes can make the origin hold (`OriginLimits`, defaults there).
    struct LimitsModel: StrictKeys {
        var channels: Int?
        var renditionsPerChannel: Int?
        var channelMemoryBytes: Int64?
        var channelDiskBytes: Int64?
        var autoCreationsPerMinute: Int?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case channels, renditionsPerChannel, channelMemoryBytes, channelDiskBytes, autoCreationsPerMinute
        }

        func limits(source: String) throws -> OriginLimits {
            var limits = OriginLimits()
            limits.channels = channels ?? limits.channels
            limits.renditionsPerChannel = renditionsPerChannel ?? limits.renditionsPerChannel
            limits.channelMemoryBytes = channelMemoryBytes ?? limits.channelMemoryBytes
            limits.channelDiskBytes = channelDiskBytes ?? limits.channelDiskBytes
            limits.autoCreationsPerMinute = autoCreationsPerMinute ?? limits.autoCreationsPerMinute
            guard limits.channels >= 1, limits.renditionsPerChannel >= 1, limits.channelMemoryBytes >= 1,
                limits.channelDiskBytes >= 1
            else {
                throw ConfigurationError(
                    "\(source): limits.channels, renditionsPerChannel, channelMemoryBytes and channelDiskBytes must be "
                        + "positive")
            }
            guard limits.autoCreationsPerMinute >= 0 else {
                throw ConfigurationError(
                    "\(source): limits.autoCreationsPerMinute must be >= 0 (0: no channel is created by a push)")
            }
            return limits
        }
    }
}

extension ConfigurationFile.FileModel {
    /// The named tokens and what each grants; every name a grant lists must be a declared token.
    func access(source: String, environment: [String: String]) throws -> AccessConfiguration {
        var access = AccessConfiguration()
        var names = Set<String>()
        var secrets: [String: String] = [:]
        let reserved = [
            (admin?.token != nil, AccessConfiguration.legacyAdminName, "admin.token"),
            (ingest?.token != nil, AccessConfiguration.legacyIngestName, "ingest.token"),
        ]
        for model in tokens ?? [] {
            let token = try model.token(source: source, environment: environment)
            guard names.insert(token.name).inserted else {
                throw ConfigurationError("\(source): token '\(token.name)' is declared twice")
            }
            for (inUse, name, key) in reserved where inUse && name == token.name {
                throw ConfigurationError("\(source): token name '\(name)' is the name of \(key); choose another")
            }
            if let other = secrets[token.secret] {
                throw ConfigurationError(
                    "\(source): tokens '\(other)' and '\(token.name)' have the same secret: give each its own")
            }
            secrets[token.secret] = token.name
            access.tokens.append(token)
        }
        func declared(_ list: [String]?, _ key: String) throws -> [String] {
            for name in list ?? [] where !names.contains(name) {
                throw ConfigurationError("\(source): \(key) names token '\(name)', which tokens: does not declare")
            }
            return list ?? []
        }
        access.admin = try declared(admin?.tokens, "admin.tokens")
        access.ingest = try declared(ingest?.tokens, "ingest.tokens")
        if ingest?.defaults?.ingest != nil {
            throw ConfigurationError(
                "\(source): ingest.defaults cannot have ingest tokens: a channel created by a push takes ingest.token "
                    + "and ingest.tokens (declare the channel to give it its own)")
        }
        for channel in channels ?? [] {
            guard let name = channel.name, let grants = channel.ingest else { continue }
            let label = "channel '\(name)' ingest"
            if let tokens = grants.tokens { access.channels[name] = try declared(tokens, "\(label).tokens") }
            for (rendition, tokens) in grants.renditions ?? [:] {
                access.renditions[name, default: [:]][rendition] = try declared(
                    tokens, "\(label).renditions.\(rendition)")
            }
        }
        return access
    }
}
