import CivilCalendar
import Crypto

/// Why a playback token was refused; `description` is the one-line reason a 403 carries.
public enum PlaybackTokenError: Error, Sendable, Hashable, CustomStringConvertible {
    case missing
    case malformed
    case badSignature(channel: String)
    case expired(atSeconds: Int64)
    case tooFarAhead(maxSeconds: Int64)

    public var description: String {
        switch self {
        case .missing: "playback token missing"
        case .malformed: "playback token malformed"
        case .badSignature(let channel): "playback token signature does not match channel '\(channel)'"
        case .expired(let at): "playback token expired at \(PlaybackToken.iso8601(seconds: at))"
        case .tooFarAhead(let max): "playback token expires too far ahead (max \(max) s)"
        }
    }

    /// A short label for metrics (`hlsorigin_playback_refused_total{reason}`).
    public var metricLabel: String {
        switch self {
        case .missing: "missing"
        case .malformed: "malformed"
        case .badSignature: "signature"
        case .expired: "expired"
        case .tooFarAhead: "too_far_ahead"
        }
    }
}

/// Playback tokens: `{expiry}-{mac}`, `expiry` in Unix seconds, `mac` the unpadded base64url of the first 16 bytes
/// of HMAC-SHA256(secret, "hlsorigin-playback-v1\n{channel}\n{expiry}") (22 characters). The alphabet
/// `[0-9A-Za-z_-]` needs no escaping in a URI or a quoted playlist string. A backend issues them with the same recipe
/// (docs/playback.md).
public enum PlaybackToken {
    /// A token for `channel` valid until `expirySeconds` (Unix time).
    public static func issue(channel: String, expirySeconds: Int64, secret: [UInt8]) -> String {
        "\(expirySeconds)-\(base64URL(mac(channel: channel, expirySeconds: expirySeconds, secret: secret)))"
    }

    /// Checks `token` for `channel` at `nowSeconds`: returns its expiry, or why it is refused. The MAC is compared
    /// in constant time. A token is valid while `nowSeconds < expiry <= nowSeconds + maxAheadSeconds`.
    public static func verify(
        _ token: String?, channel: String, secret: [UInt8], nowSeconds: Int64, maxAheadSeconds: Int64
    ) -> Result<Int64, PlaybackTokenError> {
        guard let token, !token.isEmpty else { return .failure(.missing) }
        let utf8 = Array(token.utf8)
        guard let dash = utf8.firstIndex(of: UInt8(ascii: "-")), dash > 0, dash <= 12,
            utf8[..<dash].allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            utf8[..<dash].first != UInt8(ascii: "0") || dash == 1,
            let expiry = Int64(String(decoding: utf8[..<dash], as: UTF8.self)),
            let given = decodeBase64URL(utf8[(dash + 1)...]), given.count == 16
        else { return .failure(.malformed) }
        let expected = mac(channel: channel, expirySeconds: expiry, secret: secret)
        guard equalInConstantTime(expected, given) else { return .failure(.badSignature(channel: channel)) }
        if expiry <= nowSeconds { return .failure(.expired(atSeconds: expiry)) }
        if expiry > nowSeconds &+ maxAheadSeconds { return .failure(.tooFarAhead(maxSeconds: maxAheadSeconds)) }
        return .success(expiry)
    }

    static func mac(channel: String, expirySeconds: Int64, secret: [UInt8]) -> [UInt8] {
        let message = Array("hlsorigin-playback-v1\n\(channel)\n\(expirySeconds)".utf8)
        let code = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret))
        return Array(Array(code).prefix(16))
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func base64URL(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var bits: UInt32 = 0
        var bitCount = 0
        for byte in bytes {
            bits = bits << 8 | UInt32(byte)
            bitCount += 8
            while bitCount >= 6 {
                bitCount -= 6
                out.append(alphabet[Int((bits >> UInt32(bitCount)) & 63)])
            }
        }
        if bitCount > 0 { out.append(alphabet[Int((bits << UInt32(6 - bitCount)) & 63)]) }
        return String(decoding: out, as: UTF8.self)
    }

    static func decodeBase64URL(_ chars: ArraySlice<UInt8>) -> [UInt8]? {
        var bits: UInt32 = 0
        var bitCount = 0
        var out: [UInt8] = []
        for c in chars {
            guard let value = alphabet.firstIndex(of: c) else { return nil }
            bits = bits << 6 | UInt32(value)
            bitCount += 6
            if bitCount >= 8 {
                bitCount -= 8
                out.append(UInt8(truncatingIfNeeded: bits >> UInt32(bitCount)))
            }
        }
        // Unused low bits must be zero, so every token has exactly one spelling.
        guard bits & ((1 << UInt32(bitCount)) - 1) == 0 else { return nil }
        return out
    }

    /// `2026-11-24T01:00:00Z` for Unix seconds.
    static func iso8601(seconds: Int64) -> String {
        let days = CivilCalendar.floorDivide(seconds, 86400)
        let rest = seconds - days * 86400
        let (year, month, day) = CivilCalendar.date(fromDays: days)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(year)-\(two(month))-\(two(day))T\(two(rest / 3600)):\(two(rest % 3600 / 60)):\(two(rest % 60))Z"
    }
}
