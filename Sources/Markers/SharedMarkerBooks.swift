/// Marker books kept outside this origin, in a database the origins of a group share (`GroupDatabase`): the
/// stored book of a channel, and a change that replaces it only if no other origin changed it since it was read.
public protocol SharedMarkerBooks: Sendable {
    /// The stored book of `channel`, nil if none was ever stored.
    /// - Throws: `MarkerError(.unavailable)` when the books cannot be reached.
    func load(channel: String) throws(MarkerError) -> SharedMarkerBook?
    /// Stores `book` for `channel` if the stored book is still `version` (nil: none stored yet).
    /// - Returns: the stored book's new version; nil when another origin changed it first.
    /// - Throws: `MarkerError(.unavailable)` when the books cannot be reached (nothing was stored).
    func save(channel: String, book: MarkerBook, replacing version: Int64?) throws(MarkerError) -> Int64?
    /// Whether the last call reached the books, and why not if it did not (status and metrics).
    var reachability: (reachable: Bool, lastError: String?) { get }
}

/// A channel's book as a `SharedMarkerBooks` stores it, with the version a change must name to replace it.
public struct SharedMarkerBook: Sendable {
    public let book: MarkerBook
    public let version: Int64

    public init(book: MarkerBook, version: Int64) {
        self.book = book
        self.version = version
    }
}
