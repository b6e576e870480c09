import Foundation
import HLSPlaylist
import Logging
import Persistence
import Synchronization

/// Why a recording request is refused; the HTTP layer maps the reason to a status.
public struct RecordingError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: Sendable, Hashable {
        /// Malformed body or values, or longer than the maximum: 400.
        case invalid
        /// Unknown channel or recording: 404.
        case unknown
        /// The ID names another recording: 409.
        case conflict
        /// Start before what the store still holds, end not after start, no store: 422.
        case unprocessable
        /// Too many recordings: 429.
        case tooMany
        /// The manifest could not be written: 507 when the disk is full, else 500.
        case notPersisted(outOfSpace: Bool)
        /// The recording has not finished yet (VOD requests): 404.
        case notFinished
    }

    public var reason: Reason
    /// The request field at fault, if any.
    public var field: String?
    public var message: String

    public init(_ reason: Reason, field: String? = nil, _ message: String) {
        self.reason = reason
        self.field = field
        self.message = message
    }

    public var description: String { message }
}

/// A recording as requested: what `POST /admin/channels/{channel}/recordings` carries, resolved to times.
public struct RecordingRequest: Sendable, Hashable {
    public var id: String
    /// `start` and `end` as posted (compared for idempotence), and resolved (ms since the epoch).
    public var requestedStart: String
    public var requestedEnd: String
    public var startMilliseconds: Int64
    public var endMilliseconds: Int64

    public init(
        id: String, requestedStart: String, requestedEnd: String, startMilliseconds: Int64, endMilliseconds: Int64
    ) {
        self.id = id
        self.requestedStart = requestedStart
        self.requestedEnd = requestedEnd
        self.startMilliseconds = startMilliseconds
        self.endMilliseconds = endMilliseconds
    }
}

/// The recordings of the origin (IDs unique origin-wide) behind locks, with their manifests: every change is on
/// disk before it is visible or acknowledged, as in `MarkerStore`.
///
/// Locks: `writer` serialises changes (held across the manifest's fsync); `eviction` is held by a channel while it
/// computes its eviction floor from the pins and evicts, and by a creation while it checks the store's horizon and
/// adds its pin, so no slot of a new recording can be evicted between the check and the pin; `visible` is held only
/// to copy or swap the table. Order: `writer` -> `eviction` -> `ChannelStore.files`; `writer` -> `visible`;
/// `eviction` -> `visible`. A channel's state lock is never held while taking any of them.
public final class RecordingStore: Sendable {
    /// Most recordings the origin keeps.
    public static let maximumRecordings = 1000
    /// Default longest interval: 24 hours.
    public static let defaultMaximumMilliseconds: Int64 = 24 * 3_600_000
    /// How long after its end a recording whose channel closes no slot (no store, never started) waits before it
    /// finishes with what there is.
    static let finishGraceMilliseconds: Int64 = 60_000

    /// The manifests, nil without a data directory (recordings need the durable store anyway).
    public let journal: RecordingJournal?
    /// Longest interval accepted.
    public let maximumMilliseconds: Int64
    private let writer: Mutex<[String: RecordingManifest]>
    private let visible: Mutex<[String: RecordingManifest]>
    private let eviction = Mutex<Void>(())
    private let logger: Logger

