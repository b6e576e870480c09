/// Recordings kept outside this origin, in a database the origins of a group share (`GroupDatabase`): which
/// recordings exist, as requested. Each origin takes a recording's contents from its own store and keeps them in its
/// own manifest (`RecordingJournal`); what is shared is the request, so a recording posted to one origin is made by
/// every origin of the group, and a deletion on one deletes it on all.
public protocol SharedRecordings: Sendable {
    /// Stores the request of `manifest` (its contents are not shared) unless its ID names a recording already; a
    /// deleted recording's ID is taken again.
    /// - Returns: the stored recording: `manifest` when this call stored it (`created`), else the one stored before
    ///   (without contents).
    /// - Throws: ``SharedRecordingsUnavailable`` when the database cannot be reached (nothing was stored).
    func create(
        _ manifest: RecordingManifest
    ) throws(SharedRecordingsUnavailable) -> (
        stored: RecordingManifest, created: Bool
    )
    /// Marks recording `id` of `channel` deleted (the row stays as a tombstone so that an origin that missed the
    /// change drops it too). Returns whether such a recording existed.
    /// - Throws: ``SharedRecordingsUnavailable`` (nothing was changed).
    func delete(id: String, channel: String) throws(SharedRecordingsUnavailable) -> Bool
    /// Every recording stored, and the IDs of deleted ones.
    /// - Throws: ``SharedRecordingsUnavailable``.
    func list() throws(SharedRecordingsUnavailable) -> SharedRecordingList
    /// Whether the last call reached the database, and why not if it did not (status and metrics).
    var reachability: (reachable: Bool, lastError: String?) { get }
}

/// What the shared recordings hold: the live ones (requests, without contents) and the IDs of deleted ones.
public struct SharedRecordingList: Sendable, Hashable {
    public var recordings: [RecordingManifest]
    public var deleted: Set<String>

    public init(recordings: [RecordingManifest], deleted: Set<String>) {
        self.recordings = recordings
        self.deleted = deleted
    }
}

/// The shared recordings could not be reached; `message` says why.
public struct SharedRecordingsUnavailable: Error, Sendable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

extension RecordingManifest {
    /// Whether `other` is the same request (channel, start and end as posted): a repeated POST of it is idempotent.
    public func isSameRequest(as other: RecordingManifest) -> Bool {
        channel == other.channel && requestedStart == other.requestedStart && requestedEnd == other.requestedEnd
    }
}
