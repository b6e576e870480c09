import Dispatch
import Glibc
import HLSPlaylist
public import LiveTimeline
public import Logging
public import Markers
public import MediaProbe
public import Persistence
public import SharedBytes
import Synchronization

/// Settings of the origin core.
public struct OriginConfiguration: Sendable {
    /// Channels declared in the configuration file, in order.
    public var channels: [ChannelConfiguration]
    /// Ingest switches and limits.
    public var ingest: IngestConfiguration
    /// Where state that must survive a restart is kept: the state journal in `channels/`, markers in `markers/`,
    /// segments in `store/`; nil keeps everything in memory only. Default: nil.
    public var dataDirectory: String?
    /// How the segment store writes (with a data directory).
    public var storage: StorageConfiguration
    /// Bounds on what pushes can make the origin hold (channels, renditions, bytes, creations per minute).
    public var limits: OriginLimits

    public init(
        channels: [ChannelConfiguration] = [], ingest: IngestConfiguration = IngestConfiguration(),
        dataDirectory: String? = nil, storage: StorageConfiguration = StorageConfiguration(),
        limits: OriginLimits = OriginLimits()
    ) {
        self.channels = channels
        self.ingest = ingest
        self.dataDirectory = dataDirectory
        self.storage = storage
        self.limits = limits
    }
}

/// Settings of the durable segment store.
public struct StorageConfiguration: Sendable, Hashable {
    /// When a write is made durable. Default: `.always` (before the push is answered and before anything is listed).
    public var sync: StorageSyncPolicy
    /// At most this many bytes in the whole store: the globally oldest time-shift goes first, never what a channel
    /// lists. Default: nil = no limit.
    public var maxBytes: Int64?
    /// Keep at least this much free on the store's file system, evicting as for `maxBytes`. Default: nil.
    public var minFreeBytes: Int64?
    /// Segments per chunk file (whole chunks are what eviction frees). Default: 256; tests use small chunks.
    public var segmentsPerChunk = 256

    public init(sync: StorageSyncPolicy = .always, maxBytes: Int64? = nil, minFreeBytes: Int64? = nil) {
        self.sync = sync
        self.maxBytes = maxBytes
        self.minFreeBytes = minFreeBytes
    }
}

/// The origin: all channels, the ingest entry point and the ingest loop's tick.
public final class Origin: Sendable {
    /// The settings in force: those the origin was started with, then those of the last reload (`reload(_:)`).
    public var configuration: OriginConfiguration { settings.withLock { $0 } }
    /// Behind `configuration`; held alone, only to copy or swap.
    let settings: Mutex<OriginConfiguration>
    /// One reload at a time.
    let reloading = Mutex<Void>(())
    /// The shared clock.
    public let clock: any OriginClock
    let logger: Logger
    /// The channels by name and in order (`OriginDirectory`: every change wakes the pushes waiting for one).
    let directory: OriginDirectory
    /// The container each rendition's pushes announce by their file names (`channel/rendition` -> container), noted
    /// when a push starts, before its body arrives; held alone. A WebVTT segment that completes before its parent's
    /// first segment does still gets the parent's X-TIMESTAMP-MAP offset from it (ffmpeg streams the `.ts` body
    /// for the whole segment and the small `.vtt` ends at the same moment).
    private let announcedContainers = Mutex<AnnouncedContainers>(AnnouncedContainers())
    /// At most this many renditions' announced containers are kept (names come from outside).
    static let announcedContainerLimit = 4096
    /// Streamed pushes in progress (`beginStreamingPush`), by channel and rendition; held alone.
    private let streamingPushes = Mutex<[StreamingPushKey: StreamingPush]>([:])
    let journal: StateJournal?
    /// Builds channels with what they share (`ChannelFactory`).
    let factory: ChannelFactory
    /// The durable segment store; nil without a data directory.
    let store: SegmentStore?
    /// When the batched store was last flushed (shared clock, ms).
    private let lastFlush = Atomic<Int64>(0)
    /// When the store's byte limits were last enforced (shared clock, ms).
    private let lastLimitCheck = Atomic<Int64>(0)
    /// When the store's free space was last checked against `storage.minFreeBytes` (shared clock, ms).
    private let lastFreeSpaceCheck = Atomic<Int64>(0)
    /// The last free-space check found the store nearly full (its start and end are logged).
    private let nearlyFull = Atomic<Bool>(false)
    /// The last free-space check read the file system under `storage.minFreeBytes` (before any eviction): the
    /// 1 s check evicts only when this turns true, the 10 s round does the rest.
    private let underFreeFloor = Atomic<Bool>(false)
    /// The last eviction for `storage.minFreeBytes` left the file system under its target (nothing more could go).
    private let freeFloorEvictionFellShort = Atomic<Bool>(false)
    /// When `statvfs` on the data directory started failing (shared clock, ms; `Int64.min` while it answers).
    private let freeSpaceUnreadableSince = Atomic<Int64>(.min)
    /// Failed `statvfs` reads of the data directory since the start.
    private let freeSpaceReadFailures = Atomic<Int>(0)
    /// The recordings (live-to-VOD) of every channel, loaded from `recordings/` (see `Origin+Recordings.swift`).
    public let recordings: RecordingStore
    /// Marker books shared by the origins of a group, nil when each channel's journal holds its markers.
    public let sharedMarkers: (any SharedMarkerBooks)?
    /// The audit trail (`hlsorigin.audit`): channel and rendition creations with who pushed them here; admin
    /// actions and refusals from the HTTP handler.
    public let audit: AuditLog
    /// The channel creations pushes may still make (`limits.autoCreationsPerMinute`); held alone.
    private let creations = Mutex(CreationBudget())

