import Foundation
import HLSPlaylist
public import Logging
public import Persistence
import SharedBytes
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
        /// The recordings are shared (`database.url`) and the database cannot be reached: 503.
        case unavailable
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
/// With shared recordings (`SharedRecordings`: the group's database), a creation or deletion is committed there
/// first, then here; the group's changes arrive through `reconcile()` (on every notification and reconnection).
/// Each origin takes a recording's contents from its own store: the manifests' contents stay local.
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
    /// The manifests as changed, held across a manifest's write (lock order: `LockRank.recordingWriter`).
    private let writer: RankedMutex<[String: RecordingManifest]>
    /// A copy of `writer`'s table for readers, swapped after each change.
    private let visible: RankedMutex<[String: RecordingManifest]>
    /// Held while what recordings pin is read for an eviction, and while a recording is checked against the store.
    private let eviction = RankedMutex<Void>((), rank: .recordingEviction)
    /// Recordings being created in the shared database: their start pins the store's slots already (`evicting`).
    private let pending = RankedMutex<[String: RecordingManifest]>([:], rank: .recordingVisible)
    /// The group's database, nil when recordings are this origin's alone.
    public let shared: (any SharedRecordings)?
    /// One reconciliation at a time; `again` when a notification arrived during one.
    private let reconciling = Mutex<(running: Bool, again: Bool)>((false, false))
    /// The wait before a reconciliation that could not read the database is tried again (nil: none pending).
    private let retry = Mutex<(pending: Bool, delay: Duration)>((false, .milliseconds(500)))
    private let logger: Logger

    /// A store holding `manifests`.
    public init(
        manifests: [RecordingManifest] = [], journal: RecordingJournal? = nil,
        maximumMilliseconds: Int64 = RecordingStore.defaultMaximumMilliseconds, shared: (any SharedRecordings)? = nil,
        logger: Logger
    ) {
        self.shared = shared
        let table = Dictionary(manifests.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        self.journal = journal
        self.maximumMilliseconds = maximumMilliseconds
        writer = RankedMutex(table, rank: .recordingWriter)
        visible = RankedMutex(table, rank: .recordingVisible)
        self.logger = logger
    }

    /// Loads the manifests under `dataDirectory` (none without one); unreadable ones are logged and left alone.
    public static func open(
        dataDirectory: String?, shared: (any SharedRecordings)? = nil, logger: Logger
    ) -> RecordingStore {
        guard let dataDirectory else { return RecordingStore(shared: shared, logger: logger) }
        let journal = RecordingJournal(dataDirectory: dataDirectory)
        let (manifests, unreadable) = journal.loadAll()
        for (path, reason) in unreadable {
            logger.error(
                "recording manifest unreadable: not served", metadata: ["path": "\(path)", "reason": "\(reason)"])
        }
        if !manifests.isEmpty {
            logger.info("recordings restored", metadata: ["hls.recordings": "\(manifests.count)"])
        }
        return RecordingStore(manifests: manifests, journal: journal, shared: shared, logger: logger)
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
        /// What the local checks decided: answered here, or to be created in the group's database first.
        enum Step {
            case answered(RecordingManifest, created: Bool)
            case share(RecordingManifest, any SharedRecordings)
        }
        let result: Result<Step, RecordingError> = writer.withLock { table in
            if let existing = table[request.id] {
                guard existing.channel == channel, existing.requestedStart == request.requestedStart,
                    existing.requestedEnd == request.requestedEnd
                else { return .failure(Self.conflict(id: request.id, with: existing)) }
                return .success(.answered(existing, created: false))
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
            return eviction.withLock { _ -> Result<Step, RecordingError> in
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
                if let shared {
                    // Pinned from now on, while the database is asked (outside the locks: it may take seconds).
                    pending.withLock { $0[manifest.id] = manifest }
                    return .success(.share(manifest, shared))
                }
                if let failure = persist(manifest) { return .failure(failure) }
                table[manifest.id] = manifest
                let copy = table
                visible.withLock { $0 = copy }
                return .success(.answered(manifest, created: true))
            }
        }
        let manifest: RecordingManifest
        let created: Bool
        switch try result.get() {
        case .answered(let answered, let wasCreated): (manifest, created) = (answered, wasCreated)
        case .share(let requested, let shared): (manifest, created) = try createShared(requested, in: shared)
        }
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

    /// Creates `manifest` in the group's database, then here: the stored one when the ID named a recording already.
    private func createShared(
        _ manifest: RecordingManifest, in shared: any SharedRecordings
    ) throws(RecordingError) -> (RecordingManifest, Bool) {
        defer { pending.withLock { $0[manifest.id] = nil } }
        let stored: (stored: RecordingManifest, created: Bool)
        do {
            stored = try shared.create(manifest)
        } catch {
            logger.error("recording not created", metadata: ["hls.recording": "\(manifest.id)", "reason": "\(error)"])
            throw RecordingError(.unavailable, error.message)
        }
        guard stored.created || stored.stored.isSameRequest(as: manifest) else {
            throw Self.conflict(id: manifest.id, with: stored.stored)
        }
        return (try keep(stored.stored), stored.created)
    }

    /// Keeps a recording of the group here (its manifest written first), unless the same request is kept already.
    /// - Returns: the manifest kept (the local one, with its contents, when it was the same request).
    private func keep(_ manifest: RecordingManifest) throws(RecordingError) -> RecordingManifest {
        let result: Result<RecordingManifest, RecordingError> = writer.withLock { table in
            if let local = table[manifest.id], local.isSameRequest(as: manifest) { return .success(local) }
            if let failure = persist(manifest) { return .failure(failure) }
            table[manifest.id] = manifest
            let copy = table
            visible.withLock { $0 = copy }
            return .success(manifest)
        }
        return try result.get()
    }

    private static func conflict(id: String, with existing: RecordingManifest) -> RecordingError {
        RecordingError(
            .conflict, field: "id",
            "id '\(id)' already names a different recording (of channel '\(existing.channel)',"
                + " \(existing.requestedStart) to \(existing.requestedEnd))")
    }

    /// Deletes a recording: only its manifest goes; the store's bytes it shared stay until eviction frees them.
    /// With shared recordings, the group's database first (every origin of the group deletes it).
    /// - Throws: `unknown`, `notPersisted`, `unavailable`.
    func delete(id: String, channel: String) throws(RecordingError) {
        var deletedInGroup = false
        if let shared {
            do {
                deletedInGroup = try shared.delete(id: id, channel: channel)
            } catch {
                throw RecordingError(.unavailable, error.message)
            }
        }
        let result: Result<Void, RecordingError> = writer.withLock { table in
            guard table[id]?.channel == channel else {
                if deletedInGroup { return .success(()) }
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
    /// slots, scheduled ones and those being created in the group's database too); nil when it has none.
    func evicting<Result>(channel: String, _ body: (Int64?) -> Result) -> Result {
        eviction.withLock { _ in
            let kept = visible.withLock { table in
                table.values.lazy.filter { $0.channel == channel }.map(\.startMilliseconds).min()
            }
            let created = pending.withLock { table in
                table.values.lazy.filter { $0.channel == channel }.map(\.startMilliseconds).min()
            }
            return body([kept, created].compactMap { $0 }.min())
        }
    }

    /// Makes this origin's recordings those of the group: adopts the ones it does not have (their manifests written
    /// here; each origin takes the contents from its own store), drops the ones deleted in the group, and stores
    /// the ones the group does not know (made before `database.url` was set). Call it on every notification of a
    /// change and after (re)connecting; it reads the database: off the tick's thread and the event loops. Calls
    /// during a run make one more run.
    public func reconcile() {
        guard let shared else { return }
        let first = reconciling.withLock { state -> Bool in
            if state.running {
                state.again = true
                return false
            }
            state.running = true
            return true
        }
        guard first else { return }
        var read = false
        repeat {
            read = reconcileOnce(shared)
        } while reconciling.withLock { state -> Bool in
            defer { state.again = false }
            if !state.again { state.running = false }
            return state.again
        }
        retryUnlessRead(read)
    }

    /// After a reconciliation that could not read the database, another after 0.5 s, 1 s, 2 s ... (at most 30 s
    /// apart) until one can: a change announced while the read failed is not missed until the next announcement.
    private func retryUnlessRead(_ read: Bool) {
        let delay = retry.withLock { retry -> Duration? in
            if read {
                retry.delay = .milliseconds(500)
                return nil
            }
            guard !retry.pending else { return nil }
            retry.pending = true
            defer { retry.delay = min(retry.delay * 2, .seconds(30)) }
            return retry.delay
        }
        guard let delay else { return }
        BackgroundWork.run(after: delay) { [self] in
            retry.withLock { $0.pending = false }
            reconcile()
        }
    }

    /// - Returns: whether the group's recordings could be read.
    private func reconcileOnce(_ shared: any SharedRecordings) -> Bool {
        let list: SharedRecordingList
        do {
            list = try shared.list()
        } catch {
            logger.warning("recordings not compared with the group's", metadata: ["reason": "\(error)"])
            return false
        }
        let inGroup = Set(list.recordings.map(\.id))
        let unknownToGroup: [RecordingManifest] = writer.withLock { table in
            var changed = false
            for manifest in list.recordings {
                if let local = table[manifest.id], local.isSameRequest(as: manifest) { continue }
                if persist(manifest) != nil { continue }
                table[manifest.id] = manifest
                changed = true
                logger.info(
                    "recording adopted from the group",
                    metadata: ["hls.channel": "\(manifest.channel)", "hls.recording": "\(manifest.id)"])
            }
            for id in list.deleted where table[id] != nil && !inGroup.contains(id) {
                do throws(DurableWriteError) {
                    try journal?.remove(id: id)
                } catch {
                    logger.error("recording deleted in the group not deleted here", metadata: ["reason": "\(error)"])
                    continue
                }
                table[id] = nil
                changed = true
                logger.info("recording deleted in the group", metadata: ["hls.recording": "\(id)"])
            }
            if changed {
                let copy = table
                visible.withLock { $0 = copy }
            }
            return table.values.filter { !inGroup.contains($0.id) && !list.deleted.contains($0.id) }
        }
        for var manifest in unknownToGroup {
            manifest.contents = nil
            do throws(SharedRecordingsUnavailable) {
                _ = try shared.create(manifest)
                logger.info("recording shared with the group", metadata: ["hls.recording": "\(manifest.id)"])
            } catch {
                logger.warning("recording not shared with the group", metadata: ["reason": "\(error)"])
                return false
            }
        }
        return true
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
