import CLibCrypto
import Crypto
public import SharedBytes
import _CryptoExtras

/// A channel's key secret: 32 random bytes from which every key period's AES-128 key is derived.
public struct ChannelKeySecret: Sendable, Hashable {
    /// The 32 secret bytes.
    public let bytes: [UInt8]

    /// A new secret from the system's cryptographically secure generator (swift-crypto `SymmetricKey`).
    public static func generate() -> ChannelKeySecret {
        let key = SymmetricKey(size: .bits256)
        return ChannelKeySecret(checked: key.withUnsafeBytes { Array($0) })
    }

    /// A secret read back from the key journal.
    public init(bytes: [UInt8]) throws(CryptoError) {
        guard bytes.count == 32 else { throw CryptoError("a channel key secret is 32 bytes, got \(bytes.count)") }
        self.bytes = bytes
    }

    private init(checked bytes: [UInt8]) { self.bytes = bytes }
}

/// Why key material or a token could not be used.
public struct CryptoError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// AES-128 segment encryption as RFC 8216 section 5.2 describes it: AES-128-CBC over the whole resource, PKCS7
/// padding, IV = the media sequence number as a 128-bit big-endian integer (no IV attribute in EXT-X-KEY).
public enum SegmentCipher {
    /// Bytes of an AES-128 key.
    public static let keyByteCount = 16

    /// The AES-128 key of key period `period` of `channel`: the first 16 bytes of
    /// HMAC-SHA256(secret, "hlsorigin-key-v1\n{channel}\n{period}"). A viewer who holds period keys cannot recover the
    /// secret or any other period's key.
    public static func periodKey(secret: ChannelKeySecret, channel: String, period: UInt64) -> [UInt8] {
        let message = Array("hlsorigin-key-v1\n\(channel)\n\(period)".utf8)
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret.bytes))
        return Array(Array(mac).prefix(keyByteCount))
    }

    /// The IV of segment `msn`: `msn` as a 128-bit big-endian integer.
    public static func initializationVector(msn: UInt64) -> [UInt8] {
        var iv = [UInt8](repeating: 0, count: 16)
        for i in 0..<8 { iv[15 - i] = UInt8(truncatingIfNeeded: msn >> (8 * UInt64(i))) }
        return iv
    }

    /// Encrypts `plaintext` with AES-128-CBC and PKCS7 padding under `key` (16 bytes) and IV = `msn`.
    /// The result is `(plaintext.count / 16 + 1) * 16` bytes. Deterministic: the same inputs give the same bytes.
    /// Runs OpenSSL's EVP cipher (AES-NI where the CPU has it).
    public static func encrypt(_ plaintext: UnsafeRawBufferPointer, key: [UInt8], msn: UInt64) -> SharedBytes {
        precondition(key.count == keyByteCount, "AES-128 keys are 16 bytes")
        let iv = initializationVector(msn: msn)
        let outputCount = (plaintext.count / 16 + 1) * 16
        var output = ByteAccumulator(initialCapacity: outputCount)
        guard let context = EVP_CIPHER_CTX_new() else { preconditionFailure("EVP_CIPHER_CTX_new failed") }
        defer { EVP_CIPHER_CTX_free(context) }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024 + 16)
        var ok = EVP_EncryptInit_ex(context, EVP_aes_128_cbc(), nil, key, iv) == 1
        var offset = 0
        while ok, offset < plaintext.count {
            let chunk = min(64 * 1024, plaintext.count - offset)
            var written: Int32 = 0
            ok =
                EVP_EncryptUpdate(
                    context, &buffer, &written,
                    plaintext.baseAddress!.advanced(by: offset).assumingMemoryBound(to: UInt8.self), Int32(chunk))
                == 1
            buffer.withUnsafeBytes { output.append(UnsafeRawBufferPointer(rebasing: $0[0..<Int(written)])) }
            offset += chunk
        }
        var written: Int32 = 0
        ok = ok && EVP_EncryptFinal_ex(context, &buffer, &written) == 1
        buffer.withUnsafeBytes { output.append(UnsafeRawBufferPointer(rebasing: $0[0..<Int(written)])) }
        // EVP fails only on a broken library or context; the key and IV sizes are fixed above.
        precondition(ok && output.count == outputCount, "AES-128-CBC encryption failed in libcrypto")
        return output.finish()
    }

    /// Decrypts what `encrypt` produced (tests and tools); nil when the padding is wrong.
    public static func decrypt(_ ciphertext: UnsafeRawBufferPointer, key: [UInt8], msn: UInt64) -> [UInt8]? {
        guard key.count == keyByteCount, ciphertext.count % 16 == 0, ciphertext.count > 0,
            let iv = try? AES._CBC.IV(ivBytes: initializationVector(msn: msn)),
            let plaintext = try? AES._CBC.decrypt(ciphertext, using: SymmetricKey(data: key), iv: iv)
        else { return nil }
        return Array(plaintext)
    }
}