    /// Creates the configured channels, restoring each from the data directory; with
    /// auto-create on, channels that were created by pushes in an earlier run are restored too (they answer before
    /// any encoder pushes again).
    /// - Parameters:
    ///   - storeFileIO: the file operations of the segment store (tests inject faults through it).
    ///   - sharedMarkers: marker books shared by a group of origins (PostgreSQL), nil: each channel's journal.
    ///   - sharedRecordings: recordings shared by a group of origins (PostgreSQL), nil: this origin's alone.
    ///   - audit: where the audit trail goes (`hlsorigin.audit`); nil: `logger`.
    ///   - sourceCheck: what the inputs check of a configured channel before it is built, at start (throwing stops
    ///     the start) and on reload (the channel keeps its old settings): the test source's profile names
    ///     (`TestSourceInput.check`).
    ///   - sourcePrepare: what the inputs do to a configured channel once built, before it is listed: the test
    ///     source's slate (`TestSourceInput.prepare`).
    public init(
        configuration: OriginConfiguration, clock: any OriginClock, logger: Logger,
        storeFileIO: any StoreFileIO = PosixFileIO(), sharedMarkers: (any SharedMarkerBooks)? = nil,
        sharedRecordings: (any SharedRecordings)? = nil, audit: Logger? = nil,
        sourceCheck: @escaping @Sendable (ChannelConfiguration) throws -> Void = { _ in },
        sourcePrepare: @escaping @Sendable (Channel) -> Void = { _ in }
    ) throws {
        self.settings = Mutex(configuration)
        self.audit = AuditLog(logger: audit ?? logger, clock: clock)
        self.sharedMarkers = sharedMarkers
        self.clock = clock
        self.logger = logger
        let journal = try configuration.dataDirectory.map { try StateJournal(directory: $0 + "/channels") }
        self.journal = journal
        let store = try configuration.dataDirectory.map {
            try SegmentStore(
                directory: $0 + "/store", sync: configuration.storage.sync, io: storeFileIO,
                maximumSegmentsPerChunk: configuration.storage.segmentsPerChunk)
        }
        self.store = store
        let recordings = RecordingStore.open(
            dataDirectory: configuration.dataDirectory, shared: sharedRecordings, logger: logger)
        self.recordings = recordings
        let factory = ChannelFactory(
            clock: clock, logger: logger, journal: journal, store: store, recordings: recordings,
            sharedMarkers: sharedMarkers, dataDirectory: configuration.dataDirectory, sourceCheck: sourceCheck,
            sourcePrepare: sourcePrepare)
        self.factory = factory
        var channels = OriginDirectory.Channels()
        for channelConfiguration in configuration.channels {
            guard OriginNames.isValid(channelConfiguration.name) else {
                throw IngestError.invalidName("channel", channelConfiguration.name)
            }
            let channel = try factory.configuredChannel(channelConfiguration)
            channels.byName[channel.name] = channel
            channels.order.append(channel.name)
        }
        for name in store?.channelNames().sorted() ?? [] where channels.byName[name] == nil {
            guard configuration.ingest.autoCreate, OriginNames.isValid(name) else {
                logger.warning(
                    "stored channel not restored: it is not configured and auto-create is off",
                    metadata: ["hls.channel": "\(name)"])
                continue
            }
            let channel = try factory.channel(Self.autoCreatedSettings(name, configuration))
            channels.byName[name] = channel
            channels.order.append(name)
        }
        self.directory = OriginDirectory(channels)
    }

