import Crypto

/// A bearer token's secret, kept only as its SHA-256 digest, so that checking a presented token takes the same time
/// whatever its length and content and whichever configured token (if any) it is.
public struct BearerSecret: Sendable, Hashable {
    /// SHA-256 of the secret.
    let digest: [UInt8]

    /// - Parameter secret: the token's bytes (UTF-8 of the configured text).
    public init(_ secret: some Sequence<UInt8>) {
        digest = Self.sha256(Array(secret))
    }

    private static func sha256(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes)) }

    /// Which of `secrets` `presented` is (true at their indices; several configured tokens may share a secret).
    /// The presented token is hashed once and compared with every digest, all 32 bytes each, without stopping at a
    /// match: the time depends on `secrets.count` only, not on which token (if any) matches or how much of it.
    public static func matches(_ presented: some Sequence<UInt8>, among secrets: [BearerSecret]) -> [Bool] {
        let digest = sha256(Array(presented))
        return secrets.map { equalInConstantTime($0.digest, digest) }
    }
}

/// Whether `a` and `b` (of the same length) are equal, looking at every byte whatever differs: the time tells
/// nothing about where they differ (MACs and token digests).
func equalInConstantTime(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for i in a.indices { difference |= a[i] ^ b[i] }
    return difference == 0
}
