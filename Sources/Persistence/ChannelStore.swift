import Glibc
public import LiveTimeline
import MediaProbe
public import SharedBytes
import Synchronization

/// One channel in the store: its slot records, its renditions (in creation order) and their segment records.
///
/// Records are written once at their MSN's position (only a restart after a torn, never acknowledged write reuses
/// positions above what it restored); index files are found by listing their directory, so nothing is scanned from
/// MSN 0.
public final class ChannelStore: Sendable {
    /// MSNs per index file (an "epoch").
    static let msnsPerEpoch: UInt64 = 4096
    static let epochShift: UInt64 = 12
    /// Index files are reserved at this size when created, so records still land when the disk fills.
    static var segmentEpochBytes: Int64 { Int64(msnsPerEpoch) * Int64(StoreRecordCoding.segmentRecordSize) }
    static var slotEpochBytes: Int64 { Int64(msnsPerEpoch) * Int64(StoreRecordCoding.slotRecordSize) }
    /// Open index files kept per channel.
    static let maximumOpenIndexFiles = 24

    public let name: String
    let directory: String
    private let context: StoreContext
    private let diskBytes = ByteCounter()
    /// Lock order: `Channel.state` -> `files`. Held for every index read and write of the channel.
    private let files: RankedMutex<Files>

    /// Which index file: a rendition's (`rendition` set) or the channel's slots.
    private struct IndexKey: Hashable {
        var rendition: String?
        var epoch: UInt64
    }

    private struct Files: ~Copyable {
        var renditionOrder: [String]
        var renditions: [String: RenditionStore] = [:]
        var open: [IndexKey: StoreFile] = [:]
        var lastUse: [IndexKey: UInt64] = [:]
        var useClock: UInt64 = 0
        /// The highest slot MSN written (or restored), to mark slots that follow skipped MSNs.
        var lastSlotMSN: UInt64?
        var lastSlotKnown = false
        /// Everything below this MSN may have been deleted (`horizon.json`).
        var horizon: UInt64
        /// Chunks were cut back to their referenced bytes (done by the first `load`).
        var chunksRepaired = false
        /// Index files created ahead of need.
        var prepared: Set<IndexKey> = []
        /// Directories with index files created since their last sync (`.always` syncs them before returning).
        var unsyncedDirectories: Set<String> = []
        /// Index files the running `append` wrote: kept open until it synced them (closing one would leave its
        /// descriptor number to the next file opened, which the sync would then reach instead).
        var pinned: Set<IndexKey> = []
    }

    init(name: String, directory: String, context: StoreContext) throws(StoreError) {
        self.name = name
        self.directory = directory
        self.context = context
        let io = context.io
        try io.makeDirectories(directory + "/slots", below: parentDirectory(of: directory))
        try io.makeDirectories(directory + "/r", below: directory)
        for file in try io.list(directory) where file.hasSuffix(".tmp") {
            try io.remove(directory + "/" + file)
        }
        var order: [String] = []
        if let listed = try io.contents(of: directory + "/renditions.txt") {
            order = String(decoding: listed, as: UTF8.self).split(separator: "\n").map(String.init)
        }
        // A rendition directory whose name did not reach the list (a crash in between) still counts.
        for extra in try io.list(directory + "/r").sorted() where !order.contains(extra) { order.append(extra) }
        var horizon: UInt64 = 0
        if let text = try io.contents(of: directory + "/horizon.json") {
            let digits = String(decoding: text, as: UTF8.self).filter(\.isNumber)
            horizon = UInt64(digits) ?? 0
        }
        files = RankedMutex(Files(renditionOrder: order, horizon: horizon), rank: .channelStoreFiles)
        diskBytes.add(try Self.measure(directory, io: io))
    }

    // MARK: Renditions