    /// The settings of a channel created by a push.
    static func autoCreatedSettings(
        _ name: String, _ configuration: OriginConfiguration
    ) -> ChannelConfiguration {
        var settings = configuration.ingest.autoCreatedChannel
        settings.name = name
        settings.source = .push
        settings.renditions = []
        return settings
    }

    /// The channel with this name.
    public func channel(named name: String) -> Channel? {
        // An uncontended lock costs tens of nanoseconds; a lock-free directory would need memory reclamation.
        directory.read { $0.byName[name] }
    }

    /// All channels in configuration (then creation) order.
    public var allChannels: [Channel] {
        directory.read { directory in directory.order.compactMap { directory.byName[$0] } }
    }

    /// Takes one push from an input (the entry point of every input: HTTP push, peer repair, ...): a playlist hint is
    /// parsed, not trusted; media must be an fMP4 initialization section or a segment (the container is detected
    /// from the bytes).
    ///
    /// Media is probed once, before any lock; a push that would create a channel or rendition is checked completely
    /// before anything is created, so a refused push never leaves an auto-created channel or rendition behind (junk
    /// PUTs would otherwise create channels without limit).
    /// A push is refused past the origin's `limits` (channels, renditions, bytes held, creations per minute) before
    /// anything changes.
    public func ingest(_ push: MediaPush) throws(IngestError) -> IngestReceipt {
        let (channelName, rendition, body) = (push.channel, push.rendition, push.body)
        let (placement, requester) = (push.placement, push.requester)
        guard OriginNames.isValid(channelName) else { throw .invalidName("channel", channelName) }
        guard OriginNames.isValid(rendition) else { throw .invalidName("rendition", rendition) }
        // One copy of the settings for the whole push (a reload may swap them meanwhile).
        let configuration = self.configuration
        guard body.count <= configuration.ingest.maxSegmentBytes else {
            throw .tooLarge(body.count, limit: configuration.ingest.maxSegmentBytes)
        }
        if case .ignored(let message) = push.kind {
            return IngestReceipt(kind: .ignored, message: message, msn: nil)
        }
        let existing = self.channel(named: channelName)
        let wouldCreate = existing.map { $0.configuration.source == .push && !$0.hasRendition(rendition) } ?? true
        let checkBeforeCreating = configuration.ingest.autoCreate && wouldCreate
        if push.kind == .playlistHint {
            let parsed = checkBeforeCreating ? try Self.parseHint(body).get() : nil
            let channel = try channelForIngest(
                channelName, existing: existing, rendition: rendition, requester: requester, settings: configuration)
            return try acceptHint(channel: channel, rendition: rendition, body: body, parsed: parsed)
        }
        let limits = configuration.limits
        if let existing {
            try existing.admit(bytes: body.count, limits: limits)
        } else if Int64(body.count) > limits.channelMemoryBytes {
            throw .memoryLimit(
                channelName, holding: 0, adding: body.count, limit: limits.channelMemoryBytes, retryAfter: 60)
        }
        if checkBeforeCreating {
            // Cheap checks first: a client pushing new names past a limit costs no probe.
            if let refusal = creationRefusal(
                channel: channelName, existing: existing, rendition: rendition, limits: limits)
            {
                throw refusal
            }
        }
        var probed: Result<PushedMedia, IngestError>?
        if checkBeforeCreating {
            // A new rendition has no initialization section yet.
            probed = PushedMedia.probe(label: push.label, body: body, initSection: nil)
            if case .failure(let error) = probed { throw error }
        }
        var channel = try channelForIngest(
            channelName, existing: existing, rendition: rendition, requester: requester, settings: configuration)
        let media =
            probed
            ?? PushedMedia.probe(
                label: push.label, body: body, initSection: channel.currentInitSection(rendition))
        // A WebVTT segment whose parent has not delivered yet takes its timestamp offset from what the parent's
        // pushes announced (`announce(channel:rendition:container:)`).
        var announced: [String: MediaContainer] = [:]
        if case .success(.segment(_, let info)) = media, info.container == .webVTT {
            announced = announcedContainers(channel: channelName)
        }
        let waitEnd = ContinuousClock.now + .milliseconds(Self.reloadWaitMilliseconds)
        while true {
            let seen = directory.generation
            do {
                return try channel.accept(
                    media, rendition: rendition, sequenceNumber: push.sequenceNumber, announcedContainers: announced,
                    placement: placement)
            } catch where error.reason == .reloading && ContinuousClock.now < waitEnd {
                // A reload retired this channel object; its successor takes its place within milliseconds (or the
                // reload fails and the channel carries on): either is announced.
                directory.wait(after: seen, until: waitEnd)
                channel = try channelForIngest(
                    channelName, existing: self.channel(named: channelName), rendition: rendition,
                    requester: requester, settings: configuration)
            }
        }
    }

