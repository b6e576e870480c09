import SharedBytes

/// Where the bytes of an accepted segment are kept. Segments of at least `sharedMemoryThreshold` bytes move into a
/// shared-memory file (one copy, at ingest), which the HTTP layer sends with `sendfile`: for large segments that
/// saves copying every byte through user space on every GET. Smaller segments, and large ones once the budget of
/// such files is spent (`SharedMemoryFile.limit`), stay on the heap and are sent from memory.
public enum SegmentStorage {
    /// Segments this large or larger go to shared memory.
    public static let sharedMemoryThreshold = 256 * 1024

    /// `bytes`, moved to shared memory if large enough and possible.
    public static func keep(_ bytes: SharedBytes) -> SharedBytes {
        guard bytes.count >= sharedMemoryThreshold, !bytes.isInSharedMemory else { return bytes }
        return bytes.withUnsafeBytes { SharedBytes.inSharedMemory(copying: $0) } ?? bytes
    }
}
