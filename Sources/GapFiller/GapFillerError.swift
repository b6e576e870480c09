/// Why no filler can be made for a rendition's gaps: its media is not something the filler can continue.
/// The origin then answers the GAP URL with a plain 404.
public struct GapFillerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is missing or unsupported, e.g. "no H.264 IDR access unit in the segment".
    public let message: String

    /// An error with a message fit for a log line.
    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