    /// How long a push waits for a reloaded channel's successor before it is refused (503, retry).
    static let reloadWaitMilliseconds = 2_000

    /// Notes the container an input announces for a rendition's pushes (an HTTP push's file name, when its head
    /// arrives, before the body): the first announcement of a rendition is kept. A WebVTT segment whose parent has
    /// not delivered yet reads it.
    public func announce(channel: String, rendition: String, container: MediaContainer) {
        announcedContainers.withLock { announced in
            guard announced.byChannel[channel]?[rendition] == nil, announced.count < Self.announcedContainerLimit
            else { return }
            announced.byChannel[channel, default: [:]][rendition] = container
            announced.count += 1
        }
    }

    /// The containers announced for a channel's renditions, by rendition.
    func announcedContainers(channel: String) -> [String: MediaContainer] {
        announcedContainers.withLock { $0.byChannel[channel] ?? [:] }
    }

    /// Takes an encoder's multivariant playlist (`PUT /ingest/{channel}/master.m3u8`): read, validated and
    /// normalized (``MultivariantHint``), then kept by the channel, which applies it to its renditions as they
    /// deliver (the configuration wins). A valid hint for a channel that does not exist creates it when auto-create
    /// is on; an invalid one is refused with `invalidHint` and changes nothing.
    /// - Parameter requester: who pushes, named in the audit log when the hint creates the channel.
    public func ingestMultivariantHint(
        channel channelName: String, body: SharedBytes, requester: Requester = .process
    ) throws(IngestError) -> IngestReceipt {
        guard OriginNames.isValid(channelName) else { throw .invalidName("channel", channelName) }
        let existing = self.channel(named: channelName)
        let hint: MultivariantHint
        do {
            hint = try MultivariantHint.read(body.array)
        } catch {
            let refusal = IngestError(.invalidHint, "invalid multivariant hint: \(error.message)")
            existing?.refuseMultivariantHint(refusal)
            throw refusal
        }
        let channel = try channelForIngest(
            channelName, existing: existing, rendition: nil, requester: requester, settings: configuration)
        let contradictions = channel.adoptMultivariantHint(hint)
        let audio = hint.members.filter { $0.kind == .audio }.count
        let subtitles = hint.members.count - audio
        var message =
            "\(channelName): multivariant hint read (\(hint.variants.count) variants, \(audio) audio, "
            + "\(subtitles) subtitle renditions)"
        if !contradictions.isEmpty {
            message += "; the configuration wins over: " + contradictions.joined(separator: "; ")
        }
        return IngestReceipt(kind: .hintRead, message: message, msn: nil)
    }