    /// A store holding `manifests`.
    public init(
        manifests: [RecordingManifest] = [], journal: RecordingJournal? = nil,
        maximumMilliseconds: Int64 = RecordingStore.defaultMaximumMilliseconds, logger: Logger
    ) {
        let table = Dictionary(manifests.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        self.journal = journal
        self.maximumMilliseconds = maximumMilliseconds
        writer = Mutex(table)
        visible = Mutex(table)
        self.logger = logger
    }

    /// Loads the manifests under `dataDirectory` (none without one); unreadable ones are logged and left alone.
    public static func open(dataDirectory: String?, logger: Logger) -> RecordingStore {
        guard let dataDirectory else { return RecordingStore(logger: logger) }
        let journal = RecordingJournal(dataDirectory: dataDirectory)
        let (manifests, unreadable) = journal.loadAll()
        for (path, reason) in unreadable {
            logger.error(
                "recording manifest unreadable: not served", metadata: ["path": "\(path)", "reason": "\(reason)"])
        }
        if !manifests.isEmpty {
            logger.info("recordings restored", metadata: ["hls.recordings": "\(manifests.count)"])
        }
        return RecordingStore(manifests: manifests, journal: journal, logger: logger)
    }

    /// All recordings, by start then ID; of one channel when `channel` is given.
    public func all(channel: String? = nil) -> [RecordingManifest] {
        visible.withLock { Array($0.values) }.filter { channel == nil || $0.channel == channel }
            .sorted { ($0.startMilliseconds, $0.id) < ($1.startMilliseconds, $1.id) }
    }

    /// The recording with this ID.
    public func recording(id: String) -> RecordingManifest? { visible.withLock { $0[id] } }

    /// Creates a recording of `channel`, or returns the stored one when the same request was posted before.
    /// - Parameter heldFrom: reads, under the eviction lock, the oldest PDT the channel's store still holds (nil: the
    ///   channel keeps no store).
    /// - Returns: the manifest and whether this call created it.
    /// - Throws: ``RecordingError``: `conflict`, `invalid` (too long), `unprocessable` (end not after start, start
    ///   before what the store holds, no store), `tooMany`, `notPersisted`.
    func create(
        _ request: RecordingRequest, channel: String, nowMilliseconds now: Int64,
        heldFrom: () -> Int64?
    ) throws(RecordingError) -> (manifest: RecordingManifest, created: Bool) {
        let result: Result<(RecordingManifest, Bool), RecordingError> = writer.withLock { table in
            if let existing = table[request.id] {
                guard existing.channel == channel, existing.requestedStart == request.requestedStart,
                    existing.requestedEnd == request.requestedEnd
                else {
                    return .failure(
                        RecordingError(
                            .conflict, field: "id",
                            "id '\(request.id)' already names a different recording (of channel '\(existing.channel)',"
                                + " \(existing.requestedStart) to \(existing.requestedEnd))"))
                }
                return .success((existing, false))
            }
            if request.endMilliseconds <= request.startMilliseconds {
                return .failure(RecordingError(.unprocessable, field: "end", "end: must be after start"))
            }
            if request.endMilliseconds - request.startMilliseconds > maximumMilliseconds {
                return .failure(
                    RecordingError(
                        .invalid, field: "end",
                        "end: a recording lasts at most \(Double(maximumMilliseconds) / 3_600_000) hours"))
            }
            guard table.count < Self.maximumRecordings else {
                return .failure(
                    RecordingError(
                        .tooMany, "the origin holds \(Self.maximumRecordings) recordings: delete some first"))
            }
            return eviction.withLock { _ -> Result<(RecordingManifest, Bool), RecordingError> in
                guard let held = heldFrom() else {
                    return .failure(
                        RecordingError(
                            .unprocessable,
                            "channel '\(channel)' keeps no durable store (the origin has no data directory)"))
                }
                if request.startMilliseconds < held {
                    return .failure(
                        RecordingError(
                            .unprocessable, field: "start",
                            "start: \(Self.date(request.startMilliseconds)) is before the oldest media the store "
                                + "still holds (\(Self.date(held)))"))
                }
                let manifest = RecordingManifest(
                    id: request.id, channel: channel, requestedStart: request.requestedStart,
                    requestedEnd: request.requestedEnd, startMilliseconds: request.startMilliseconds,
                    endMilliseconds: request.endMilliseconds, createdMilliseconds: now)
                if let failure = persist(manifest) { return .failure(failure) }
                table[manifest.id] = manifest
                let copy = table
                visible.withLock { $0 = copy }
                return .success((manifest, true))
            }
        }
        let (manifest, created) = try result.get()
        if created {
            logger.info(
                "recording created",
                metadata: [
                    "hls.channel": "\(channel)", "hls.recording": "\(manifest.id)",
                    "start": "\(Self.date(manifest.startMilliseconds))",
                    "end": "\(Self.date(manifest.endMilliseconds))",
                ])
        }
        return (manifest, created)
    }

    /// Deletes a recording: only its manifest goes; the store's bytes it shared stay until eviction frees them.
    /// - Throws: `unknown`, `notPersisted`.
    func delete(id: String, channel: String) throws(RecordingError) {
        let result: Result<Void, RecordingError> = writer.withLock { table in
            guard table[id]?.channel == channel else {
                return .failure(RecordingError(.unknown, "no recording with id '\(id)' in channel '\(channel)'"))
            }
            if let journal {
                do throws(DurableWriteError) {
                    try journal.remove(id: id)
                } catch {
                    return .failure(Self.notPersisted(error, "the recording could not be deleted"))
                }
            }
            table[id] = nil
            let copy = table
            visible.withLock { $0 = copy }
            return .success(())
        }
        try result.get()
        logger.info("recording deleted", metadata: ["hls.channel": "\(channel)", "hls.recording": "\(id)"])
    }

    /// Stores what a recording holds once it finished (no effect if it was deleted or finished meanwhile).
    /// - Returns: the stored manifest; nil if the write failed (logged; tried again on the next tick).
    func finish(id: String, contents: RecordingContents) -> RecordingManifest? {
        writer.withLock { table -> RecordingManifest? in
            guard var manifest = table[id] else { return nil }
            if manifest.contents != nil { return manifest }
            manifest.contents = contents
            if let failure = persist(manifest) {
                logger.error(
                    "recording manifest write failed", metadata: ["hls.recording": "\(id)", "reason": "\(failure)"])
                return nil
            }
            table[id] = manifest
            let copy = table
            visible.withLock { $0 = copy }
            logger.info(
                "recording finished",
                metadata: [
                    "hls.channel": "\(manifest.channel)", "hls.recording": "\(id)",
                    "hls.msns":
                        "\(contents.firstMSN.map(String.init) ?? "-")...\(contents.lastMSN.map(String.init) ?? "-")",
                ])
            return manifest
        }
    }

    /// Runs `body` under the eviction lock with the oldest start of the channel's recordings (all of them pin their
    /// slots, scheduled ones too); nil when it has none.
    func evicting<Result>(channel: String, _ body: (Int64?) -> Result) -> Result {
        eviction.withLock { _ in
            let oldest = visible.withLock { table in
                table.values.lazy.filter { $0.channel == channel }.map(\.startMilliseconds).min()
            }
            return body(oldest)
        }
    }

    /// The oldest start of the channel's recordings that have not finished (their markers must stay in the book
    /// until they are copied); nil when there is none.
    func oldestUnfinishedStart(channel: String) -> Int64? {
        visible.withLock { table in
            table.values.lazy.filter { $0.channel == channel && $0.contents == nil }.map(\.startMilliseconds).min()
        }
    }

    /// Recordings whose end passed and whose contents are not taken yet.
    func due(nowMilliseconds now: Int64) -> [RecordingManifest] {
        visible.withLock { table in table.values.filter { $0.contents == nil && $0.endMilliseconds <= now } }
    }

    private func persist(_ manifest: RecordingManifest) -> RecordingError? {
        guard let journal else { return nil }
        do throws(DurableWriteError) {
            try journal.save(manifest)
            return nil
        } catch {
            logger.error(
                "recording manifest write failed", metadata: ["hls.recording": "\(manifest.id)", "reason": "\(error)"])
            return Self.notPersisted(error, "the recording could not be persisted")
        }
    }

    private static func notPersisted(_ error: DurableWriteError, _ what: String) -> RecordingError {
        RecordingError(.notPersisted(outOfSpace: RecordingJournal.isOutOfSpace(error)), "\(what): \(error)")
    }

    static func date(_ milliseconds: Int64) -> String {
        ProgramDateTime(millisecondsSince1970: milliseconds).formatted
    }
}

/// Where a recording is, derived from the clock and its manifest.
public enum RecordingState: String, Sendable, Hashable {
    /// Its start is still ahead.
    case scheduled
    /// Started, and its contents are not taken yet (until the slot containing its end closed).
    case recording
    /// Its contents are taken: served under `/vod/{id}/`.
    case finished
}

extension RecordingManifest {
    /// The state at `now` (shared clock, ms).
    public func state(nowMilliseconds now: Int64) -> RecordingState {
        if contents != nil { return .finished }
        return now < startMilliseconds ? .scheduled : .recording
    }
}
