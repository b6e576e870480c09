import Glibc
import Synchronization

/// A `Mutex` with a place in the origin's lock order (`LockRank`): in debug builds, taking it while the same thread
/// holds a ranked lock of the same or a higher rank stops the process, naming both locks, so a violation of the
/// order written at `Channel.state` shows up in the first test that takes that path instead of as a rare deadlock.
/// Release builds take the bare `Mutex`.
package struct RankedMutex<Value: ~Copyable>: ~Copyable, Sendable {
    private let mutex: Mutex<Value>
    /// Its place in the order.
    package let rank: LockRank

    package init(_ value: consuming sending Value, rank: LockRank) {
        mutex = Mutex(value)
        self.rank = rank
    }

    /// `Mutex.withLock`, with the order checked in debug builds.
    package borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        #if DEBUG
            LockRank.entering(rank)
            defer { LockRank.left(rank) }
        #endif
        return try mutex.withLock(body)
    }
}

/// The origin's lock order, lowest first: a thread may take a lock only while every ranked lock it holds is of a
/// lower rank (`RankedMutex`). The order is the one written at `Channel.state` (docs/architecture.md, "Locks"); the
/// ranks of every target's locks are listed here, in one place, so the order reads top to bottom. A lock held alone
/// takes the lowest rank: taking it under any ranked lock stops a debug build.
package struct LockRank: Sendable, Comparable, CustomStringConvertible {
    package let level: Int
    package let name: String

    package static func < (left: LockRank, right: LockRank) -> Bool { left.level < right.level }
    package static func == (left: LockRank, right: LockRank) -> Bool { left.level == right.level && left.name == right.name }

    package var description: String { "\(name) (rank \(level))" }

    /// `Origin.directory`: held alone, only to look up or insert; taking it under any ranked lock stops debug builds.
    package static let originDirectory = LockRank(level: 1, name: "Origin.directory")
    /// `MarkerStore.writer`: held across the marker journal's fsync, so never under `Channel.state`.
    package static let markerWriter = LockRank(level: 10, name: "MarkerStore.writer")
    /// `RecordingStore.writer`: the manifests; held across the manifest's write (fsync), never under `Channel.state`.
    package static let recordingWriter = LockRank(level: 12, name: "RecordingStore.writer")
    /// `RecordingStore.eviction`: what recordings pin, held while the store evicts (and while a recording is created).
    package static let recordingEviction = LockRank(level: 14, name: "RecordingStore.eviction")
    /// `RecordingStore.visible` and `.pending`: copies read by playback and eviction, taken one at a time.
    package static let recordingVisible = LockRank(level: 16, name: "RecordingStore.visible")
    /// `Channel.state`: the ingest loop's state.
    package static let channelState = LockRank(level: 20, name: "Channel.state")
    /// `MarkerStore.visible`: read while rendering, under `Channel.state`.
    package static let markerVisible = LockRank(level: 30, name: "MarkerStore.visible")
    /// `ChannelStore.files`: a channel's index files, written under `Channel.state` and under
    /// `RecordingStore.eviction`.
    package static let channelStoreFiles = LockRank(level: 35, name: "ChannelStore.files")
    /// `HLSOutput.current`: the published HLS snapshot reference, swapped under `Channel.state`.
    package static let channelPublished = LockRank(level: 40, name: "HLSOutput.current")
    /// `Channel.journalNote`: the last journal failure, set under `Channel.state`.
    package static let channelJournalNote = LockRank(level: 40, name: "Channel.journalNote")

    #if DEBUG
        /// The ranks the calling thread holds, innermost last (a pthread key: one array per thread).
        private nonisolated(unsafe) static let heldKey: pthread_key_t = {
            var key = pthread_key_t()
            pthread_key_create(&key) { pointer in
                pointer.map { Unmanaged<HeldRanks>.fromOpaque($0).release() }
            }
            return key
        }()

        private final class HeldRanks {
            var ranks: [LockRank] = []
        }

        private static var held: HeldRanks {
            if let pointer = pthread_getspecific(heldKey) {
                return Unmanaged<HeldRanks>.fromOpaque(pointer).takeUnretainedValue()
            }
            let held = HeldRanks()
            pthread_setspecific(heldKey, Unmanaged.passRetained(held).toOpaque())
            return held
        }

        package static func entering(_ rank: LockRank) {
            let held = held
            if let innermost = held.ranks.last, innermost >= rank {
                preconditionFailure(
                    "lock order: taking \(rank) while holding \(innermost) (held: \(held.ranks)); see Channel.state")
            }
            held.ranks.append(rank)
        }

        package static func left(_ rank: LockRank) {
            let held = held
            if let index = held.ranks.lastIndex(of: rank) { held.ranks.remove(at: index) }
        }
    #endif
}