    /// Largest playlist hint read (1 MiB, about 30,000 segment lines): a bigger one is refused unread.
    /// Encoders should keep their playlist bounded (ffmpeg: `-hls_list_size` other than 0).
    public static let maxHintBytes = 1 << 20

    private static func parseHint(_ body: SharedBytes) -> Result<MediaPlaylist, IngestError> {
        Result { () throws(PlaylistParseError) in try MediaPlaylist.parse(String(decoding: body.array, as: UTF8.self)) }
            .mapError { .invalidHint($0) }
    }

    /// The channel a push goes to, creating it and the rendition when auto-create is on and the origin's limits
    /// allow (`limits.channels`, `limits.autoCreationsPerMinute`, `limits.renditionsPerChannel`). A new channel is
    /// built (reading its journals) outside the directory lock, then inserted; if another push created it
    /// meanwhile, that one is used. Every creation is recorded in the audit log with `requester`.
    /// - Parameter settings: the push's copy of the origin's settings.
    private func channelForIngest(
        _ name: String, existing: Channel?, rendition: String?, requester: Requester, settings: OriginConfiguration
    ) throws(IngestError)
        -> Channel
    {
        let autoCreate = settings.ingest.autoCreate
        let channel: Channel
        if let existing {
            channel = existing
        } else if let raced = self.channel(named: name) {
            channel = raced
        } else {
            guard autoCreate else { throw .unknownChannel(name) }
            channel = try createChannel(name, requester: requester, settings: settings)
        }
        if channel.configuration.source == .testSource { throw .notPushed(name) }
        if let rendition, !channel.hasRendition(rendition) {
            guard autoCreate else { throw .unknownRendition(name, rendition) }
            if try channel.addRendition(rendition, limit: settings.limits.renditionsPerChannel) {
                audit.record(
                    "rendition created", by: requester, outcome: "created",
                    details: ["hls.channel": "\(name)", "hls.rendition": "\(rendition)"])
            }
        }
        return channel
    }

    /// Creates a channel for a push within `limits.channels` and `limits.autoCreationsPerMinute`: the name is
    /// reserved in the directory while the channel is built, so concurrent creations never pass the limit.
    private func createChannel(
        _ name: String, requester: Requester, settings: OriginConfiguration
    ) throws(IngestError) -> Channel {
        let limits = settings.limits
        let waitEnd = ContinuousClock.now + .milliseconds(Self.reloadWaitMilliseconds)
        while true {
            let seen = directory.generation
            let reservation = directory.reserve(name, channelLimit: limits.channels)
            switch reservation {
            case .success(let raced?): return raced
            case .failure(let error): throw error
            case .success(nil): break
            case nil:
                guard ContinuousClock.now < waitEnd else {
                    throw IngestError(.reloading, "channel '\(name)' is being created by another push: retry")
                }
                directory.wait(after: seen, until: waitEnd)
                continue
            }
            break
        }
        let now = clock.nowMilliseconds()
        if let retryAfter = creations.withLock({
            $0.take(perMinute: limits.autoCreationsPerMinute, nowMilliseconds: now)
        }) {
            directory.change { _ = $0.reserved.remove(name) }
            throw .creationRate(name, perMinute: limits.autoCreationsPerMinute, retryAfter: retryAfter)
        }
        let built: Channel
        do {
            built = try factory.channel(Self.autoCreatedSettings(name, settings))
        } catch {
            directory.change { _ = $0.reserved.remove(name) }
            throw .notPersisted("channel '\(name)'", error)
        }
        directory.change { directory in
            directory.reserved.remove(name)
            directory.byName[name] = built
            directory.order.append(name)
        }
        logger.info("channel created on first push", metadata: ["hls.channel": "\(name)"])
        audit.record("channel created", by: requester, outcome: "created", details: ["hls.channel": "\(name)"])
        // Another origin of the group may hold markers for it already.
        factory.readSharedMarkers(of: built)
        return built
    }

