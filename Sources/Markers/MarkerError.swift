/// Why the marker book refused a request: a reason callers can switch on (the HTTP layer maps it to a status), the
/// request field at fault and a message.
public struct MarkerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kinds of refusal.
    public enum Reason: String, Sendable, Hashable {
        /// The request is invalid (the field says where).
        case invalid
        /// No marker with that ID.
        case unknownMarker
        /// An ID used by another marker, or a change to an attribute already shown.
        case conflict
        /// The channel holds `MarkerBook.maximumMarkers` markers.
        case tooManyMarkers
        /// The journal could not be written: the change was not made.
        case notPersisted
        /// The shared marker database could not be reached (or kept changing under us): the change was not made;
        /// retry later.
        case unavailable
    }

    /// Why the request was refused.
    public let reason: Reason
    /// The JSON field at fault (`endDate`, `clientAttributes.X-AD-ID`, `scte35.out`, ...), if one is.
    public let field: String?
    /// What is wrong.
    public let message: String

    /// Creates an error.
    public init(_ reason: Reason, field: String?, _ message: String) {
        self.reason = reason
        self.field = field
        self.message = message
    }

    public var description: String { field.map { "\($0): \(message)" } ?? message }

    /// Invalid, with the field named at the start of the message: `endDate: ...`.
    static func invalid(_ field: String, _ message: String) -> MarkerError {
        MarkerError(.invalid, field: field, "\(field): \(message)")
    }

    static func conflict(_ field: String?, _ message: String) -> MarkerError {
        MarkerError(.conflict, field: field, message)
    }
}
