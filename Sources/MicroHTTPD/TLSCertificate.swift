import CMicroHTTPDShims
import Synchronization

/// A certificate chain and its private key for an HTTPS listener, parsed and checked by GnuTLS when created: the
/// chain is PEM, leaf first, each certificate signed by the next; the key is unencrypted PEM (PKCS#8, PKCS#1 or
/// SEC1) and belongs to the leaf. Its description names the leaf (subject, issuer, serial, validity), never the key.
public struct TLSCertificate: Sendable, CustomStringConvertible {
    let identity: TLSIdentity
    /// The leaf certificate's subject DN, e.g. `CN=origin.example`.
    public let subject: String
    /// The leaf certificate's issuer DN.
    public let issuer: String
    /// The leaf certificate's serial number, lowercase hex.
    public let serialNumber: String
    /// The leaf's validity, seconds since 1970.
    public let notBefore: Int64
    /// The leaf's expiry, seconds since 1970.
    public let notAfter: Int64
    /// Certificates in the chain (1: the leaf alone).
    public let chainLength: Int

    /// Parses and checks a chain and its key.
    /// - Parameters:
    ///   - certificateChainPEM: the certificates, PEM, leaf first.
    ///   - keyPEM: the leaf's private key, PEM, not encrypted.
    /// - Throws: `HTTPServerError.invalidCertificate` saying what is wrong (not PEM, unsorted chain, encrypted or
    ///   unreadable key, key not matching the certificate), with GnuTLS's reason.
    public init(certificateChainPEM: [UInt8], keyPEM: [UInt8]) throws {
        if !certificateChainPEM.containsText("-----BEGIN CERTIFICATE-----") {
            throw HTTPServerError.invalidCertificate("certificate: no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        if !keyPEM.containsText("-----BEGIN") || !keyPEM.containsText("PRIVATE KEY-----") {
            throw HTTPServerError.invalidCertificate(
                "private key: no PEM private key (-----BEGIN ... PRIVATE KEY-----)")
        }
        if keyPEM.containsText("ENCRYPTED") {
            throw HTTPServerError.invalidCertificate(
                "private key: the key is encrypted; give it unencrypted (readable by this user only, mode 0600)")
        }
        var error = [CChar](repeating: 0, count: 512)
        let created = certificateChainPEM.withUnsafeBufferPointer { chain in
            keyPEM.withUnsafeBufferPointer { key in
                CMicroHTTPDShims_tls_identity_create(
                    chain.baseAddress, chain.count, key.baseAddress, key.count, &error, error.count)
            }
        }
        guard let created else {
            let reason = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw HTTPServerError.invalidCertificate(reason)
        }
        identity = TLSIdentity(pointer: created)
        func field(_ which: Int32) -> String {
            var buffer = [CChar](repeating: 0, count: 2048)
            guard CMicroHTTPDShims_tls_identity_field(created, which, &buffer, buffer.count) == 0 else { return "" }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        subject = field(0)
        issuer = field(1)
        serialNumber = field(2)
        notBefore = CMicroHTTPDShims_tls_identity_time(created, 0)
        notAfter = CMicroHTTPDShims_tls_identity_time(created, 1)
        chainLength = Int(CMicroHTTPDShims_tls_identity_chain_length(created))
    }

    public var description: String {
        "subject \(subject), issuer \(issuer), serial \(serialNumber), valid "
            + "\(HTTPDate.format(secondsSince1970: notBefore)) to \(HTTPDate.format(secondsSince1970: notAfter)), "
            + "\(chainLength) certificate\(chainLength == 1 ? "" : "s") in the chain"
    }
}

/// The certificate an HTTPS listener presents, replaceable while it runs: each new TLS handshake takes the
/// certificate current at that moment; connections already open keep theirs (TLS cannot change it under them).
/// Give the same `TLSCredentials` to the listener (`HTTPServerConfiguration.tls`) and to whatever renews it.
public final class TLSCredentials: Sendable {
    private let slot: TLSSlot
    private let current: Mutex<TLSCertificate>

    /// Credentials presenting `certificate`.
    public init(_ certificate: TLSCertificate) {
        slot = TLSSlot(pointer: CMicroHTTPDShims_tls_slot_create(certificate.identity.pointer))
        current = Mutex(certificate)
    }

    /// The certificate new handshakes get.
    public var certificate: TLSCertificate { current.withLock { $0 } }

    /// New handshakes present `certificate` from now on; connections already open are not touched.
    public func replace(with certificate: TLSCertificate) {
        current.withLock { current in
            CMicroHTTPDShims_tls_slot_set(slot.pointer, certificate.identity.pointer)
            current = certificate
        }
    }

    /// The C slot (tls.c) the daemons are started with.
    var slotPointer: OpaquePointer { slot.pointer }
}

/// A parsed certificate chain and key in C (tls.c), freed with its last reference.
final class TLSIdentity: @unchecked Sendable {
    // @unchecked: immutable C data with an atomic reference count; only read after creation.
    let pointer: OpaquePointer
    init(pointer: OpaquePointer) { self.pointer = pointer }
    deinit { CMicroHTTPDShims_tls_identity_release(pointer) }
}

/// The C slot holding the identity handshakes get (tls.c): its own mutex guards it.
private final class TLSSlot: @unchecked Sendable {
    // @unchecked: the C slot locks itself; freed only when no daemon can use it (the daemons keep the credentials).
    let pointer: OpaquePointer
    init(pointer: OpaquePointer?) {
        guard let pointer else { fatalError("out of memory creating a TLS slot") }
        self.pointer = pointer
    }
    deinit { CMicroHTTPDShims_tls_slot_free(pointer) }
}

extension [UInt8] {
    /// Whether the bytes contain `text` (ASCII).
    fileprivate func containsText(_ text: String) -> Bool {
        let needle = Array(text.utf8)
        guard needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { start in
            self[start..<(start + needle.count)].elementsEqual(needle)
        }
    }
}
