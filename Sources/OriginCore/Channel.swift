public import GapFiller
public import HLSPackaging
import HLSPlaylist
public import LiveTimeline
package import Logging
import Markers
import MediaProbe
package import Persistence
public import SharedBytes
import Synchronization

/// What the origin did with an accepted push.
public struct IngestReceipt: Sendable, Hashable {
    /// What the push was.
    public enum Kind: Sendable, Hashable {
        /// A media segment, now in its slot.
        case segment
        /// An fMP4 initialization section, stored (a new version only if the bytes changed).
        case initSection
        /// A playlist hint, read (the origin keeps its own playlist).
        case hintRead
        /// A file the origin takes and ignores (an encoder's DASH manifest, `.mpd`).
        case ignored
        /// A segment the rendition already lists as its newest (a repeated push, or one repaired from a peer first).
        case alreadyListed
    }

    /// What the push was.
    public let kind: Kind
    /// Human-readable summary, e.g. `720p: msn 42, 2.000 s, pdt 2026-...`.
    public let message: String
    /// MSN given to the segment, if it was one.
    public let msn: UInt64?
}

/// One live channel: its renditions, the slot timeline they share, and the snapshot the HTTP layer serves.
///
/// The channel is the ingest loop of the design: every media sequence number is a *slot* on the channel's
/// PROGRAM-DATE-TIME timeline, the same in every rendition. A rendition's segment fills the rendition's next slot
/// when it arrives; when a slot's end plus the grace period passes on the shared clock (`tick()`), every started
/// rendition that did not fill it gets an EXT-X-GAP entry, and the one that comes back later gets
/// EXT-X-DISCONTINUITY at the join. PDT advances by exactly the EXTINF durations and is anchored on the shared clock
/// only when the channel starts.
public final class Channel: Sendable {
    /// Channel name (URL component).
    public let name: String
    /// The settings the channel was created with.
    public let configuration: ChannelConfiguration
    let clock: any OriginClock
    let logger: Logger
    /// The ingest loop's state. Every change takes this lock once and, still holding it, carries out what the
    /// state asks for: the journal write, then rendering and publishing the snapshot.
    ///
    /// Lock order (a lock may be taken while holding the ones before it, never the other way round):
    /// `Origin.directory` and `TestSourceInput.feeds`: each held alone, never taking another;
    /// `TestSourceInput.following` -> `TestSourceInput.feeds`, and -> `Channel.state` (a new feed's slate);
    /// `TestSourceFeed.streaming` -> `TestSourceFeed.feeds`, and -> `Channel.state` (through the push);
    /// `MarkerStore.writer` (held across the marker journal's fsync) -> `MarkerStore.visible`, `MarkerStore.failure`;
    /// `Channel.state` -> `MarkerStore.visible` (rendering reads the book) -> `HLSOutput.current`;
    /// `Channel.state` -> `Channel.journalNote`. `Channel.state` is never held while taking `MarkerStore.writer`.
    /// `RecordingStore.writer` -> `RecordingStore.eviction` -> `ChannelStore.files`, `RecordingStore.visible`;
    /// `Channel.state` is never held while taking a `RecordingStore` lock. The locks with a `LockRank` (`state`,
    /// `HLSOutput.current`, `journalNote`, `MarkerStore.writer` and `.visible`, `Origin.directory`, the
    /// `RecordingStore` locks and `ChannelStore.files`) check this order in debug builds (`LockRank`).
    let state: RankedMutex<ChannelState>
    /// The HLS output: it keeps the one published snapshot (`snapshot`), which the HTTP routes read typed.
    private let hls: HLSOutput
    /// The outputs a publish hands the new timeline value to after `hls`: the ones the `ChannelFactory` adds
    /// (`ChannelFactory.outputs`).
    private let outputs: [any TimelineOutput]
    /// The published snapshot's version, readable without a lock (stored after the snapshot is).
    private let publishedVersionValue = Atomic<UInt64>(0)
    /// `ChannelState.lowestUnpublishedMSN` as of the last publish: the store answers only MSNs below it.
    private let unpublishedFromValue = Atomic<UInt64>(0)
    /// Each rendition's version and retention floors, readable without a lock (see `RenditionVersions`).
    let renditionVersions = Mutex<[String: RenditionVersions]>([:])
    /// The channel's date ranges (ad markers), journaled; see `Channel+Markers.swift`.
    public let markers: MarkerStore
    /// What the SCTE-35 cues read from the pushed stream did (`Channel+InbandCues.swift`).
    let inbandCueStatistics = Mutex<InbandCueStatus>(InbandCueStatus(mode: ""))
    /// Where cues from the stream are stored in a shared marker book, in order, off the pushes' threads (at most 256
    /// segments' cues wait while the database is away).
    let inbandCueLane = BackgroundLane(limit: 256)
    /// A prune of shared markers is running on a background thread (`pruneMarkers`).
    let sharedPruneRunning = Atomic<Bool>(false)

    private let journal: StateJournal?
    /// What happened to the journal at start-up or since (shown in the channel status).
    private let journalNote: RankedMutex<String?>