    /// The rendition's store, created on first use; the creation order is kept durably (a restore keeps it).
    public func rendition(_ name: String) throws(StoreError) -> RenditionStore {
        let result: Result<RenditionStore, StoreError> = files.withLock { files in
            do throws(StoreError) {
                return .success(try renditionLocked(name, &files))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private func renditionLocked(_ name: String, _ files: inout Files) throws(StoreError) -> RenditionStore {
        if let existing = files.renditions[name] { return existing }
        if !files.renditionOrder.contains(name) {
            let order = files.renditionOrder + [name]
            diskBytes.add(
                try context.io.replaceDurablyCounting(
                    directory + "/renditions.txt", with: Array(order.joined(separator: "\n").utf8) + [0x0A]))
            files.renditionOrder = order
        }
        let store = try RenditionStore(
            name: name, directory: directory + "/r/" + name, context: context, bytesOnDisk: diskBytes)
        files.renditions[name] = store
        return store
    }

    // MARK: Writing records

    /// Writes the records of one ingest-loop pass (segment records and slot records at their MSN positions) and,
    /// with `.always`, makes them durable before returning. Returns a sequence number: in batched mode the records
    /// are durable once `SegmentStore.flush()` returned a value at or above it.
    @discardableResult
    public func append(_ records: [StoreRecord]) throws(StoreError) -> UInt64 {
        let durable = context.syncsEachWrite
        let result: Result<Void, StoreError> = files.withLock { files in
            defer {
                files.pinned.removeAll()
                closeIndexFilesOverLimit(&files)
            }
            do throws(StoreError) {
                var written: [IndexKey: StoreFile] = [:]
                if !files.lastSlotKnown {
                    files.lastSlotMSN = try newestSlotLocked(&files)?.slot.msn
                    files.lastSlotKnown = true
                }
                // The previous slot of this pass, or the newest one an earlier pass wrote without an error.
                var previousSlot = files.lastSlotMSN
                for record in records {
                    switch record {
                    case .segment(let rendition, let segment):
                        _ = try renditionLocked(rendition, &files)
                        let key = IndexKey(rendition: rendition, epoch: segment.msn >> Self.epochShift)
                        files.pinned.insert(key)
                        let file = try indexFile(key, create: true, &files)
                        try context.io.write(
                            file, bytes: StoreRecordCoding.encode(segment), at: Self.position(segment.msn, key))
                        written[key] = file
                        prepareNextIndexFile(after: key, msn: segment.msn, &files)
                    case .slot(let slot):
                        // A slot that does not follow the previous one (MSNs skipped, or a failed write left a
                        // hole) is marked; so is the channel's first: nothing below it is missing.
                        let afterSkip = previousSlot.map { slot.msn != $0 + 1 } ?? true
                        previousSlot = slot.msn
                        let key = IndexKey(rendition: nil, epoch: slot.msn >> Self.epochShift)
                        files.pinned.insert(key)
                        let file = try indexFile(key, create: true, &files)
                        try context.io.write(
                            file, bytes: StoreRecordCoding.encode(slot, afterSkip: afterSkip),
                            at: Self.position(slot.msn, key))
                        written[key] = file
                        prepareNextIndexFile(after: key, msn: slot.msn, &files)
                    }
                }
                if durable {
                    for file in written.values { try context.io.syncData(file) }
                    // Names of new index files (kept until a sync succeeds, also across failed passes).
                    for directory in files.unsyncedDirectories.sorted() {
                        try context.io.syncDirectory(directory)
                        files.unsyncedDirectories.remove(directory)
                    }
                } else {
                    files.unsyncedDirectories.removeAll()
                }
                files.lastSlotMSN = previousSlot
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
        return context.nextSequence()
    }

    // MARK: Restore

    /// What a restart needs: the newest `depth` closed slots (consecutive, ending at the newest slot that follows
    /// a complete history; see `restoredSlots`) and, per rendition in creation order, its records from the first of
    /// those slots up to its newest record (entries above the newest slot were held), with the verified bytes of
    /// every `.segment` record whose bytes are intact. A missing or unreadable record under a restored slot comes
    /// back as an `.unpersisted` record made from the slot; a record whose bytes are short or fail their CRC comes
    /// back without bytes. nil when the channel has no records at all.
    ///
    /// Repairs on the way: a slot run above a torn write (never listed) is zeroed, and each rendition's newest chunk
    /// from before the open is cut after the highest byte a valid record references.
    public func load(depth: Int) throws(StoreError) -> StoredChannel? {
        let result: Result<StoredChannel?, StoreError> = files.withLock { files in
            do throws(StoreError) {
                return .success(try loadLocked(depth: depth, &files))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private func loadLocked(depth: Int, _ files: inout Files) throws(StoreError) -> StoredChannel? {
        let slots = try restoredSlots(depth: max(depth, 1), &files)
        var renditions: [StoredRendition] = []
        var anything = !slots.isEmpty
        for name in files.renditionOrder {
            let store = try renditionLocked(name, &files)
            guard let newest = try newestRecordLocked(rendition: name, &files) else {
                renditions.append(
                    StoredRendition(name: name, records: [], bytes: [:], initSections: try store.initSections()))
                continue
            }
            anything = true
            let first = slots.first?.msn ?? max(files.horizon, newest.msn - min(newest.msn, UInt64(depth)))
            let last = max(newest.msn, slots.last?.msn ?? 0)
            let slotByMSN = Dictionary(uniqueKeysWithValues: slots.map { ($0.msn, $0) })
            var records: [SegmentRecord] = []
            var seenValid = false
            var container = newest.container
            if first <= last {
                let decoded = try readSegmentRecords(rendition: name, from: first, through: last, &files)
                for (offset, entry) in decoded.enumerated() {
                    let msn = first + UInt64(offset)
                    switch entry {
                    case .valid(let record) where record.msn == msn:
                        seenValid = true
                        container = record.container
                        records.append(record)
                    case .absent where !seenValid:
                        continue
                    default:
                        // Unreadable (or absent after the rendition's first record): listed from its slot.
                        guard let slot = slotByMSN[msn] else { continue }
                        records.append(
                            SegmentRecord(
                                kind: .unpersisted, msn: msn,
                                programDateTimeMilliseconds: slot.programDateTimeMilliseconds,
                                durationMilliseconds: slot.durationMilliseconds, discontinuity: false,
                                startsWithKeyframe: false, container: container, location: nil,
                                initSectionVersion: nil, mediaEndTicks: nil, mediaTimescale: 90_000))
                    }
                }
            }
            let bytes = verifiedBytes(records, store: store)
            if !files.chunksRepaired, let newestChunk = store.newestChunkAtOpen {
                try repairChunk(newestChunk, of: store, records: records)
            }
            renditions.append(
                StoredRendition(name: name, records: records, bytes: bytes, initSections: try store.initSections()))
        }
        files.chunksRepaired = true
        return anything ? StoredChannel(slots: slots, renditions: renditions) : nil
    }

    /// The slots to restore. The walk goes down from the highest valid slot record. A run of slots that sits on an
    /// absent record (all zero) without following a skip is the unacknowledged part of a write that a crash tore:
    /// never listed, so it is dropped (zeroed) and the walk continues below it. A corrupt record (bit rot) ends the
    /// run instead: the slots above it were listed, and going below would reuse their MSNs. The walk looks
    /// `max(64, depth)` slots further down than it returns, so a tear just under the newest slots is seen.
    private func restoredSlots(depth: Int, _ files: inout Files) throws(StoreError) -> [SlotRecord] {
        let epochs = try epochNumbers(directory + "/slots", suffix: ".slots").filter {
            ($0 + 1) << Self.epochShift > files.horizon
        }
        guard let lowestEpoch = epochs.min() else {
            files.lastSlotMSN = nil
            files.lastSlotKnown = true
            return []
        }
        let bottom = max(lowestEpoch << Self.epochShift, files.horizon)
        var cache: (epoch: UInt64, bytes: [UInt8])?
        func slot(at msn: UInt64) throws(StoreError) -> DecodedRecord<StoredSlot> {
            let epoch = msn >> Self.epochShift
            if cache?.epoch != epoch {
                cache = (epoch, try readEpoch(IndexKey(rendition: nil, epoch: epoch), &files))
            }
            let position = Int(msn & (Self.msnsPerEpoch - 1)) * StoreRecordCoding.slotRecordSize
            guard let bytes = cache?.bytes, position + StoreRecordCoding.slotRecordSize <= bytes.count else {
                return .absent
            }
            return bytes.withUnsafeBytes { raw in
                StoreRecordCoding.decodeSlotWithFlags(UnsafeRawBufferPointer(rebasing: raw[position...]))
            }
        }
        guard let top = try newestSlotLocked(&files) else {
            files.lastSlotMSN = nil
            files.lastSlotKnown = true
            return []
        }
        // The lowest valid slot, found only when a torn run needs it.
        var lowest: UInt64?
        func lowestSlot() throws(StoreError) -> UInt64 {
            var msn = bottom
            while msn < top.slot.msn {
                if case .valid(let stored) = try slot(at: msn), stored.slot.msn == msn { return msn }
                // Skip the run of all-zero records after `msn` in its file at once.
                let epoch = msn >> Self.epochShift
                let start = Int(msn & (Self.msnsPerEpoch - 1)) + 1
                let next = cache?.bytes.withUnsafeBytes { raw in
                    Self.firstNonZeroRecord(raw, from: start, size: StoreRecordCoding.slotRecordSize)
                }
                msn = (epoch << Self.epochShift) + UInt64(next ?? Int(Self.msnsPerEpoch))
            }
            return top.slot.msn
        }
        var run: [StoredSlot] = [top]
        var dropped: [UInt64] = []
        var msn = top.slot.msn
        let lookBelow = max(64, depth)
        walk: while run.count < depth + lookBelow && msn > bottom {
            msn -= 1
            switch try slot(at: msn) {
            case .valid(let stored) where stored.slot.msn == msn:
                run.append(stored)
            case .corrupt, .valid:
                break walk
            case .absent where run.last!.afterSkip:
                // MSNs skipped on purpose, or a write that failed (and was not acknowledged): the run is complete.
                break walk
            case .absent:
                // Torn: look for the next valid slot below (not below the lowest one); if there is none, keep this run.
                if lowest == nil { lowest = try lowestSlot() }
                var below = msn
                var next: StoredSlot?
                while below > max(bottom, lowest ?? msn) {
                    below -= 1
                    if case .valid(let stored) = try slot(at: below), stored.slot.msn == below {
                        next = stored
                        break
                    }
                }
                guard let next else { break walk }
                dropped += run.map(\.slot.msn)
                run = [next]
                msn = below
            }
        }
        if !dropped.isEmpty {
            let zero = [UInt8](repeating: 0, count: StoreRecordCoding.slotRecordSize)
            var written: [IndexKey: StoreFile] = [:]
            for msn in dropped {
                let key = IndexKey(rendition: nil, epoch: msn >> Self.epochShift)
                let file = try indexFile(key, create: false, &files)
                try context.io.write(file, bytes: zero, at: Self.position(msn, key))
                written[key] = file
            }
            for file in written.values { try context.io.syncData(file) }
        }
        files.lastSlotMSN = run.first?.slot.msn
        files.lastSlotKnown = true
        return run.prefix(depth).reversed().map(\.slot)
    }

    /// Reads the bytes of every `.segment` record and keeps those that pass their length and CRC checks.
    private func verifiedBytes(_ records: [SegmentRecord], store: RenditionStore) -> [UInt64: SharedBytes] {
        var bytes: [UInt64: SharedBytes] = [:]
        var open: (chunk: UInt32, file: StoreFile?)?
        defer { if let file = open?.file { context.io.close(file) } }
        for record in records where record.kind == .synthesized {
            if let regenerated = Self.regenerated(record) { bytes[record.msn] = regenerated }
        }
        for record in records where record.kind == .segment {
            guard let location = record.location else { continue }
            if open?.chunk != location.chunk {
                if let file = open?.file { context.io.close(file) }
                let path = store.chunkPath(location.chunk)
                open = (location.chunk, path.flatMap { try? context.io.open($0, create: false) })
            }
            guard let file = open?.file else { continue }
            bytes[record.msn] = try? RenditionStore.read(location, from: file, io: context.io)
        }
        return bytes
    }

    /// The bytes of a `.synthesized` record (an empty cue segment), regenerated from the MPEGTS it keeps in
    /// `location.offset`; nil when their length or CRC differ from the record's (then it is restored as a GAP).
    static func regenerated(_ record: SegmentRecord) -> SharedBytes? {
        guard record.kind == .synthesized, let location = record.location else { return nil }
        let bytes = WebVTTSegment.empty(mpegts: Int64(bitPattern: location.offset))
        guard bytes.count == Int(location.length), storeCRC32(bytes) == location.crc else { return nil }
        return bytes
    }

    /// Cuts a chunk after the highest byte the records reference (bytes a crash left behind unreferenced).
    private func repairChunk(_ chunk: UInt32, of store: RenditionStore, records: [SegmentRecord]) throws(StoreError) {
        let ends = records.compactMap { record -> UInt64? in
            guard record.kind == .segment, let location = record.location, location.chunk == chunk else { return nil }
            return location.offset + UInt64(location.length)
        }
        guard let end = ends.max(), let path = store.chunkPath(chunk) else { return }
        let file = try context.io.open(path, create: false)
        defer { context.io.close(file) }
        let size = try context.io.size(file)
        if size > Int64(end) {
            try context.io.truncate(file, to: Int64(end))
            try context.io.syncData(file)
            diskBytes.add(Int64(end) - size)
        }
    }

    // MARK: Lookups

    /// One rendition's record and verified bytes at an MSN; nil if absent, corrupt or evicted. The bytes are nil
    /// when the record has none or they are missing or fail their CRC.
    public func segment(rendition: String, msn: UInt64) throws(StoreError) -> (SegmentRecord, SharedBytes?)? {
        let result: Result<(SegmentRecord, RenditionStore)?, StoreError> = files.withLock { files in
            do throws(StoreError) {
                guard msn >= files.horizon, files.renditionOrder.contains(rendition) else { return .success(nil) }
                let store = try renditionLocked(rendition, &files)
                guard
                    let record = try readSegmentRecords(rendition: rendition, from: msn, through: msn, &files)
                        .first?.record, record.msn == msn
                else { return .success(nil) }
                return .success((record, store))
            } catch {
                return .failure(error)
            }
        }
        guard let (record, store) = try result.get() else { return nil }
        if record.kind == .synthesized { return (record, Self.regenerated(record)) }
        guard record.kind == .segment, let location = record.location else { return (record, nil) }
        return (record, try? store.read(location))
    }

    /// Valid slot records with MSNs in [from, through], ascending (DVR playlists).
    public func slots(from: UInt64, through: UInt64) throws(StoreError) -> [SlotRecord] {
        guard from <= through else { return [] }
        let result: Result<[SlotRecord], StoreError> = files.withLock { files in
            do throws(StoreError) {
                let start = max(from, files.horizon)
                guard start <= through else { return .success([]) }
                var slots: [SlotRecord] = []
                var epoch = start >> Self.epochShift
                while epoch <= through >> Self.epochShift {
                    let bytes = try readEpoch(IndexKey(rendition: nil, epoch: epoch), &files)
                    let low = max(start, epoch << Self.epochShift)
                    let high = min(through, (epoch << Self.epochShift) + Self.msnsPerEpoch - 1)
                    var msn = low
                    while msn <= high {
                        let position = Int(msn & (Self.msnsPerEpoch - 1)) * StoreRecordCoding.slotRecordSize
                        if position + StoreRecordCoding.slotRecordSize > bytes.count { break }
                        let decoded = bytes.withUnsafeBytes {
                            StoreRecordCoding.decodeSlot(UnsafeRawBufferPointer(rebasing: $0[position...]))
                        }
                        if let slot = decoded.record, slot.msn == msn { slots.append(slot) }
                        msn += 1
                    }
                    epoch += 1
                }
                return .success(slots)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// A rendition's valid segment records with MSNs in [from, through], by MSN, without their bytes (DVR
    /// playlists); absent and corrupt records are left out.
    public func segments(rendition: String, from: UInt64, through: UInt64) throws(StoreError) -> [UInt64: SegmentRecord]
    {
        guard from <= through else { return [:] }
        let result: Result<[UInt64: SegmentRecord], StoreError> = files.withLock { files in
            do throws(StoreError) {
                let start = max(from, files.horizon)
                guard start <= through, files.renditionOrder.contains(rendition) else { return .success([:]) }
                var records: [UInt64: SegmentRecord] = [:]
                for decoded in try readSegmentRecords(rendition: rendition, from: start, through: through, &files) {
                    if let record = decoded.record, record.msn >= start, record.msn <= through {
                        records[record.msn] = record
                    }
                }
                return .success(records)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The oldest and the newest valid slot records at or above the horizon (the DVR window); nil when there are
    /// none.
    public func slotRange() throws(StoreError) -> (oldest: SlotRecord, newest: SlotRecord)? {
        let result: Result<(oldest: SlotRecord, newest: SlotRecord)?, StoreError> = files.withLock { files in
            do throws(StoreError) {
                guard let newest = try newestSlotLocked(&files)?.slot else { return .success(nil) }
                for epoch in try epochNumbers(directory + "/slots", suffix: ".slots").sorted()
                where (epoch + 1) << Self.epochShift > files.horizon {
                    let bytes = try readEpoch(IndexKey(rendition: nil, epoch: epoch), &files)
                    var index = 0
                    while (index + 1) * StoreRecordCoding.slotRecordSize <= bytes.count {
                        let msn = (epoch << Self.epochShift) + UInt64(index)
                        let position = index * StoreRecordCoding.slotRecordSize
                        let decoded = bytes.withUnsafeBytes {
                            StoreRecordCoding.decodeSlot(UnsafeRawBufferPointer(rebasing: $0[position...]))
                        }
                        if msn >= files.horizon, let slot = decoded.record, slot.msn == msn {
                            return .success((slot, newest))
                        }
                        index += 1
                    }
                }
                return .success((newest, newest))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The slot whose [PDT, PDT + duration) contains `programDateTimeMilliseconds` (binary search over the slot
    /// records); nil if no stored slot contains it.
    public func slot(containing programDateTimeMilliseconds: Int64) throws(StoreError) -> SlotRecord? {
        let result: Result<SlotRecord?, StoreError> = files.withLock { files in
            do throws(StoreError) {
                let epochs = try epochNumbers(directory + "/slots", suffix: ".slots").filter {
                    ($0 + 1) << Self.epochShift > files.horizon
                }
                if !files.lastSlotKnown {
                    files.lastSlotMSN = try newestSlotLocked(&files)?.slot.msn
                    files.lastSlotKnown = true
                }
                guard let lowestEpoch = epochs.min(), let topMSN = files.lastSlotMSN else { return .success(nil) }
                var cache: [UInt64: [UInt8]] = [:]
                // The first valid slot at or above `msn` (and at most `limit`).
                func firstSlot(from msn: UInt64, through limit: UInt64) throws(StoreError) -> SlotRecord? {
                    var current = msn
                    while current <= limit {
                        let epoch = current >> Self.epochShift
                        if cache[epoch] == nil {
                            cache[epoch] = try readEpoch(IndexKey(rendition: nil, epoch: epoch), &files)
                        }
                        let bytes = cache[epoch]!
                        let position = Int(current & (Self.msnsPerEpoch - 1)) * StoreRecordCoding.slotRecordSize
                        if position + StoreRecordCoding.slotRecordSize <= bytes.count {
                            let decoded = bytes.withUnsafeBytes {
                                StoreRecordCoding.decodeSlot(UnsafeRawBufferPointer(rebasing: $0[position...]))
                            }
                            if let slot = decoded.record, slot.msn == current { return slot }
                            current += 1
                        } else {
                            current = (epoch + 1) << Self.epochShift
                        }
                    }
                    return nil
                }
                guard
                    var low = try firstSlot(from: max(lowestEpoch << Self.epochShift, files.horizon), through: topMSN),
                    programDateTimeMilliseconds >= low.programDateTimeMilliseconds
                else { return .success(nil) }
                // Invariant: `low` starts at or before the PDT; find the last such slot.
                var high = topMSN
                while low.msn < high {
                    let middle = low.msn + (high - low.msn + 1) / 2
                    if let probe = try firstSlot(from: middle, through: high),
                        probe.programDateTimeMilliseconds <= programDateTimeMilliseconds
                    {
                        low = probe
                    } else {
                        high = middle - 1
                    }
                }
                let contains = programDateTimeMilliseconds < low.programDateTimeMilliseconds + low.durationMilliseconds
                return .success(contains ? low : nil)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    // MARK: Eviction and size

    /// Frees everything below `msn`: whole chunk files whose segments are all below it and index files wholly below
    /// it. `horizon.json` is written (durably) first, so a crash in between never shows records without bytes.
    public func evict(below msn: UInt64) throws(StoreError) {
        let result: Result<Void, StoreError> = files.withLock { files in
            do throws(StoreError) {
                guard msn > files.horizon else { return .success(()) }
                diskBytes.add(
                    try context.io.replaceDurablyCounting(
                        directory + "/horizon.json", with: Array("{\"evictedBelowMSN\": \(msn)}\n".utf8)))
                files.horizon = msn
                let doomedEpochs = { (epoch: UInt64) in (epoch + 1) << Self.epochShift <= msn }
                // Chunks: keep every chunk from the lowest one a record at or above the horizon uses.
                for name in files.renditionOrder {
                    let store = try renditionLocked(name, &files)
                    var lowestKept: UInt32? = store.currentChunk()
                    if let newest = try newestRecordLocked(rendition: name, &files), newest.msn >= msn {
                        let through = min(newest.msn, msn + 2 * Self.msnsPerEpoch)
                        for record in try readSegmentRecords(rendition: name, from: msn, through: through, &files) {
                            guard let valid = record.record, valid.kind == .segment, let chunk = valid.location?.chunk
                            else { continue }
                            lowestKept = min(lowestKept ?? chunk, chunk)
                        }
                    }
                    if lowestKept == nil { lowestKept = store.chunks().keys.max() }
                    if let lowestKept { diskBytes.add(-(try store.removeChunks(below: lowestKept))) }
                    let indexDirectory = store.directory + "/index"
                    for epoch in try epochNumbers(indexDirectory, suffix: ".idx") where doomedEpochs(epoch) {
                        try removeIndexFile(IndexKey(rendition: name, epoch: epoch), &files)
                    }
                    try context.io.syncDirectory(store.directory + "/data")
                    try context.io.syncDirectory(indexDirectory)
                }
                for epoch in try epochNumbers(directory + "/slots", suffix: ".slots") where doomedEpochs(epoch) {
                    try removeIndexFile(IndexKey(rendition: nil, epoch: epoch), &files)
                }
                try context.io.syncDirectory(directory + "/slots")
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    /// Bytes on disk for this channel (status, quotas): file sizes (index files at their reserved size), measured
    /// at open, then tracked.
    public var bytesOnDisk: Int64 { diskBytes.current }

    /// Everything below this MSN may have been evicted.
    public var horizon: UInt64 { files.withLock { $0.horizon } }

    // MARK: Index files

    private func path(_ key: IndexKey) -> String {
        if let rendition = key.rendition { return directory + "/r/" + rendition + "/index/\(key.epoch).idx" }
        return directory + "/slots/\(key.epoch).slots"
    }

    private static func position(_ msn: UInt64, _ key: IndexKey) -> Int64 {
        let size = key.rendition == nil ? StoreRecordCoding.slotRecordSize : StoreRecordCoding.segmentRecordSize
        return Int64(msn & (msnsPerEpoch - 1)) * Int64(size)
    }

    /// The open index file for `key`; nil-free: creates it (reserving its full size) if `create`, else throws
    /// ENOENT for a missing file.
    private func indexFile(
        _ key: IndexKey, create: Bool, _ files: inout Files
    )
        throws(StoreError) -> StoreFile
    {
        files.useClock += 1
        files.lastUse[key] = files.useClock
        if let file = files.open[key] { return file }
        let path = path(key)
        let file: StoreFile
        do {
            file = try context.io.open(path, create: false)
        } catch  where error.errno == ENOENT && create {
            file = try context.io.open(path, create: true)
            let reserved = key.rendition == nil ? Self.slotEpochBytes : Self.segmentEpochBytes
            try? context.io.preallocate(file, length: reserved)
            diskBytes.add(reserved)
            files.unsyncedDirectories.insert(parentDirectory(of: path))
        }
        files.open[key] = file
        closeIndexFilesOverLimit(&files, keeping: key)
        return file
    }

    /// Closes the least recently used index files while more than `maximumOpenIndexFiles` are open, never `keeping`
    /// nor one the running `append` wrote and has not synced yet (`pinned`): closing is safe once with `.always`
    /// every write was synced; in batched mode syncfs covers closed files.
    private func closeIndexFilesOverLimit(_ files: inout Files, keeping: IndexKey? = nil) {
        while files.open.count > Self.maximumOpenIndexFiles,
            let oldest = files.lastUse.filter({
                files.open[$0.key] != nil && $0.key != keeping && !files.pinned.contains($0.key)
            }).min(by: { $0.value < $1.value })?.key
        {
            if let closing = files.open.removeValue(forKey: oldest) { context.io.close(closing) }
            files.lastUse[oldest] = nil
        }
    }

    /// Once an index file is half full, creates (and reserves) the next one, so that its records still land when
    /// the disk fills up later. Best effort: a failure here fails nothing.
    private func prepareNextIndexFile(
        after key: IndexKey, msn: UInt64, _ files: inout Files
    ) {
        guard msn & (Self.msnsPerEpoch - 1) >= Self.msnsPerEpoch / 2 else { return }
        let next = IndexKey(rendition: key.rendition, epoch: key.epoch + 1)
        guard files.prepared.insert(next).inserted else { return }
        _ = try? indexFile(next, create: true, &files)
    }

    private func removeIndexFile(_ key: IndexKey, _ files: inout Files) throws(StoreError) {
        if let file = files.open.removeValue(forKey: key) {
            context.io.close(file)
            files.lastUse[key] = nil
        }
        let path = path(key)
        if let file = try? context.io.open(path, create: false) {
            diskBytes.add(-Self.countedSize(path, (try? context.io.size(file)) ?? 0))
            context.io.close(file)
        }
        try context.io.remove(path)
    }

    /// The bytes of an index file (up to its size), empty if it does not exist.
    private func readEpoch(_ key: IndexKey, _ files: inout Files) throws(StoreError) -> [UInt8] {
        let file: StoreFile
        do {
            file = try indexFile(key, create: false, &files)
        } catch  where error.errno == ENOENT {
            return []
        }
        let size = try context.io.size(file)
        let limit = key.rendition == nil ? Self.slotEpochBytes : Self.segmentEpochBytes
        return try context.io.read(file, count: Int(min(size, limit)), at: 0)
    }

    /// Decoded segment records for MSNs [from, through] (absent past a file's end).
    private func readSegmentRecords(
        rendition: String, from: UInt64, through: UInt64, _ files: inout Files
    )
        throws(StoreError) -> [DecodedRecord<SegmentRecord>]
    {
        var records: [DecodedRecord<SegmentRecord>] = []
        records.reserveCapacity(Int(through - from + 1))
        var epoch = from >> Self.epochShift
        while epoch <= through >> Self.epochShift {
            let key = IndexKey(rendition: rendition, epoch: epoch)
            let low = max(from, epoch << Self.epochShift)
            let high = min(through, (epoch << Self.epochShift) + Self.msnsPerEpoch - 1)
            var bytes: [UInt8] = []
            do {
                let file = try indexFile(key, create: false, &files)
                bytes = try context.io.read(
                    file, count: Int(high - low + 1) * StoreRecordCoding.segmentRecordSize,
                    at: Self.position(low, key))
            } catch  where error.errno == ENOENT {}
            bytes.withUnsafeBytes { raw in
                for index in 0..<Int(high - low + 1) {
                    let start = index * StoreRecordCoding.segmentRecordSize
                    if start + StoreRecordCoding.segmentRecordSize > raw.count {
                        records.append(.absent)
                    } else {
                        records.append(StoreRecordCoding.decodeSegment(UnsafeRawBufferPointer(rebasing: raw[start...])))
                    }
                }
            }
            epoch += 1
        }
        return records
    }

    /// The highest valid slot record at or above the horizon.
    private func newestSlotLocked(_ files: inout Files) throws(StoreError) -> StoredSlot? {
        for epoch in try epochNumbers(directory + "/slots", suffix: ".slots").sorted(by: >) {
            guard (epoch + 1) << Self.epochShift > files.horizon else { break }
            let bytes = try readEpoch(IndexKey(rendition: nil, epoch: epoch), &files)
            var index = bytes.count / StoreRecordCoding.slotRecordSize
            while index > 0 {
                index -= 1
                let msn = (epoch << Self.epochShift) + UInt64(index)
                guard msn >= files.horizon else { break }
                let decoded = bytes.withUnsafeBytes {
                    StoreRecordCoding.decodeSlotWithFlags(
                        UnsafeRawBufferPointer(rebasing: $0[(index * StoreRecordCoding.slotRecordSize)...]))
                }
                if let stored = decoded.record, stored.slot.msn == msn { return stored }
            }
        }
        return nil
    }

    /// The highest valid segment record of a rendition at or above the horizon.
    private func newestRecordLocked(rendition: String, _ files: inout Files) throws(StoreError) -> SegmentRecord? {
        let indexDirectory = directory + "/r/" + rendition + "/index"
        for epoch in try epochNumbers(indexDirectory, suffix: ".idx").sorted(by: >) {
            guard (epoch + 1) << Self.epochShift > files.horizon else { break }
            let bytes = try readEpoch(IndexKey(rendition: rendition, epoch: epoch), &files)
            var index = bytes.count / StoreRecordCoding.segmentRecordSize
            while index > 0 {
                index -= 1
                let msn = (epoch << Self.epochShift) + UInt64(index)
                guard msn >= files.horizon else { break }
                let decoded = bytes.withUnsafeBytes {
                    StoreRecordCoding.decodeSegment(
                        UnsafeRawBufferPointer(rebasing: $0[(index * StoreRecordCoding.segmentRecordSize)...]))
                }
                if let record = decoded.record, record.msn == msn { return record }
            }
        }
        return nil
    }

    /// The index of the first record at or after `index` that is not all zero (the record count if none).
    static func firstNonZeroRecord(_ bytes: UnsafeRawBufferPointer, from index: Int, size: Int) -> Int {
        var current = index
        while (current + 1) * size <= bytes.count {
            var combined: UInt64 = 0
            for offset in stride(from: current * size, to: (current + 1) * size, by: 8) {
                combined |= bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            }
            if combined != 0 { return current }
            current += 1
        }
        return Int(msnsPerEpoch)
    }

    /// The epoch numbers of the index files in a directory.
    private func epochNumbers(_ directory: String, suffix: String) throws(StoreError) -> [UInt64] {
        try context.io.list(directory).compactMap { name in
            name.hasSuffix(suffix) ? UInt64(name.dropLast(suffix.count)) : nil
        }
    }

    /// The bytes a file counts for: its size, and for an index file at least the size reserved for it.
    private static func countedSize(_ path: String, _ size: Int64) -> Int64 {
        if path.hasSuffix(".idx") { return max(size, segmentEpochBytes) }
        if path.hasSuffix(".slots") { return max(size, slotEpochBytes) }
        return size
    }

    /// The total size of the files under `directory` (index files at their reserved size).
    private static func measure(_ directory: String, io: any StoreFileIO) throws(StoreError) -> Int64 {
        var total: Int64 = 0
        for name in try io.list(directory) {
            let path = directory + "/" + name
            if let file = try? io.open(path, create: false) {
                total += countedSize(path, (try? io.size(file)) ?? 0)
                io.close(file)
            } else {
                total += try measure(path, io: io)
            }
        }
        return total
    }
}