    /// The channel a streamed push lists its first part in, creating it and the rendition when auto-create is on.
    func channelForStreamingPush(
        _ name: String, rendition: String, requester: Requester
    ) throws(IngestError) -> Channel {
        try channelForIngest(
            name, existing: channel(named: name), rendition: rendition, requester: requester, settings: configuration)
    }

    /// Notes a streamed push as the rendition's push in progress; a second one is refused (`concurrentPush`) unless
    /// the first is stalled, which it then replaces (the stalled one's segment closes at its last part).
    func registerStreamingPush(_ push: StreamingPush) throws(IngestError) {
        let key = StreamingPushKey(channel: push.channelName, rendition: push.rendition)
        let now = clock.nowMilliseconds()
        let replaced = try streamingPushes.withLock { pushes throws(IngestError) -> StreamingPush? in
            let current = pushes[key]
            if let current, !current.isStalled(nowMilliseconds: now) {
                throw IngestError(
                    .concurrentPush,
                    "\(push.channelName)/\(push.rendition): a segment is still being pushed to this rendition; "
                        + "push one segment at a time")
            }
            pushes[key] = push
            return current
        }
        replaced?.supersede()
    }

    /// A streamed push ended: the rendition takes the next one.
    func endStreamingPush(_ push: StreamingPush) {
        let key = StreamingPushKey(channel: push.channelName, rendition: push.rendition)
        streamingPushes.withLock { pushes in
            if pushes[key] === push { pushes[key] = nil }
        }
    }

    private func acceptHint(
        channel: Channel, rendition: String, body: SharedBytes, parsed: MediaPlaylist?
    )
        throws(IngestError) -> IngestReceipt
    {
        guard body.count <= Self.maxHintBytes else {
            let error = IngestError(
                .hintTooLarge,
                "playlist hint of \(body.count) bytes is larger than \(Self.maxHintBytes) bytes and was not read: "
                    + "keep the encoder's playlist bounded")
            channel.recordHint(rendition: rendition, refused: error)
            throw error
        }
        let hint: MediaPlaylist
        switch parsed.map(Result.success) ?? Self.parseHint(body) {
        case .success(let playlist): hint = playlist
        case .failure(let error):
            channel.recordHint(rendition: rendition, refused: error)
            throw error
        }
        channel.recordHint(rendition: rendition, refused: nil)
        return IngestReceipt(
            kind: .hintRead,
            message: "\(rendition): playlist hint read (\(hint.segments.count) segments); the origin keeps its own",
            msn: nil)
    }

    /// Runs the ingest loop once for every channel: slots whose deadline passed are closed (the inputs deliver on
    /// their own, the test source included: `TestSourceInput`).
    public func tick() {
        for channel in allChannels { channel.tick() }
        finishRecordings()
        flushStoreIfDue()
        enforceStorageLimitsIfDue()
        checkFreeSpaceIfDue()
    }

    /// When the store's limits were last enforced (shared clock, ms).
    private static let limitInterval: Int64 = 10_000

    /// Over `storage.maxBytes`, or under `storage.minFreeBytes` free: evicts the oldest time-shift of the channel
    /// whose stored history starts earliest, channel after channel, until under (never anything listed).
    private func enforceStorageLimitsIfDue() {
        guard store != nil, let directory = configuration.dataDirectory,
            configuration.storage.maxBytes != nil || configuration.storage.minFreeBytes != nil
        else { return }
        let now = clock.nowMilliseconds()
        let last = lastLimitCheck.load(ordering: .relaxed)
        guard now - last >= Self.limitInterval,
            lastLimitCheck.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged
        else { return }
        evictTimeShift(directory: directory)
        if let excess = storageExcess(directory: directory), excess > 0 {
            logger.warning(
                "store over its limit with only live windows left", metadata: ["excess_bytes": "\(excess)"])
        }
    }