    /// The channel's durable segment store; nil keeps segments in memory only.
    let store: ChannelStore?
    /// How the store's writes fare: the newest failure and the failed writes since the start (`StorageHealth`).
    let storageHealth: StorageHealth
    /// When the store last freed what the live window no longer needs (shared clock, ms).
    private let lastEviction = Atomic<Int64>(0)
    /// The origin's recordings: their intervals pin the channel's stored slots (see `Channel+Recordings.swift`).
    let recordings: RecordingStore?
    /// Stored segments whose bytes passed their check, with their chunk file (served from it from then on).
    let verified = Mutex<[StoredSegmentKey: (SegmentRecord, String)]>([:])
    /// The channel's key secret and key schedule on disk; nil keeps them in memory only.
    let keyJournal: KeyJournal?
    /// Memoized ciphertexts of an encrypted channel (see `Channel+Encryption.swift`); a leaf lock, also taken while
    /// holding `Channel.state` (publish prunes it).
    let ciphertexts: Mutex<CiphertextCache>
    /// Low-Latency requests waiting for a part: blocking playlist reloads and preload-hinted parts (see
    /// `Channel+Waiting.swift`).
    let waiters = LowLatencyWaiters()
    /// Whether a reload retired this object, the gate every change passes, and its successor
    /// (`ChannelRetirement`, `Channel+Reload.swift`).
    let retirement = ChannelRetirement()
    /// Every changing operation passes it; retirement closes it.
    var gate: ChannelGate { retirement.gate }
    /// `ChannelState.memoryBytes` as of the last change, readable without the lock (`admit` reads it per push).
    private let memoryBytesValue = Atomic<Int64>(0)

    /// Creates a channel with the configured renditions, continuing from its store (the window as it was) or, when
    /// there is nothing to restore, from its journal (sequence numbers only).
    /// - Parameters:
    ///   - journal: where the channel keeps its sequence numbers across restarts; nil keeps nothing.
    ///   - markers: the channel's marker store (loaded from its journal); nil: an empty one kept in memory.
    ///   - store: the channel's durable segment store; nil keeps segments in memory only.
    ///   - keys: the key journal (AES-128 secret and schedule); nil: the one beside `journal`, if any.
    ///   - ciphertextCacheBytes: bound of the memoized ciphertexts of an encrypted channel.
    ///   - outputs: the timeline's outputs beside HLS (which every channel has), each handed every publish.
    package init(
        configuration: ChannelConfiguration, clock: any OriginClock, logger: Logger, journal: StateJournal? = nil,
        markers: MarkerStore? = nil, store: ChannelStore? = nil, recordings: RecordingStore? = nil,
        keys: KeyJournal? = nil, ciphertextCacheBytes: Int = Channel.defaultCiphertextCacheBytes,
        outputs: [any TimelineOutput] = []
    ) {
        self.name = configuration.name
        let hls = HLSOutput(channel: configuration.name)
        self.hls = hls
        self.outputs = outputs
        let keyJournal = keys ?? journal.map(KeyJournal.beside)
        self.keyJournal = keyJournal
        self.ciphertexts = Mutex(CiphertextCache(limit: ciphertextCacheBytes))
        // Read before the restore; applied once the restored window says which MSN is the next unpublished one.
        let loadedKeys = keyJournal?.load(channel: configuration.name)
        self.recordings = recordings
        self.configuration = configuration
        self.clock = clock
        self.journal = journal
        self.store = store
        var logger = logger
        logger[metadataKey: "hls.channel"] = "\(configuration.name)"
        self.logger = logger
        let now = clock.nowMilliseconds()
        var firstMSN: UInt64 = 0
        var restored: ChannelJournalRecord?
        var note: String?
        switch journal?.load(channel: configuration.name) {
        case .success(let record?):
            restored = record
            firstMSN = record.msnReservedThrough + 1
            note = "continued from the journal: MSNs start at \(firstMSN)"
            logger.info("channel restored from journal", metadata: ["hls.msn": "\(firstMSN)"])
        case .failure(let error):
            // Without a readable journal, start far above anything a channel of segments of >= 1 s can have
            // published: one MSN per second since 2020-09-13.
            firstMSN = UInt64(max(0, now / 1000 - 1_600_000_000))
            note = "journal unreadable (\(error.message)); MSNs start at \(firstMSN), above any published before"
            logger.error(
                "state journal unreadable", metadata: ["reason": "\(error.message)", "hls.msn": "\(firstMSN)"])
        case .success(nil), nil:
            break
        }
        var storageNote: String?
        let stored = Self.loadStore(store, configuration: configuration, logger: logger, note: &storageNote)
        var windowRestored: StoredChannel?
        if let stored, let first = ChannelState.firstRestoredMSN(stored) {
            if Self.downtimeSlots(stored, configuration: configuration, nowMilliseconds: now)
                <= ChannelState.restoreDepth(configuration)
            {
                windowRestored = stored
                firstMSN = first
            } else {
                // Down longer than the window and its retention: nothing restored would still be listed. Continue
                // above every stored MSN, with PDT and discontinuity sequence from the journal.
                let newest = stored.renditions.compactMap { $0.records.last?.msn }.max() ?? first
                firstMSN = max(firstMSN, newest + 1)
            }
        }
        storageHealth = StorageHealth(failure: storageNote, nowMilliseconds: now)
        self.markers = markers ?? MarkerStore(logger: logger)
        var initial = ChannelState(configuration: configuration, firstMSN: firstMSN)
        initial.store.keepsRecords = store != nil
        initial.slateClipSources = Self.loadSlateClips(configuration, logger: logger)
        if journal != nil { initial.journal.msnReservedBelow = firstMSN }
        if let restored { initial.restore(restored) }
        if let windowRestored {
            initial.restore(windowRestored, targetDuration: restored?.targetDuration, nowMilliseconds: now)
            logger.info(
                "channel restored from the segment store",
                metadata: [
                    "hls.msn": "\(windowRestored.slots.last?.msn ?? firstMSN)",
                    "hls.renditions": "\(windowRestored.renditions.count)",
                ])
        }
        for rendition in configuration.renditions where initial.index[rendition.name] == nil {
            initial.addRendition(rendition.name)
        }
        let keysNote = Self.startEncryption(
            &initial, configuration: configuration, keys: keyJournal, loaded: loadedKeys, logger: logger)
        journalNote = RankedMutex(
            [note, keysNote].compactMap { $0 }.joined(separator: "; ").nilIfEmpty, rank: .channelJournalNote)
        state = RankedMutex(initial, rank: .channelState)
        // The time the origin was down becomes GAP entries (as an encoder outage does) before the first publish.
        state.withLock { state in
            pass(&state, nowMilliseconds: now) { $0.tick(nowMilliseconds: now) }
            publish(&state, nowMilliseconds: now)
        }
    }

