import Synchronization

/// When written bytes are made durable.
public enum StorageSyncPolicy: Sendable, Hashable {
    /// `fdatasync` (and a directory fsync for new files) before `stage()` / `append()` return.
    case always
    /// `stage()` / `append()` only write; `SegmentStore.flush()`, called by a loop every interval, makes everything
    /// written so far durable and returns the sequence number it covered.
    case batched(intervalMilliseconds: Int)
    /// Nothing is synced: tests and benchmarks only.
    case never
}

/// What the channel and rendition stores share with their `SegmentStore`.
final class StoreContext: Sendable {
    let io: any StoreFileIO
    let sync: StorageSyncPolicy
    /// The last sequence number handed out by `ChannelStore.append` (assigned after its writes completed).
    let writtenSequence = Atomic<UInt64>(0)
    /// A chunk holds at most this many segments.
    let maximumSegmentsPerChunk: Int

    init(io: any StoreFileIO, sync: StorageSyncPolicy, maximumSegmentsPerChunk: Int) {
        self.io = io
        self.sync = sync
        self.maximumSegmentsPerChunk = maximumSegmentsPerChunk
    }

    var syncsEachWrite: Bool { sync == .always }

    /// A sequence number for writes that have completed.
    func nextSequence() -> UInt64 {
        writtenSequence.add(1, ordering: .sequentiallyConsistent).newValue
    }
}

/// The durable segment store under one directory (`{dataDirectory}/store`): one directory per channel, holding its
/// slot records, its renditions' segment records, chunk files and init sections. One per origin.
///
/// Layout (inspectable with `ls` and `xxd`; a chunk plays as is):
/// ```
/// {ch}/renditions.txt          rendition names in creation order (replaced durably)
/// {ch}/horizon.json            {"evictedBelowMSN": n}, written before anything is deleted
/// {ch}/slots/{e}.slots         32-byte slot records, e = msn >> 12, record at (msn & 4095) * 32
/// {ch}/r/{r}/index/{e}.idx     64-byte segment records at (msn & 4095) * 64
/// {ch}/r/{r}/data/{c}.ts       chunk c (.ts/.m4s/.aac/.vtt): segment bytes back to back
/// {ch}/r/{r}/init/{v}.mp4      fMP4 initialization section v
/// ```
public final class SegmentStore: Sendable {
    /// The store's directory.
    public let directory: String
    public let sync: StorageSyncPolicy
    let context: StoreContext
    private let channels = Mutex<[String: ChannelStore]>([:])

    /// Opens (and creates if needed) the store in `directory`. A chunk file holds at most `maximumSegmentsPerChunk`
    /// segments (and 256 MiB).
    public init(
        directory: String, sync: StorageSyncPolicy, io: any StoreFileIO = PosixFileIO(),
        maximumSegmentsPerChunk: Int = RenditionStore.maximumSegmentsPerChunk
    ) throws(StoreError) {
        var path = directory
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        self.directory = path
        self.sync = sync
        self.context = StoreContext(io: io, sync: sync, maximumSegmentsPerChunk: max(1, maximumSegmentsPerChunk))
        try io.makeDirectoriesDurably(path)
    }

    /// Channels that have a directory in the store (for restoring auto-created channels), sorted by name.
    public func channelNames() -> [String] {
        ((try? context.io.list(directory)) ?? []).filter { !$0.contains(".") }.sorted()
    }

    /// The channel's store, created on first use (the same object on every call).
    public func channel(_ name: String) throws(StoreError) -> ChannelStore {
        let result: Result<ChannelStore, StoreError> = channels.withLock { channels in
            if let existing = channels[name] { return .success(existing) }
            do throws(StoreError) {
                let created = try ChannelStore(name: name, directory: directory + "/" + name, context: context)
                channels[name] = created
                return .success(created)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Makes everything written so far durable (batched mode: call it every interval) and returns the highest
    /// sequence number it covers: an `append` that returned a sequence at or below it is durable.
    public func flush() throws(StoreError) -> UInt64 {
        let covered = context.writtenSequence.load(ordering: .sequentiallyConsistent)
        if case .batched = sync {
            try context.io.syncFilesystem(containing: directory)
        }
        return covered
    }
}
