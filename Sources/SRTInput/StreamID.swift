import LiveTimeline

/// An SRT caller's stream id, read as the SRT access-control convention says (`#!::key=value,...`,
/// https://github.com/Haivision/srt/blob/master/docs/features/access-control.md), or as plain `channel/rendition`.
///
/// `r` names `channel/rendition`; `m` must be `publish` (an origin takes streams, it does not relay them); `u` is the
/// caller's user name, which names the token whose secret is the SRT passphrase; `s` (or the custom key `token`)
/// carries a token secret in the stream id itself; `t` must be `stream` when present; `h` is ignored.
public struct StreamID: Sendable, Hashable {
    public var channel: String
    public var rendition: String
    /// `u=`: the user name, taken as the name of the token whose secret is the passphrase.
    public var user: String?
    /// `s=` or `token=`: a token's secret, sent in clear in the handshake (prefer `u=` and a passphrase).
    public var token: String?

    public init(channel: String, rendition: String, user: String? = nil, token: String? = nil) {
        self.channel = channel
        self.rendition = rendition
        self.user = user
        self.token = token
    }

    /// Reads `text`; a refusal carries the access-control reject code the caller is told.
    public static func parse(_ text: String) -> Result<StreamID, SRTRefusal> {
        guard !text.isEmpty else {
            return .failure(.badRequest("no stream id: use #!::r=channel/rendition,m=publish"))
        }
        guard text.hasPrefix("#!::") else {
            return resource(text).map { StreamID(channel: $0.0, rendition: $0.1) }
        }
        var values: [String: String] = [:]
        for pair in text.dropFirst(4).split(separator: ",", omittingEmptySubsequences: false) {
            guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                return .failure(.badRequest("stream id item '\(pair)' is not key=value"))
            }
            let key = String(pair[..<equals])
            guard ["r", "m", "u", "s", "t", "h", "token"].contains(key) else {
                return .failure(
                    SRTRefusal(
                        code: SRTRefusal.keyNotSupported,
                        message: "stream id key '\(key)' is not supported (r, m, u, s, t, h, token)"))
            }
            guard values[key] == nil else { return .failure(.badRequest("stream id key '\(key)' is repeated")) }
            values[key] = String(pair[pair.index(after: equals)...])
        }
        // The convention's default mode is `request`.
        let mode = values["m"] ?? "request"
        guard mode == "publish" else {
            return .failure(
                SRTRefusal(
                    code: SRTRefusal.badMode,
                    message: "mode '\(mode)' is refused: this origin takes streams (m=publish), it does not serve them"))
        }
        if let type = values["t"], type != "stream" {
            return .failure(
                SRTRefusal(code: SRTRefusal.unsupportedMedia, message: "type '\(type)' is refused: only t=stream"))
        }
        guard let r = values["r"] else { return .failure(.badRequest("stream id has no r=channel/rendition")) }
        if values["s"] != nil && values["token"] != nil {
            return .failure(.badRequest("stream id has both s= and token="))
        }
        let user = values["u"].flatMap { $0.isEmpty ? nil : $0 }
        let token = (values["s"] ?? values["token"]).flatMap { $0.isEmpty ? nil : $0 }
        return resource(r).map { StreamID(channel: $0.0, rendition: $0.1, user: user, token: token) }
    }

    private static func resource(_ text: String) -> Result<(String, String), SRTRefusal> {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else {
            return .failure(.badRequest("resource '\(text)' is not channel/rendition"))
        }
        let (channel, rendition) = (String(parts[0]), String(parts[1]))
        guard OriginNames.isValid(channel), OriginNames.isValid(rendition) else {
            return .failure(.badRequest("channel and rendition names are \(OriginNames.rule): '\(text)'"))
        }
        return .success((channel, rendition))
    }
}

/// A caller refused in the handshake: the reject reason the caller sees (`srt_getrejectreason`, an access-control
/// code 1000-1999) and a message for the log and the audit trail.
public struct SRTRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    public var code: Int32
    public var message: String
    /// The label of `hlsorigin_srt_refusals_total` and the audit outcome.
    public var reason: String

    public init(code: Int32, message: String, reason: String? = nil) {
        self.code = code
        self.message = message
        self.reason = reason ?? Self.label(code)
    }

    public var description: String { "\(code) \(reason): \(message)" }

    // The codes of srt/access_control.h (SRT_REJX_*), spelled here so that the pure code needs no C module.
    public static let keyNotSupported: Int32 = 1001
    public static let badRequestCode: Int32 = 1400
    public static let unauthorized: Int32 = 1401
    public static let overload: Int32 = 1402
    public static let forbidden: Int32 = 1403
    public static let notFound: Int32 = 1404
    public static let badMode: Int32 = 1405
    public static let conflict: Int32 = 1409
    public static let unsupportedMedia: Int32 = 1415

    static func badRequest(_ message: String) -> SRTRefusal { SRTRefusal(code: badRequestCode, message: message) }

    static func label(_ code: Int32) -> String {
        switch code {
        case keyNotSupported: "key_not_supported"
        case badRequestCode: "bad_request"
        case unauthorized: "unauthorized"
        case overload: "overload"
        case forbidden: "forbidden"
        case notFound: "not_found"
        case badMode: "bad_mode"
        case conflict: "conflict"
        case unsupportedMedia: "unsupported_media"
        default: "rejected"
        }
    }
}