    /// What the store holds for a channel; nil when it holds nothing or cannot be read (logged, noted).
    private static func loadStore(
        _ store: ChannelStore?, configuration: ChannelConfiguration, logger: Logger, note: inout String?
    ) -> StoredChannel? {
        guard let store else { return nil }
        do {
            guard var stored = try store.load(depth: ChannelState.restoreDepth(configuration)) else { return nil }
            for index in stored.renditions.indices {
                stored.renditions[index].segmentBeforeRecords = Self.segmentBefore(stored.renditions[index], in: store)
            }
            return stored
        } catch {
            note = "segment store unreadable at start (\(error)); sequence numbers continue from the journal"
            logger.error("segment store unreadable", metadata: ["reason": "\(error)"])
            return nil
        }
    }

    /// Most MSNs searched back for the real segment that fillers of a restored outage continue.
    static let fillerSearchDepth: UInt64 = 1800

    /// For a rendition whose restored records start with GAP entries: the newest real segment before them.
    private static func segmentBefore(
        _ rendition: StoredRendition, in store: ChannelStore
    ) -> (record: SegmentRecord, bytes: SharedBytes)? {
        guard let first = rendition.records.first, first.kind != .segment || rendition.bytes[first.msn] == nil else {
            return nil
        }
        var msn = first.msn
        let lowest = first.msn > fillerSearchDepth ? first.msn - fillerSearchDepth : 0
        while msn > lowest {
            msn -= 1
            guard let (record, bytes) = try? store.segment(rendition: rendition.name, msn: msn) else { return nil }
            if record.kind == .segment, let bytes { return (record, bytes) }
        }
        return nil
    }

    /// Slots of the nominal length between the end of what the store holds and now.
    private static func downtimeSlots(
        _ stored: StoredChannel, configuration: ChannelConfiguration, nowMilliseconds now: Int64
    ) -> Int {
        let ends =
            stored.renditions.compactMap { $0.records.last?.endMilliseconds }
            + [stored.slots.last?.endMilliseconds].compactMap { $0 }
        guard let end = ends.max() else { return 0 }
        return Int(max(0, now - end) / max(configuration.segmentDurationMilliseconds, 1))
    }

    /// One pass of the ingest loop under the state lock: `step` changes the state and says what to carry out; then
    /// its store records are written (with `sync: always`, synced), the journal record written and the snapshot
    /// published, in that order. When the store records cannot be written, the pass is undone: the state goes back
    /// to what it was before `step`, nothing is journaled or published, and the store's error is returned (a push
    /// in the pass is refused 507; a tick's slots close on a later tick, once the store takes their records). A
    /// listing or a 2xx therefore never names a record the store does not hold.
    func pass<Outcome>(
        _ state: inout ChannelState, nowMilliseconds now: Int64,
        _ step: (inout ChannelState) -> (Outcome, IngestActions)
    ) -> (outcome: Outcome, storeFailure: StoreError?) {
        // Only a channel with a store can fail a pass; without one, no copy is kept (a kept copy makes the step copy
        // what it changes).
        let before = store == nil ? nil : state
        let (outcome, actions) = step(&state)
        if let store, let before, !actions.storeRecords.isEmpty {
            do throws(StoreError) {
                try store.append(actions.storeRecords)
                clearStorageFailure(indexOnly: true)
            } catch {
                state = before
                noteStorageFailure(Self.indexFailurePrefix + "\(error)")
                return (outcome, error)
            }
        }
        if let record = actions.journalRecord { writeJournal(record) }
        if actions.publish { publish(&state, nowMilliseconds: now) }
        memoryBytesValue.store(state.memoryBytes, ordering: .relaxed)
        return (outcome, nil)
    }

    /// `pass` for a step whose only outcome is its actions.
    @discardableResult
    func pass(
        _ state: inout ChannelState, nowMilliseconds now: Int64, _ step: (inout ChannelState) -> IngestActions
    ) -> StoreError? {
        pass(&state, nowMilliseconds: now) { state in ((), step(&state)) }.storeFailure
    }

    /// Bytes the channel holds in memory (its renditions' listed, retained and held segments and init sections) as
    /// of its last change; no lock.
    public var memoryBytes: Int64 { memoryBytesValue.load(ordering: .relaxed) }

