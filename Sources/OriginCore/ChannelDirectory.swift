import Synchronization

/// An immutable map of the channels by name, read by every HTTP request without taking a lock.
final class ChannelDirectory: Sendable {
    let channels: [String: Channel]

    init(_ channels: [String: Channel]) {
        self.channels = channels
    }

    /// The latest directory behind an atomic pointer: reads are one load, a change publishes a new directory.
    ///
    /// A reader may still hold a pointer to a directory that has been replaced, so replaced directories are kept
    /// until this object goes away (no reclamation scheme is needed for that). Their memory grows with the square of
    /// the number of channels created at run time, ~20 bytes x n^2: 200 KB for 100 auto-created channels, 20 MB for
    /// 1,000, small next to the segments those channels hold.
    final class Published: Sendable {
        /// The address of the current directory.
        private let address: Atomic<UInt>
        /// Every directory ever published; the last one is current. Only changed under the caller's lock.
        private let all: Mutex<[ChannelDirectory]>

        init(_ channels: [String: Channel]) {
            let first = ChannelDirectory(channels)
            all = Mutex([first])
            address = Atomic(UInt(bitPattern: Unmanaged.passUnretained(first).toOpaque()))
        }

        /// The latest directory.
        var current: ChannelDirectory {
            // Never null: set in init, only ever replaced by the address of another directory kept in `all`.
            let pointer = UnsafeRawPointer(bitPattern: address.load(ordering: .acquiring))!
            return Unmanaged<ChannelDirectory>.fromOpaque(pointer).takeUnretainedValue()
        }

        /// Makes `channels` the current directory. Callers serialize their calls (the origin's channel lock).
        func publish(_ channels: [String: Channel]) {
            let next = ChannelDirectory(channels)
            all.withLock { $0.append(next) }
            address.store(UInt(bitPattern: Unmanaged.passUnretained(next).toOpaque()), ordering: .releasing)
        }
    }
}
