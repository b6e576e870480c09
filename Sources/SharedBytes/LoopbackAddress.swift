/// Loopback addresses as text, for the inputs that admit loopback clients without credentials (HTTP ingest, SRT
/// callers): one rule for every input.
public enum LoopbackAddress {
    /// Whether `address` (an IP address as text, any case) is loopback: 127.0.0.0/8, ::1 or an IPv4-mapped
    /// ::ffff:127.x.x.x.
    public static func contains(_ address: String) -> Bool {
        let address = address.lowercased()
        return address == "::1" || address.hasPrefix("127.") || address.hasPrefix("::ffff:127.")
    }
}