    /// Checks that a push of `bytes` fits the channel's byte limits before anything is staged: in memory
    /// (`limits.channelMemoryBytes`) and on disk (`limits.channelDiskBytes`, after evicting the oldest time-shift
    /// that no player can still be sent to: never a listed or retained segment, nor one a recording pins).
    /// Concurrent pushes may pass it together: the bound holds within one segment per push in flight.
    /// - Throws: `memoryLimit` or `diskLimit`, with a `Retry-After` of a target duration.
    public func admit(bytes: Int, limits: OriginLimits) throws(IngestError) {
        let retryAfter = max(1, configuration.targetDuration ?? Int(configuration.segmentDuration.rounded(.up)))
        let held = memoryBytes
        if held + Int64(bytes) > limits.channelMemoryBytes {
            throw .memoryLimit(
                name, holding: held, adding: bytes, limit: limits.channelMemoryBytes, retryAfter: retryAfter)
        }
        guard let store, store.bytesOnDisk + Int64(bytes) > limits.channelDiskBytes else { return }
        if !evictOldest(until: max(0, limits.channelDiskBytes - Int64(bytes))) {
            throw .diskLimit(
                name, holding: store.bytesOnDisk, adding: bytes, limit: limits.channelDiskBytes,
                retryAfter: retryAfter)
        }
    }

    /// Writes a journal record. A failure is reported here, logged and shown in the channel status (as the marker
    /// journal's are); the change itself stands and is published, as it always was.
    /// Returns true if the record is on disk.
    @discardableResult
    private func writeJournal(_ record: ChannelJournalRecord) -> Bool {
        guard let journal else { return false }
        do {
            try journal.write(record)
            return true
        } catch {
            journalNote.withLock { $0 = "journal write failed: \(error)" }
            logger.error("state journal write failed", metadata: ["reason": "\(error)"])
            return false
        }
    }

    /// Writes the journal now, whether or not a write is due (graceful shutdown: the next run continues from the
    /// newest state, not from the last periodic write). No effect without a journal.
    public func flushJournal() {
        guard journal != nil else { return }
        let now = clock.nowMilliseconds()
        state.withLock { state in writeJournalNow(&state, nowMilliseconds: now) }
    }

    /// Writes the journal record of `state` now (under the state lock).
    func writeJournalNow(_ state: inout ChannelState, nowMilliseconds now: Int64) {
        guard journal != nil, state.journal.msnReservedBelow != nil else { return }
        if writeJournal(state.journalRecord(nowMilliseconds: now)) {
            state.journal.dirty = false
            state.journal.behindEdge = false
            state.journal.lastWrite = now
        }
    }

    /// The latest snapshot. Cheap: takes a lock only to copy one reference.
    public var snapshot: ChannelSnapshot { hls.latest }

    /// Names of the renditions, in multivariant order.
    public var renditionNames: [String] { state.withLock { $0.renditions.map(\.name) } }

    /// How many renditions the channel has, as published.
    public var renditionCount: Int { snapshot.renditions.count }

    /// True if the rendition exists. Reads the published snapshot (a rendition is published as it is added), not the
    /// state: a push takes the state lock only once.
    public func hasRendition(_ rendition: String) -> Bool {
        snapshot.renditions[rendition] != nil
    }

    /// The slate clips of the configured renditions (`slateClip`); a clip that cannot be read or used is logged and
    /// left out (the rendition's filler is then its last keyframe).
    static func loadSlateClips(_ configuration: ChannelConfiguration, logger: Logger) -> [String: any GapFillerSource] {
        guard let template = configuration.slateClip else { return [:] }
        var sources: [String: any GapFillerSource] = [:]
        for rendition in configuration.renditions {
            let path = ChannelConfiguration.slateClipPath(template, rendition: rendition.name)
            do {
                sources[rendition.name] = try ChannelConfiguration.loadSlateClip(path)
            } catch {
                logger.warning(
                    "slate clip not used",
                    metadata: ["hls.rendition": "\(rendition.name)", "path": "\(path)", "reason": "\(error)"])
            }
        }
        return sources
    }

    /// Adds a rendition (auto-create on first push). No effect if it exists.
    /// - Parameter limit: most renditions the channel may have (`limits.renditionsPerChannel`).
    /// - Returns: true if the rendition was added (false: it existed, or the channel is retired).
    /// - Throws: `renditionLimit` if the channel has `limit` renditions already.
    @discardableResult
    public func addRendition(_ rendition: String, limit: Int = .max) throws(IngestError) -> Bool {
        try through(refusal: reloadingError, forward: { channel throws(IngestError) in
            try channel.addRendition(rendition, limit: limit)
        }) { () throws(IngestError) in try addRenditionHere(rendition, limit: limit) }
    }

    private func addRenditionHere(_ rendition: String, limit: Int) throws(IngestError) -> Bool {
        let now = clock.nowMilliseconds()
        let added = try state.withLock { state throws(IngestError) -> Bool in
            guard state.index[rendition] == nil else { return false }
            guard state.renditions.count < limit else { throw .renditionLimit(name, rendition, limit: limit) }
            state.addRendition(rendition)
            publish(&state, nowMilliseconds: now)
            return true
        }
        if added { logger.info("rendition created", metadata: ["hls.rendition": "\(rendition)"]) }
        return added
    }

    /// Sets what makes the filler segments of a rendition's GAP entries (the test source registers its slate);
    /// without one, pushed MPEG-TS renditions repeat their last keyframe. Takes effect at the next outage.
    public func setGapFillerSource(_ source: any GapFillerSource, rendition: String) {
        state.withLock { state in
            guard let index = state.index[rendition] else { return }
            state.renditions[index].gapFillerSource = source
        }
    }

    /// The current initialization section of a rendition as published (fMP4 segments need it to be probed), read
    /// without the state lock.
    func currentInitSection(_ rendition: String) -> InitSectionInfo? {
        guard let published = snapshot.renditions[rendition], let current = published.currentInitVersion else {
            return nil
        }
        return published.initSections[current]?.info
    }