    /// Evicts the oldest time-shift of the channel whose stored history starts earliest, channel after channel,
    /// until the store meets its limits or only what channels list or retain is left. Notes whether it fell short
    /// of the free-space target (`freeFloorEvictionFellShort`, read by the free-space judgement).
    private func evictTimeShift(directory: String) {
        var channels = allChannels.compactMap { channel in
            channel.oldestStoredProgramDateTime.map { (channel, $0) }
        }.sorted { $0.1 < $1.1 }
        while let excess = storageExcess(directory: directory), excess > 0, !channels.isEmpty {
            let (oldest, _) = channels.removeFirst()
            _ = oldest.evictOldest(until: max(0, oldest.storedBytes - excess))
        }
        if let target = freeSpaceTarget, let free = Self.freeBytes(directory: directory) {
            freeFloorEvictionFellShort.store(free < target, ordering: .relaxed)
        }
    }

    /// How often the store's free space is checked against `storage.minFreeBytes` (shared clock, ms).
    private static let freeSpaceInterval: Int64 = 1000

    /// Once judged nearly full, the store is judged so until its file system has this much more than
    /// `storage.minFreeBytes` free (a sixteenth of it), and eviction meanwhile aims there: at the floor, one
    /// segment written or evicted would otherwise flip the judgement (and the steering answer) every second.
    public static func freeSpaceMargin(minimum: Int64) -> Int64 { minimum / 16 }

    /// How long a data directory whose free space cannot be read (`statvfs` failing) keeps its last judgement; then
    /// it is cleared (failed writes still judge the store failing on their own).
    static let unreadableFreeSpaceHold: Int64 = 10_000

    /// The free bytes eviction aims at: `storage.minFreeBytes`, plus the margin while judged nearly full.
    private var freeSpaceTarget: Int64? {
        guard let minimum = configuration.storage.minFreeBytes, minimum > 0 else { return nil }
        return nearlyFull.load(ordering: .relaxed) ? minimum &+ Self.freeSpaceMargin(minimum: minimum) : minimum
    }

    /// Every second with `storage.minFreeBytes`. When the file system goes under it, evicts what time-shift can go
    /// at once (not at the next 10 s round; while it stays under, eviction is the 10 s round's). Under it with the
    /// last eviction short of its target (no time-shift left), marks every channel's store nearly full
    /// (`StorageHealth.lowSpace`), which `ChannelHealthReport.judge` counts as failing: content steering moves
    /// players to a peer while this origin still writes and serves every segment, before a full disk makes it refuse
    /// pushes and list GAPs. Cleared once the file system has `freeSpaceMargin` over the floor. A free space that
    /// cannot be read is logged and counted, and keeps the judgement for `unreadableFreeSpaceHold`, then clears it.
    private func checkFreeSpaceIfDue() {
        guard store != nil, let directory = configuration.dataDirectory else { return }
        guard let minimum = configuration.storage.minFreeBytes, minimum > 0 else {
            // The floor was taken away by a reload: nothing is nearly full any more.
            underFreeFloor.store(false, ordering: .relaxed)
            if nearlyFull.exchange(false, ordering: .relaxed) {
                for channel in allChannels { channel.storageHealth.lowSpace = nil }
            }
            return
        }
        let now = clock.nowMilliseconds()
        let last = lastFreeSpaceCheck.load(ordering: .relaxed)
        guard now - last >= Self.freeSpaceInterval,
            lastFreeSpaceCheck.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged
        else { return }
        guard var free = Self.freeBytes(directory: directory) else {
            let failures = freeSpaceReadFailures.add(1, ordering: .relaxed).newValue
            let since = freeSpaceUnreadableSince.load(ordering: .relaxed)
            if since == .min {
                freeSpaceUnreadableSince.store(now, ordering: .relaxed)
                logger.warning(
                    "cannot read the data directory's free space (statvfs): the nearly-full judgement is kept \(Self.unreadableFreeSpaceHold / 1000) s, then cleared",
                    metadata: ["errno": "\(errno)", "failures": "\(failures)"])
            } else if now - since >= Self.unreadableFreeSpaceHold, nearlyFull.exchange(false, ordering: .relaxed) {
                for channel in allChannels { channel.storageHealth.lowSpace = nil }
                logger.warning(
                    "free space still unreadable: the nearly-full judgement is cleared",
                    metadata: ["failures": "\(failures)"])
            }
            return
        }
        freeSpaceUnreadableSince.store(.min, ordering: .relaxed)
        let wasNearlyFull = nearlyFull.load(ordering: .relaxed)
        let under = free < minimum
        if under, !underFreeFloor.exchange(true, ordering: .relaxed) {
            evictTimeShift(directory: directory)
            free = Self.freeBytes(directory: directory) ?? free
        } else if !under {
            underFreeFloor.store(false, ordering: .relaxed)
        }
        let nowNearlyFull =
            wasNearlyFull
            ? free < minimum &+ Self.freeSpaceMargin(minimum: minimum)
            : free < minimum && freeFloorEvictionFellShort.load(ordering: .relaxed)
        let note =
            nowNearlyFull
            ? "\(free) bytes free, under storage.minFreeBytes (\(minimum))"
                + (free < minimum ? "" : " + \(Self.freeSpaceMargin(minimum: minimum)) margin")
                + ", no time-shift left to evict" : nil
        for channel in allChannels { channel.storageHealth.lowSpace = note }
        if nearlyFull.exchange(nowNearlyFull, ordering: .relaxed) != nowNearlyFull {
            if let note {
                logger.warning(
                    "durable store nearly full: steered channels judged failing", metadata: ["reason": "\(note)"])
            } else {
                logger.notice("durable store back over storage.minFreeBytes", metadata: ["free_bytes": "\(free)"])
            }
        }
    }

