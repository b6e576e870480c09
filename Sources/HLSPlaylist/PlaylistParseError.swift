/// A playlist text that could not be parsed: the 1-based line where parsing stopped and why.
///
/// Line 0 means the problem is not tied to one line (input too large, or an attribute list parsed on its own).
public struct PlaylistParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The 1-based line number, or 0 when no line applies.
    public var line: Int
    /// What is wrong, in plain words.
    public var message: String

    /// Creates an error.
    /// - Parameters:
    ///   - line: the 1-based line number, 0 when no line applies.
    ///   - message: what is wrong.
    public init(line: Int, message: String) {
        self.line = line
        self.message = message
    }

    public var description: String {
        line > 0 ? "line \(line): \(message)" : message
    }

    /// The same error placed on `line`.
    func at(line: Int) -> PlaylistParseError {
        PlaylistParseError(line: line, message: message)
    }
}