    /// Accepts a media segment into the rendition's next slot (the test source's way in; pushes come through
    /// `Origin.ingest`).
    public func acceptSegment(rendition: String, bytes: SharedBytes) throws(IngestError) -> IngestReceipt {
        try accept(PushedMedia.probeSegment(bytes, initSection: currentInitSection(rendition)), rendition: rendition)
    }

    /// Takes what the probe made of a push: a refusal is counted in the rendition's status.
    func accept(
        _ probed: Result<PushedMedia, IngestError>, rendition: String, sequenceNumber: Int? = nil,
        announcedContainers: [String: MediaContainer] = [:], placement: PeerPlacement? = nil
    ) throws(IngestError) -> IngestReceipt {
        switch probed {
        case .success(let media):
            return try accept(
                media, rendition: rendition, sequenceNumber: sequenceNumber, announcedContainers: announcedContainers,
                placement: placement)
        case .failure(let error): throw recordRejection(rendition: rendition, error)
        }
    }

    /// Takes probed media into the rendition: one pass under the state lock changes the state, writes the journal
    /// if due and publishes.
    /// - Parameters:
    ///   - sequenceNumber: the number the input read from the push's naming (`MediaPush.sequenceNumber`): it pairs
    ///     WebVTT segments with their parent's.
    ///   - announcedContainers: containers the renditions' pushes announced (`Origin.announce`),
    ///     for a WebVTT segment whose parent has not delivered yet.
    ///   - placement: a segment repaired from a peer: the slot it fills (`PeerPlacement`).
    func accept(
        _ media: PushedMedia, rendition: String, sequenceNumber: Int? = nil,
        announcedContainers: [String: MediaContainer] = [:], placement: PeerPlacement? = nil
    ) throws(IngestError) -> IngestReceipt {
        try through(refusal: reloadingError, forward: { channel throws(IngestError) in
            try channel.accept(
                media, rendition: rendition, sequenceNumber: sequenceNumber, announcedContainers: announcedContainers,
                placement: placement)
        }) { () throws(IngestError) in
            try acceptHere(
                media, rendition: rendition, sequenceNumber: sequenceNumber, announcedContainers: announcedContainers,
                placement: placement)
        }
    }

    private func acceptHere(
        _ media: PushedMedia, rendition: String, sequenceNumber: Int?, announcedContainers: [String: MediaContainer],
        placement: PeerPlacement?
    ) throws(IngestError) -> IngestReceipt {
        let now = clock.nowMilliseconds()
        var media = media
        if case .segment(_, let info) = media, info.container == .webVTT {
            // The served (stored, CRC'd) bytes carry the map: its offset depends on the parent, read under the lock.
            let offset = state.withLock {
                $0.webVTTTimestampOffset(rendition: rendition, announcedContainers: announcedContainers)
            }
            media = media.withWebVTTTimestampMap(mpegts: offset)
        }
        switch media {
        case .initSection(let bytes, let info):
            let renditionStore = try self.renditionStore(rendition)
            let version = try state.withLock { state throws(IngestError) -> Int in
                let before = state
                if let error = state.settleRole(rendition: rendition, tracks: info.tracks) { throw error }
                guard let version = state.adoptInitSection(rendition: rendition, bytes: bytes, info: info) else {
                    throw .unknownRendition(name, rendition)
                }
                if let renditionStore, before.currentInitVersion(rendition) != version {
                    // Durable before the answer; rare (once per encoder start), so written under the lock.
                    do {
                        try renditionStore.writeInitSection(version: version, bytes: bytes)
                    } catch {
                        state = before
                        noteStorageFailure("init section write failed: \(error)")
                        throw .notPersisted("\(rendition): initialization section", error)
                    }
                }
                publish(&state, nowMilliseconds: now)
                return version
            }
            return IngestReceipt(kind: .initSection, message: "\(rendition): init-\(version).mp4", msn: nil)
        case .segment(let bytes, let info):
            // Durable before the lock is taken (`sync: always` waits for the disk here, holding no lock).
            let stored: StoredSegment?
            do throws(IngestError) {
                stored = try stage(bytes, rendition: rendition, container: info.container)
            } catch {
                throw recordRejection(rendition: rendition, error)
            }
            let result = try state.withLock { state throws(IngestError) in
                let (result, failure) = pass(&state, nowMilliseconds: now) { state in
                    state.accept(
                        rendition: rendition, bytes: bytes, info: info, stored: stored, sequenceNumber: sequenceNumber,
                        placement: placement, nowMilliseconds: now)
                }
                return failure.map { .failure(.notPersisted("\(rendition): segment's index record", $0)) } ?? result
            }
            let accepted = try receipt(result, rendition: rendition)
            if let msn = accepted.msn { encryptAccepted(rendition: rendition, msn: msn, bytes: bytes) }
            applyInbandCues(info, accepted: result)
            return accepted
        }
    }

    /// Writes a segment's bytes to the rendition's store (outside any lock; `sync: always` waits for the disk):
    /// where they are, nil without a store; a failure is noted (status, metrics, log) and thrown as `notPersisted`.
    func stage(
        _ bytes: SharedBytes, rendition: String, container: MediaContainer
    ) throws(IngestError)
        -> StoredSegment?
    {
        guard let renditionStore = try renditionStore(rendition) else { return nil }
        do {
            let stored = try renditionStore.stage(bytes, container: container)
            clearStorageFailure()
            return stored
        } catch {
            noteStorageFailure("segment write failed: \(error)")
            throw .notPersisted("\(rendition): segment", error)
        }
    }

