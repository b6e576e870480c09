/// A splice_info_section that is not valid SCTE-35, with the reason.
public struct SCTE35Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, e.g. `CRC_32 is 0x12345678, expected 0x9ABCDEF0`.
    public let message: String

    /// Creates an error with a message.
    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