    /// Bytes free to this process on the file system of `directory`; nil when it cannot be read.
    private static func freeBytes(directory: String) -> Int64? {
        var stats = statvfs()
        guard statvfs(directory, &stats) == 0 else { return nil }
        let (free, overflow) = Int64(stats.f_bavail).multipliedReportingOverflow(by: Int64(stats.f_frsize))
        return overflow ? .max : free
    }

    /// How many bytes must go to meet `storage.maxBytes` and the free-space target (`storage.minFreeBytes`, plus
    /// the margin while judged nearly full); nil or <= 0 when within.
    private func storageExcess(directory: String) -> Int64? {
        var excess: Int64 = 0
        if let limit = configuration.storage.maxBytes {
            excess = max(excess, allChannels.reduce(0) { $0 + $1.storedBytes } - limit)
        }
        if let target = freeSpaceTarget, let free = Self.freeBytes(directory: directory) {
            excess = max(excess, target &- free)
        }
        return excess
    }

    /// With `sync: batched`, makes everything the store wrote durable once per interval.
    private func flushStoreIfDue() {
        guard let store, case .batched(let interval) = configuration.storage.sync else { return }
        let now = clock.nowMilliseconds()
        let last = lastFlush.load(ordering: .relaxed)
        guard now - last >= Int64(interval),
            lastFlush.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged
        else { return }
        do {
            _ = try store.flush()
        } catch {
            logger.error("durable store flush failed", metadata: ["reason": "\(error)"])
        }
    }

    /// Writes every channel's state journal now (graceful shutdown).
    public func flushJournals() {
        for channel in allChannels { channel.flushJournal() }
        if let store, case .batched = configuration.storage.sync {
            do {
                _ = try store.flush()
            } catch {
                logger.error("durable store flush failed", metadata: ["reason": "\(error)"])
            }
        }
    }

    /// Ticks every `interval` until the task is cancelled.
    public func run(interval: Duration = .milliseconds(50)) async {
        while !Task.isCancelled {
            tick()
            try? await Task.sleep(for: interval)
        }
    }
}

/// A rendition of a channel, as the key of streamed pushes in progress.
struct StreamingPushKey: Hashable {
    let channel: String
    let rendition: String
}

/// The containers pushes announced by file name, by channel and rendition, and how many in all (bounded).
private struct AnnouncedContainers {
    var byChannel: [String: [String: MediaContainer]] = [:]
    var count = 0
}