    /// The rendition's part of the store (created on first use); nil without a store.
    func renditionStore(_ rendition: String) throws(IngestError) -> RenditionStore? {
        guard let store else { return nil }
        do {
            return try store.rendition(rendition)
        } catch {
            noteStorageFailure("rendition directory: \(error)")
            throw .notPersisted("\(rendition): rendition", error)
        }
    }

    /// How the storage failure of an index write starts.
    static let indexFailurePrefix = "index write failed: "

    /// Records a storage failure: logged as an error when it starts, shown in the channel status until a write
    /// succeeds again.
    func noteStorageFailure(_ message: String) {
        if storageHealth.fail(message, nowMilliseconds: clock.nowMilliseconds()) {
            logger.error("durable store failing", metadata: ["reason": "\(message)"])
        }
    }

    /// Called after a store write succeeded: a degraded store is healthy again. `indexOnly`: an index write
    /// succeeded, which says nothing about segment writes (index files are reserved ahead, so they still take
    /// records on a full disk): only an index write failure is cleared.
    private func clearStorageFailure(indexOnly: Bool = false) {
        if let cleared = storageHealth.recover(only: indexOnly ? Self.indexFailurePrefix : nil) {
            logger.notice("durable store writing again", metadata: ["previously": "\(cleared)"])
        }
    }

    /// The store's part of the channel status; nil without a store.
    private func storageStatus() -> StorageStatus? {
        guard let store else { return nil }
        let failure = storageHealth.failure
        return StorageStatus(
            state: failure == nil ? "ok" : "degraded", reason: failure?.message,
            since: failure.map { ProgramDateTime(millisecondsSince1970: $0.sinceMilliseconds).formatted },
            bytes: store.bytesOnDisk, writeFailures: storageHealth.failedWrites,
            horizonMSN: store.horizon, nearlyFull: storageHealth.lowSpace)
    }

    func receipt(
        _ result: Result<WindowEntry, IngestError>, rendition: String
    ) throws(IngestError)
        -> IngestReceipt
    {
        switch result {
        case .failure(let error) where error.reason == .alreadyListed:
            logger.debug("segment already listed", metadata: ["hls.rendition": "\(rendition)"])
            return IngestReceipt(kind: .alreadyListed, message: "\(rendition): \(error.message)", msn: nil)
        case .failure(let error):
            logger.warning(
                "segment rejected", metadata: ["hls.rendition": "\(rendition)", "reason": "\(error.message)"])
            throw error
        case .success(let entry):
            logger.debug(
                "segment accepted",
                metadata: [
                    "hls.rendition": "\(rendition)", "hls.msn": "\(entry.msn)",
                    "hls.duration_ms": "\(entry.durationMilliseconds)",
                ])
            let pdt = ProgramDateTime(millisecondsSince1970: entry.programDateTimeMilliseconds).formatted
            let seconds = Double(entry.durationMilliseconds) / 1000
            return IngestReceipt(
                kind: .segment,
                message: "\(rendition): msn \(entry.msn), \(seconds) s, pdt \(pdt)"
                    + (entry.discontinuity ? ", discontinuity" : ""),
                msn: entry.msn)
        }
    }

    /// Counts a refused push in the rendition's status (`segmentsRejected`, `lastRejection`) and logs it; returns
    /// the error to throw.
    func recordRejection(rendition: String, _ error: IngestError) -> IngestError {
        state.withLock { state in
            if let index = state.index[rendition] { state.countRejection(error, position: index) }
        }
        logger.warning("push rejected", metadata: ["hls.rendition": "\(rendition)", "reason": "\(error.message)"])
        return error
    }

    /// Counts a playlist hint as read (`refused` nil) or refused (`hintsRefused`, `lastRejection`).
    func recordHint(rendition: String, refused: IngestError?) {
        state.withLock { state in
            guard let index = state.index[rendition] else { return }
            if let refused {
                state.renditions[index].statistics.hintsRefused += 1
                state.renditions[index].statistics.lastRejection = refused.message
            } else {
                state.renditions[index].statistics.hintsRead += 1
            }
        }
        if let refused {
            logger.warning(
                "playlist hint refused", metadata: ["hls.rendition": "\(rendition)", "reason": "\(refused.message)"])
        }
    }

    /// Keeps the encoder's multivariant hint (validated) and publishes the multivariant playlist it shapes; the
    /// journal records it at once, so a restart renders the same playlist.
    /// - Returns: what the configuration overrides in the hint (logged here).
    public func adoptMultivariantHint(_ hint: MultivariantHint) -> [String] {
        through(otherwise: [], forward: { $0.adoptMultivariantHint(hint) }) { adoptMultivariantHintHere(hint) }
    }

    private func adoptMultivariantHintHere(_ hint: MultivariantHint) -> [String] {
        let now = clock.nowMilliseconds()
        let contradictions = state.withLock { state -> [String] in
            let contradictions = state.adoptMultivariantHint(hint)
            if state.journal.msnReservedBelow != nil { writeJournal(state.journalRecord(nowMilliseconds: now)) }
            publish(&state, nowMilliseconds: now)
            return contradictions
        }
        for contradiction in contradictions {
            logger.warning(
                "multivariant hint overridden by the configuration", metadata: ["reason": "\(contradiction)"])
        }
        return contradictions
    }

    /// Counts a refused multivariant hint and logs why; the previous hint stays.
    public func refuseMultivariantHint(_ error: IngestError) {
        state.withLock { $0.refuseMultivariantHint() }
        logger.warning("multivariant hint refused", metadata: ["reason": "\(error.message)"])
    }

