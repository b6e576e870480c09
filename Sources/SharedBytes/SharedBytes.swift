/// An immutable, reference-counted block of bytes that many readers share without copying.
///
/// Segment bodies and rendered playlists are stored once as `SharedBytes`; the HTTP layer hands the
/// same memory to every response (libmicrohttpd reads it in place and releases its reference when the
/// response is destroyed). The memory is freed when the last reference goes away.
public final class SharedBytes: Sendable, CustomStringConvertible {
    // The pointer never changes and the bytes are never written after `init`, so sharing across threads is safe.
    nonisolated(unsafe) private let base: UnsafeMutableRawPointer
    /// Number of bytes.
    public let count: Int

    /// Copies `bytes` into a new immutable block.
    public init(_ bytes: some Collection<UInt8>) {
        count = bytes.count
        base = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1), alignment: 16)
        let typed = base.bindMemory(to: UInt8.self, capacity: max(count, 1))
        _ = UnsafeMutableBufferPointer(start: typed, count: count).initialize(from: bytes)
    }

    /// Copies the bytes of `buffer` into a new immutable block.
    public init(copying buffer: UnsafeRawBufferPointer) {
        count = buffer.count
        base = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1), alignment: 16)
        if count > 0, let source = buffer.baseAddress { base.copyMemory(from: source, byteCount: count) }
    }

    /// Copies the UTF-8 bytes of `string`.
    public convenience init(string: String) {
        self.init(Array(string.utf8))
    }

    /// Takes over memory built by a `ByteAccumulator` without copying it.
    fileprivate init(adopting pointer: UnsafeMutableRawPointer, count: Int) {
        self.base = pointer
        self.count = count
    }

    deinit { base.deallocate() }

    /// Read-only access to the bytes. The pointer is valid as long as this object lives.
    public var unsafeBaseAddress: UnsafeRawPointer { UnsafeRawPointer(base) }

    /// Calls `body` with the bytes.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// A copy of the bytes as an array (tests and small payloads only).
    public var array: [UInt8] { withUnsafeBytes { Array($0) } }

    public var description: String { "SharedBytes(\(count) bytes)" }
}

extension SharedBytes: Equatable {
    public static func == (lhs: SharedBytes, rhs: SharedBytes) -> Bool {
        lhs === rhs
            || (lhs.count == rhs.count
                && lhs.withUnsafeBytes { l in rhs.withUnsafeBytes { r in l.elementsEqual(r) } })
    }
}

/// A growable buffer for bytes that arrive in pieces (a request body); `finish()` turns it into `SharedBytes`
/// without a final copy. Not thread-safe: one owner at a time.
public struct ByteAccumulator: ~Copyable {
    private var base: UnsafeMutableRawPointer
    private var capacity: Int
    /// Bytes appended so far.
    public private(set) var count: Int = 0

    /// Creates an empty buffer with room for `initialCapacity` bytes.
    public init(initialCapacity: Int = 64 * 1024) {
        capacity = max(initialCapacity, 16)
        base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
    }

    /// Appends a piece.
    public mutating func append(_ piece: UnsafeRawBufferPointer) {
        guard piece.count > 0, let source = piece.baseAddress else { return }
        if count + piece.count > capacity {
            var newCapacity = capacity * 2
            while newCapacity < count + piece.count { newCapacity *= 2 }
            let grown = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
            grown.copyMemory(from: base, byteCount: count)
            base.deallocate()
            base = grown
            capacity = newCapacity
        }
        (base + count).copyMemory(from: source, byteCount: piece.count)
        count += piece.count
    }

    /// Ends accumulation and hands the memory to an immutable `SharedBytes`. When the buffer is much larger than
    /// its contents (capacity doubles while a body of unknown length streams in: a 137 KB segment ends in a 256 KiB
    /// buffer), the bytes are copied into an exact allocation instead, so a segment held for minutes does not keep
    /// the slack with it.
    public consuming func finish() -> SharedBytes {
        let bytes: SharedBytes
        if capacity - count > max(count / 8, 4096) {
            bytes = SharedBytes(copying: UnsafeRawBufferPointer(start: base, count: count))
            base.deallocate()
        } else {
            bytes = SharedBytes(adopting: base, count: count)
        }
        discard self
        return bytes
    }

    deinit { base.deallocate() }
}
