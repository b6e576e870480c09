/// Why the marker book refused a request: the HTTP status to answer, the request field at fault and a message.
public struct MarkerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// 400 invalid, 404 unknown marker, 409 conflicting ID or change to a shown attribute, 429 too many markers,
    /// 500 the journal could not be written.
    public let status: Int
    /// The JSON field at fault (`endDate`, `clientAttributes.X-AD-ID`, `scte35.out`, ...), if one is.
    public let field: String?
    /// What is wrong.
    public let message: String

    /// Creates an error.
    public init(status: Int, field: String?, _ message: String) {
        self.status = status
        self.field = field
        self.message = message
    }

    public var description: String { field.map { "\($0): \(message)" } ?? message }

    /// 400 with the field named at the start of the message: `endDate: ...`.
    static func invalid(_ field: String, _ message: String) -> MarkerError {
        MarkerError(status: 400, field: field, "\(field): \(message)")
    }

    static func conflict(_ field: String?, _ message: String) -> MarkerError {
        MarkerError(status: 409, field: field, message)
    }
}
