import Crypto
import Foundation
import HLSCrypto
import SharedBytes
import Testing
import _CryptoExtras

@Suite struct SegmentCipherTests {
    let key: [UInt8] = Array(0..<16)

    @Test func ivIsTheMediaSequenceNumberBigEndian() {
        #expect(SegmentCipher.initializationVector(msn: 0x0102) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2])
    }

    @Test func ciphertextIsPaddedToTheNextFullBlockAndDecryptsBack() throws {
        for size in [0, 1, 15, 16, 17, 188 * 7] {
            let plaintext = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let ciphertext = plaintext.withUnsafeBytes { SegmentCipher.encrypt($0, key: key, msn: 42) }
            #expect(ciphertext.count == (size / 16 + 1) * 16)
            let back = ciphertext.withUnsafeBytes { SegmentCipher.decrypt($0, key: key, msn: 42) }
            #expect(back == plaintext)
        }
    }

    /// libcrypto (the bulk cipher) and swift-crypto's AES-CBC agree byte for byte.
    @Test func agreesWithSwiftCryptoAESCBC() throws {
        let plaintext = (0..<100_003).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        let ours = plaintext.withUnsafeBytes { SegmentCipher.encrypt($0, key: key, msn: 123_456) }
        let theirs = try AES._CBC.encrypt(
            plaintext, using: SymmetricKey(data: key),
            iv: AES._CBC.IV(ivBytes: SegmentCipher.initializationVector(msn: 123_456)))
        #expect(ours.array == Array(theirs))
    }

    @Test func sameInputsGiveTheSameBytesAndAnotherMSNChangesThem() {
        let plaintext = [UInt8](repeating: 7, count: 1000)
        let a = plaintext.withUnsafeBytes { SegmentCipher.encrypt($0, key: key, msn: 9) }
        let b = plaintext.withUnsafeBytes { SegmentCipher.encrypt($0, key: key, msn: 9) }
        let c = plaintext.withUnsafeBytes { SegmentCipher.encrypt($0, key: key, msn: 10) }
        #expect(a == b)
        #expect(a != c)
    }

    /// The AES-128-CBC test vector of NIST SP 800-38A F.2.1 (first block), with the IV of MSN 0x0001...0f.
    @Test func matchesTheNISTCBCVector() {
        let nistKey: [UInt8] = [
            0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6, 0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f, 0x3c,
        ]
        let block: [UInt8] = [
            0x6b, 0xc1, 0xbe, 0xe2, 0x2e, 0x40, 0x9f, 0x96, 0xe9, 0x3d, 0x7e, 0x11, 0x73, 0x93, 0x17, 0x2a,
        ]
        // NIST's IV is 000102...0f; as a 128-bit big-endian MSN its low 8 bytes are 08..0f and its high 8 bytes must
        // be 00..07, which an MSN cannot give, so XOR the difference into the plaintext instead (CBC's first block
        // encrypts plaintext XOR IV).
        let nistIV: [UInt8] = Array(0..<16)
        let msn: UInt64 = 0x0809_0a0b_0c0d_0e0f
        let ourIV = SegmentCipher.initializationVector(msn: msn)
        let adjusted = (0..<16).map { block[$0] ^ nistIV[$0] ^ ourIV[$0] }
        let ciphertext = adjusted.withUnsafeBytes { SegmentCipher.encrypt($0, key: nistKey, msn: msn) }
        #expect(
            Array(ciphertext.array.prefix(16)) == [
                0x76, 0x49, 0xab, 0xac, 0x81, 0x19, 0xb2, 0x46, 0xce, 0xe9, 0x8e, 0x9b, 0x12, 0xe9, 0x19, 0x7d,
            ])
    }

    @Test func periodKeysDifferByPeriodChannelAndSecret() throws {
        let secret = try ChannelKeySecret(bytes: [UInt8](repeating: 1, count: 32))
        let other = try ChannelKeySecret(bytes: [UInt8](repeating: 2, count: 32))
        let k0 = SegmentCipher.periodKey(secret: secret, channel: "news", period: 0)
        #expect(k0.count == 16)
        #expect(k0 == SegmentCipher.periodKey(secret: secret, channel: "news", period: 0))
        #expect(k0 != SegmentCipher.periodKey(secret: secret, channel: "news", period: 1))
        #expect(k0 != SegmentCipher.periodKey(secret: secret, channel: "sport", period: 0))
        #expect(k0 != SegmentCipher.periodKey(secret: other, channel: "news", period: 0))
    }

    @Test func generatedSecretsAre32RandomBytes() throws {
        let a = ChannelKeySecret.generate()
        let b = ChannelKeySecret.generate()
        #expect(a.bytes.count == 32)
        #expect(a != b)
        #expect(throws: CryptoError.self) { try ChannelKeySecret(bytes: [1, 2, 3]) }
    }

    /// Not a timing assertion: prints the throughput so a slow cipher is visible in the test log.
    @Test func encryptsAMegabyteSegment() {
        let plaintext = [UInt8](repeating: 0x47, count: 1 << 20)
        let start = ContinuousClock.now
        let ciphertext = plaintext.withUnsafeBytes { SegmentCipher.encrypt($0, key: key, msn: 1) }
        let elapsed = ContinuousClock.now - start
        print("SegmentCipher: 1 MiB in \(elapsed)")
        #expect(ciphertext.count == (1 << 20) + 16)
    }
}