    /// The slots whose segment is overdue (its slot ended `lateness` ms ago) for a media rendition, before the
    /// ingest loop closes them as GAPs: what a peer of the redundancy group may repair.
    public func missingSlots(lateness: Int64) -> [MissingSlot] {
        let now = clock.nowMilliseconds()
        return state.withLock { $0.missingSlots(nowMilliseconds: now, lateness: lateness) }
    }

    /// While the channel catches up after a restart: the peers list slot `msn` of `rendition` as a GAP (or no
    /// longer list it), so it is a GAP here too and the slots after it can be repaired. False when nothing changed
    /// (not catching up, or `msn` is not the rendition's next slot).
    @discardableResult
    public func acceptPeerGap(rendition: String, msn: UInt64) -> Bool {
        peerStep { $0.placePeerGap(rendition: rendition, msn: msn, nowMilliseconds: $1) }
    }

    /// One change a peer of the redundancy group settled, under the state lock: its actions carried out; false when
    /// it changed nothing.
    private func peerStep(_ change: (inout ChannelState, Int64) -> IngestActions?) -> Bool {
        // A retired channel's peer steps are not forwarded: the successor finds its missing slots itself.
        gate.enter { peerStepHere(change) } ?? false
    }

    private func peerStepHere(_ change: (inout ChannelState, Int64) -> IngestActions?) -> Bool {
        let now = clock.nowMilliseconds()
        return state.withLock { state in
            let (changed, failure) = pass(&state, nowMilliseconds: now) { state in
                let actions = change(&state, now)
                return (actions != nil, actions ?? IngestActions(publish: false))
            }
            return changed && failure == nil
        }
    }

    /// The slot held until the redundancy group agrees where the feed it opens starts (the first slot of this run, a
    /// return from an outage, an encoder restart): a media rendition that filled it, its MSN and PDT; nil when none
    /// is held (`ChannelState+Agreement`).
    public var heldOpening: HeldOpening? { state.withLock { $0.heldOpening } }

    /// Ends the hold of slot `msn` as the group agreed: `agreed`, the MSN and PDT a peer lists or the preferred of
    /// the held candidates (nil: the channel's own); `peerSequence`, the discontinuity sequence number a peer lists
    /// for a first slot. False when nothing was held.
    @discardableResult
    public func settleOpening(msn: UInt64, agreed: OpeningCandidate?, peerSequence: UInt64?) -> Bool {
        peerStep { $0.settleOpening(msn: msn, agreed: agreed, peerSequence: peerSequence, nowMilliseconds: $1) }
    }

    /// Runs the ingest loop up to the shared clock's now: closes every slot whose deadline passed (writing GAP
    /// entries for renditions that did not deliver) and releases removed segments whose retention ended.
    public func tick() {
        // A retired channel ticks no more (its successor does).
        _ = gate.enter { tickHere() }
    }

    private func tickHere() {
        let now = clock.nowMilliseconds()
        let floor = state.withLock { state -> UInt64? in
            pass(&state, nowMilliseconds: now) { $0.tick(nowMilliseconds: now) }
            return state.oldestKeptMSN
        }
        pruneMarkers()
        waiters.expire(nowMilliseconds: now)
        evictStore(below: floor, nowMilliseconds: now)
    }

    /// How often the store frees what no rendition keeps any more.
    static let evictionIntervalMilliseconds: Int64 = 10_000

    /// Frees the store's files below the oldest MSN any rendition still lists or retains (less the restore depth),
    /// or, with `dvr`, below the slot that was live `dvr.hours` ago; then, over `dvr.maxBytes`, the oldest slots until
    /// under it. Outside the state lock; at most once per interval.
    private func evictStore(below floor: UInt64?, nowMilliseconds now: Int64) {
        guard let store, let floor else { return }
        let last = lastEviction.load(ordering: .relaxed)
        guard now - last >= Self.evictionIntervalMilliseconds,
            lastEviction.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged
        else { return }
        let depth = UInt64(ChannelState.restoreDepth(configuration))
        var below = floor > depth ? floor - depth : 0
        do {
            if let dvr = configuration.dvr {
                // Keep `dvr.hours` of slots: evict below the slot that was live that long ago.
                below = min(below, try store.slot(containing: now - dvr.milliseconds)?.msn ?? 0)
            }
            try evictUnpinned(store, below: min(below, floor))
        } catch {
            noteStorageFailure("eviction failed: \(error)")
        }
        if let limit = configuration.dvr?.maxBytes { evictOldest(until: limit) }
    }

    /// The PDT of the oldest slot the store holds (the oldest time-shift point); nil without a store or slots.
    public var oldestStoredProgramDateTime: Int64? {
        (try? store?.slotRange())??.oldest.programDateTimeMilliseconds
    }

    /// Bytes the channel's store holds on disk (0 without a store).
    public var storedBytes: Int64 { store?.bytesOnDisk ?? 0 }

    /// Evicts the oldest stored slots until the store holds at most `limit` bytes, never an MSN still listed or
    /// retained (nor one a recording pins). Returns false if it could not get under the limit.
    @discardableResult
    public func evictOldest(until limit: Int64) -> Bool {
        guard let store, store.bytesOnDisk > limit else { return true }
        // Nothing at or above the oldest MSN still listed or retained goes; `evictUnpinned` keeps what recordings pin.
        guard let hotFloor = state.withLock({ $0.oldestKeptMSN }) else { return false }
        guard var below = (try? store.slotRange())??.oldest.msn else { return false }
        while store.bytesOnDisk > limit {
            let next = min(below + Self.evictionStepSlots, hotFloor)
            guard next > below else { return false }
            do {
                let evicted = try evictUnpinned(store, below: next)
                guard evicted > below else { return false }  // a recording pins what is left
                below = evicted
            } catch {
                noteStorageFailure("eviction failed: \(error)")
                return false
            }
        }
        logger.info(
            "oldest time-shift evicted for space", metadata: ["hls.msn": "\(below)", "limit": "\(limit)"])
        return true
    }

