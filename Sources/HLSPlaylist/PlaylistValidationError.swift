/// A value that breaks an RFC 8216 rule and so cannot be rendered: names the attribute at fault.
public struct PlaylistValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The attribute name as written in the playlist, e.g. `END-DATE` or `X-AD-ID`.
    public var attribute: String
    /// What is wrong, in plain words.
    public var message: String

    /// Creates an error.
    /// - Parameters:
    ///   - attribute: the attribute name as written in the playlist.
    ///   - message: what is wrong.
    public init(attribute: String, message: String) {
        self.attribute = attribute
        self.message = message
    }

    public var description: String { "\(attribute): \(message)" }
}
