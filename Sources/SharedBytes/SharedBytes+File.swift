import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension SharedBytes {
    /// Copies `buffer` into a shared-memory file (POSIX `shm_open`, unlinked at once, so only its descriptor names
    /// it) mapped read-only, so the bytes can also be sent with `sendfile` from the descriptor: the HTTP layer does
    /// that for large segments, which saves copying every byte through user space per request.
    ///
    /// Returns nil when the budget of such files is spent (`SharedMemoryFile.limit`, a share of the open-file
    /// limit: one descriptor per file), or the system refuses: keep the bytes on the heap then.
    public static func inSharedMemory(copying buffer: UnsafeRawBufferPointer) -> SharedBytes? {
        guard buffer.count > 0, let source = buffer.baseAddress else { return nil }
        return SharedMemoryFile.make(count: buffer.count) { $0.copyMemory(from: source, byteCount: buffer.count) }
    }

    /// True if the bytes live in a shared-memory file (`fileDescriptor` is valid).
    public var isInSharedMemory: Bool { fileDescriptor >= 0 }
}

/// The shared-memory files behind `SharedBytes.inSharedMemory(copying:)` and their budget.
public enum SharedMemoryFile {
    private static let open = Atomic<Int>(0)
    private static let sequence = Atomic<Int>(0)

    /// Most files open at once: a quarter of the soft open-file limit, at most 16,384 (each is one descriptor and
    /// one memory mapping; the rest of the descriptors are for connections).
    public static var limit: Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        let soft = limit.rlim_cur >= rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
        return min(16_384, soft / 4)
    }

    /// Files open now.
    public static var openCount: Int { open.load(ordering: .relaxed) }

    static func make(count: Int, fill: (UnsafeMutableRawPointer) -> Void) -> SharedBytes? {
        guard open.add(1, ordering: .relaxed).newValue <= limit else {
            open.subtract(1, ordering: .relaxed)
            return nil
        }
        let name = "/hlsorigin-\(getpid())-\(sequence.add(1, ordering: .relaxed).newValue)"
        let fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            open.subtract(1, ordering: .relaxed)
            return nil
        }
        shm_unlink(name)
        // posix_fallocate reserves the pages now: a full /dev/shm (containers often give it 64 MiB) then fails
        // here instead of raising SIGBUS when the mapping is written.
        guard posix_fallocate(fd, 0, off_t(count)) == 0,
            let mapped = mmap(nil, count, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), mapped != MAP_FAILED
        else {
            close(fd)
            open.subtract(1, ordering: .relaxed)
            return nil
        }
        fill(mapped)
        mprotect(mapped, count, PROT_READ)
        return SharedBytes(mapping: mapped, count: count, fileDescriptor: fd)
    }

    static func release(base: UnsafeMutableRawPointer, count: Int, fileDescriptor: Int32) {
        munmap(base, count)
        close(fileDescriptor)
        open.subtract(1, ordering: .relaxed)
    }
}