    /// Slots evicted per step when the store is over a byte limit (whole chunks go once all their slots are below).
    static let evictionStepSlots: UInt64 = 64

    /// Status for the admin API and metrics.
    public func status() -> ChannelStatus {
        let now = clock.nowMilliseconds()
        let notes = [journalNote.withLock { $0 }, markers.writeFailure].compactMap { $0 }
        let note = notes.isEmpty ? nil : notes.joined(separator: "; ")
        var status = state.withLock { $0.status(name: name, nowMilliseconds: now, journalNote: note) }
        status.storage = storageStatus()
        status.encryption = encryptionStatus()
        // The placement reads the window: only for a channel whose stream carried cues.
        if inbandCueStatistics.withLock({ $0.sectionsRead }) > 0 { status.inbandCues = inbandCueStatus() }
        return status
    }

    /// Hands the new timeline value to every output (HLS renders the changed renditions and the multivariant
    /// playlist) and swaps in the new HLS snapshot. Called under the state lock, so snapshots are published in the
    /// order of the changes they show.
    func publish(_ state: inout ChannelState, nowMilliseconds now: Int64) {
        let context = TimelineOutputContext(channel: name, nowMilliseconds: now, markers: markers.book)
        let (previous, snapshot) = hls.render(state, context: context)
        for output in outputs { output.publish(state, context: context) }
        unpublishedFromValue.store(state.lowestUnpublishedMSN, ordering: .releasing)
        publishedVersionValue.store(snapshot.version, ordering: .releasing)
        publishRenditionVersions(snapshot, previous: previous)
        if snapshot.encryption != nil { ciphertexts.withLock { $0.prune(to: snapshot) } }
        waiters.published(snapshot, previous: previous)
    }

    /// The version of the latest snapshot, without taking a lock: an answer derived from a snapshot stays valid
    /// while this is that snapshot's `version` (the HTTP layer's per-thread caches check it on every hit).
    public var publishedVersion: UInt64 { publishedVersionValue.load(ordering: .acquiring) }
}

/// A segment that left the live window (and its retention) but is still in the durable store.
public struct StoredSegmentAnswer: Sendable {
    /// How the bytes are served.
    public enum Body: Sendable {
        /// Read (and checked) just now: the first request for the segment since the start.
        case bytes(SharedBytes)
        /// Checked before: served from the chunk file (`path`, byte `range`) without copying.
        case file(path: String, range: Range<Int>)
    }

    /// The segment's record (MSN, PDT, EXTINF, container).
    public let record: SegmentRecord
    public let body: Body
}

extension Channel {
    /// Most segments whose CRC check is remembered (then the memory starts over: they are checked again).
    static let verifiedSegmentLimit = 1 << 15

    /// A segment of the rendition from the durable store (the disk tier), nil if the store does not have it or
    /// its bytes fail their check (logged, counted). The first request reads and checks the bytes; later ones are
    /// served from the file.
    ///
    /// Only MSNs below the channel's lowest unpublished one are answered (and at most the rendition's newest listed
    /// entry): the store also holds records of segments held for their slot, which the opening agreement may
    /// still move, or of a pass that was undone; those are not served (404) until listed, so nothing is cached (for
    /// a year) that the playlist may later give other bytes. Records at listed MSNs are never rewritten, so the check
    /// cache stays valid.
    public func storedSegment(rendition: String, msn: UInt64) -> StoredSegmentAnswer? {
        guard let store else { return nil }
        guard msn < unpublishedFromValue.load(ordering: .acquiring),
            snapshot.renditions[rendition]?.entries.last.map({ msn <= $0.msn }) ?? true
        else { return nil }
        let key = StoredSegmentKey(rendition: rendition, msn: msn)
        if let (record, path) = verified.withLock({ $0[key] }) {
            guard let location = record.location else { return nil }
            let start = Int(location.offset)
            return StoredSegmentAnswer(
                record: record, body: .file(path: path, range: start..<start + Int(location.length)))
        }
        let found: (SegmentRecord, SharedBytes?)?
        do {
            found = try store.segment(rendition: rendition, msn: msn)
        } catch {
            noteStorageFailure("segment read failed: \(error)")
            return nil
        }
        if let (record, bytes) = found, record.kind == .synthesized, let bytes {
            return StoredSegmentAnswer(record: record, body: .bytes(bytes))
        }
        guard let (record, bytes) = found, record.kind == .segment, let location = record.location else { return nil }
        guard let bytes else {
            logger.error(
                "stored segment failed its check and is not served",
                metadata: ["hls.rendition": "\(rendition)", "hls.msn": "\(msn)"])
            return nil
        }
        if let path = try? store.rendition(rendition).chunkPath(location.chunk) {
            verified.withLock { verified in
                if verified.count >= Self.verifiedSegmentLimit { verified.removeAll() }
                verified[key] = (record, path)
            }
        }
        return StoredSegmentAnswer(record: record, body: .bytes(bytes))
    }
}

extension String {
    fileprivate var nilIfEmpty: String? { isEmpty ? nil : self }
}

/// A rendition's MSN, as the key of checked stored segments.
struct StoredSegmentKey: Hashable {
    let rendition: String
    let msn: UInt64
}
