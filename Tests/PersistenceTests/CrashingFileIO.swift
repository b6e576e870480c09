import Glibc
import Persistence
import Synchronization
import TestSupport

/// An in-memory file system that loses what a crash would lose.
///
/// Written bytes, sizes, created, renamed and removed names stay volatile until synced: `syncData` makes a file's
/// bytes and size durable, `syncDirectory` the names in one directory, `syncFilesystem` everything. `crash(seed:)`
/// then keeps a random subset of the volatile 512-byte sectors of every file (torn writes), a random one of the old
/// and new sizes, and drops the unsynced names (or, with `keepsUnsyncedNames`, keeps all of a directory's
/// unsynced names at random). Faults: `dieAtCall` makes the k-th call and every later one fail with EIO (the process
/// is gone), `failAtCall` makes only the k-th call fail with `failErrno` (ENOSPC, EIO).
final class CrashingFileIO: StoreFileIO, Sendable {
    static let sectorSize = 512

    /// A file: its current bytes, and for each sector written since the last sync its durable bytes (an undo log,
    /// so syncing and writing never copy the whole file).
    private final class Inode: @unchecked Sendable {
        var data: [UInt8] = []
        var durableSize = 0
        var undo: [Int: [UInt8]] = [:]

        /// Keeps the durable bytes of the sectors in `range` before they change.
        func remember(_ range: Range<Int>) {
            guard !range.isEmpty else { return }
            for sector
                in (range.lowerBound / CrashingFileIO.sectorSize)...((range.upperBound - 1) / CrashingFileIO.sectorSize)
            where undo[sector] == nil {
                let start = sector * CrashingFileIO.sectorSize
                undo[sector] =
                    start < data.count ? Array(data[start..<min(start + CrashingFileIO.sectorSize, data.count)]) : []
            }
        }

        func sync() {
            undo = [:]
            durableSize = data.count
        }

        /// After a crash: each changed sector keeps its new or its old bytes, the size is the old or the new one.
        func crash(_ random: inout SplitMix64) {
            let size = random.next() % 2 == 0 ? durableSize : data.count
            for (sector, old) in undo where random.next() % 2 == 0 {
                let start = sector * CrashingFileIO.sectorSize
                let end = min(start + CrashingFileIO.sectorSize, data.count)
                guard start < end else { continue }
                data.replaceSubrange(
                    start..<end, with: old + [UInt8](repeating: 0, count: max(0, end - start - old.count)))
            }
            if data.count > size {
                data.removeLast(data.count - size)
            } else {
                data += [UInt8](repeating: 0, count: size - data.count)
            }
            sync()
        }
    }

    private final class Directory: @unchecked Sendable {
        var entries: [String: Node] = [:]
        var durableEntries: [String: Node] = [:]
    }

    private enum Node {
        case file(Inode)
        case directory(Directory)
    }

    private struct State: ~Copyable {
        var root = Directory()
        var descriptors: [Int32: Inode] = [:]
        var nextDescriptor: Int32 = 3
        var calls = 0
        var dieAtCall: Int?
        var failAtCall: Int?
        var failErrno: Int32 = ENOSPC
        var dead = false
        var shortReads: [String] = []
        /// Path components by path (paths repeat a lot).
        var components: [String: [String]] = [:]
    }

    private let state = Mutex(State())

    init() {}

    /// Calls made so far (every operation but `close` counts).
    var calls: Int { state.withLock { $0.calls } }

    /// Reads of a file that asked for bytes past its end, by path.
    var shortReads: [String] { state.withLock { $0.shortReads } }

    /// From call `k` on (counting from the next call), every call fails with EIO: the process died there.
    func die(atCall k: Int) { state.withLock { $0.dieAtCall = $0.calls + k } }

    /// Call `k` (counting from the next call) fails with `errno`; the calls after it work again.
    func fail(atCall k: Int, errno: Int32) {
        state.withLock {
            $0.failAtCall = $0.calls + k
            $0.failErrno = errno
        }
    }

    /// Clears a failure set by `fail(atCall:errno:)` that has not happened yet.
    func clearFault() { state.withLock { $0.failAtCall = nil } }

    /// The machine crashes and reboots: unsynced bytes are torn at random, unsynced names dropped, every
    /// descriptor closed, faults cleared.
    func crash(seed: UInt64, keepsUnsyncedNames: Bool = false) {
        var random = SplitMix64(seed: seed)
        state.withLock { state in
            var seen: Set<ObjectIdentifier> = []
            func settle(_ directory: Directory) {
                if keepsUnsyncedNames && random.next() % 2 == 0 {
                    directory.durableEntries = directory.entries
                } else {
                    directory.entries = directory.durableEntries
                }
                for node in directory.entries.values {
                    switch node {
                    case .directory(let child):
                        settle(child)
                    case .file(let inode):
                        guard seen.insert(ObjectIdentifier(inode)).inserted else { continue }
                        inode.crash(&random)
                    }
                }
            }
            settle(state.root)
            state.descriptors = [:]
            state.dieAtCall = nil
            state.failAtCall = nil
            state.dead = false
        }
    }

    /// Flips one bit of a file, durably (bit rot). Returns false if the file is missing or too short.
    @discardableResult
    func flipBit(_ path: String, byte offset: Int, bit: Int = 0) -> Bool {
        state.withLock { state in
            guard case .file(let inode)? = Self.lookup(path, in: state), offset < inode.data.count else {
                return false
            }
            inode.data[offset] ^= UInt8(1 << bit)
            return true
        }
    }

    /// Overwrites bytes of a file, durably (a torn write found at start). Returns false if the file is missing.
    @discardableResult
    func overwrite(_ path: String, at offset: Int, with bytes: [UInt8]) -> Bool {
        state.withLock { state in
            guard case .file(let inode)? = Self.lookup(path, in: state), offset + bytes.count <= inode.data.count else {
                return false
            }
            inode.data.replaceSubrange(offset..<(offset + bytes.count), with: bytes)
            return true
        }
    }

    /// The current contents of a file (tests).
    func contents(_ path: String) -> [UInt8]? {
        state.withLock { state in
            guard case .file(let inode)? = Self.lookup(path, in: state) else { return nil }
            return inode.data
        }
    }

    // MARK: StoreFileIO

    func open(_ path: String, create: Bool) throws(StoreError) -> StoreFile {
        try operate("open", path) { state throws(StoreError) in
            let (parent, name) = try Self.parent(path, in: &state)
            let inode: Inode
            switch parent.entries[name] {
            case .file(let existing)?:
                inode = existing
            case .directory?:
                throw .system("open", path, errno: EISDIR)
            case nil:
                guard create else { throw .system("open", path, errno: ENOENT) }
                inode = Inode()
                parent.entries[name] = .file(inode)
            }
            let descriptor = state.nextDescriptor
            state.nextDescriptor += 1
            state.descriptors[descriptor] = inode
            return StoreFile(descriptor: descriptor, path: path)
        }
    }

    func close(_ file: StoreFile) {
        _ = state.withLock { $0.descriptors.removeValue(forKey: file.descriptor) }
    }

    func write(_ file: StoreFile, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StoreError) {
        try operate("pwrite", file.path) { state throws(StoreError) in
            let inode = try Self.inode(file, state)
            let start = Int(offset)
            let end = start + bytes.count
            inode.remember(min(start, inode.data.count)..<end)
            if inode.data.count < end { inode.data += [UInt8](repeating: 0, count: end - inode.data.count) }
            inode.data.replaceSubrange(start..<end, with: bytes)
        }
    }

    func read(
        _ file: StoreFile, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64
    ) throws(StoreError)
        -> Int
    {
        try operate("pread", file.path) { state throws(StoreError) in
            let inode = try Self.inode(file, state)
            let start = min(Int(offset), inode.data.count)
            let count = min(buffer.count, inode.data.count - start)
            if count < buffer.count { state.shortReads.append(file.path) }
            inode.data.withUnsafeBytes { source in
                if count > 0 { buffer.baseAddress!.copyMemory(from: source.baseAddress! + start, byteCount: count) }
            }
            return count
        }
    }

    func size(_ file: StoreFile) throws(StoreError) -> Int64 {
        try operate("fstat", file.path) { state throws(StoreError) in Int64(try Self.inode(file, state).data.count) }
    }

    func syncData(_ file: StoreFile) throws(StoreError) {
        try operate("fdatasync", file.path) { state throws(StoreError) in
            try Self.inode(file, state).sync()
        }
    }

    func truncate(_ file: StoreFile, to length: Int64) throws(StoreError) {
        try operate("ftruncate", file.path) { state throws(StoreError) in
            let inode = try Self.inode(file, state)
            let length = Int(length)
            inode.remember(min(length, inode.data.count)..<max(length, inode.data.count))
            if length < inode.data.count {
                inode.data.removeLast(inode.data.count - length)
            } else {
                inode.data += [UInt8](repeating: 0, count: length - inode.data.count)
            }
        }
    }

    func preallocate(_ file: StoreFile, length: Int64) throws(StoreError) {
        try operate("fallocate", file.path) { state throws(StoreError) in _ = try Self.inode(file, state) }
    }

    func syncFilesystem(containing path: String) throws(StoreError) {
        try operate("syncfs", path) { state throws(StoreError) in
            func settle(_ directory: Directory) {
                directory.durableEntries = directory.entries
                for node in directory.entries.values {
                    switch node {
                    case .directory(let child): settle(child)
                    case .file(let inode): inode.sync()
                    }
                }
            }
            settle(state.root)
        }
    }

    func syncDirectory(_ directory: String) throws(StoreError) {
        try operate("fsync", directory) { state throws(StoreError) in
            guard case .directory(let node)? = Self.lookup(directory, in: state) else {
                throw .system("open", directory, errno: ENOENT)
            }
            node.durableEntries = node.entries
        }
    }

    func makeDirectory(_ path: String) throws(StoreError) {
        try operate("mkdir", path) { state throws(StoreError) in
            if path == "/" { return }
            let (parent, name) = try Self.parent(path, in: &state)
            switch parent.entries[name] {
            case .directory?: return
            case .file?: throw .system("mkdir", path, errno: EEXIST)
            case nil: parent.entries[name] = .directory(Directory())
            }
        }
    }

    func list(_ directory: String) throws(StoreError) -> [String] {
        try operate("opendir", directory) { state throws(StoreError) in
            switch Self.lookup(directory, in: state) {
            case .directory(let node)?: return Array(node.entries.keys)
            case .file?: throw .system("opendir", directory, errno: ENOTDIR)
            case nil: return []
            }
        }
    }

    func rename(_ source: String, to destination: String) throws(StoreError) {
        try operate("rename", source) { state throws(StoreError) in
            let (from, fromName) = try Self.parent(source, in: &state)
            let (to, toName) = try Self.parent(destination, in: &state)
            guard let node = from.entries.removeValue(forKey: fromName) else {
                throw .system("rename", source, errno: ENOENT)
            }
            to.entries[toName] = node
        }
    }

    func remove(_ path: String) throws(StoreError) {
        try operate("unlink", path) { state throws(StoreError) in
            let (parent, name) = try Self.parent(path, in: &state)
            if case .directory? = parent.entries[name] { throw .system("unlink", path, errno: EISDIR) }
            parent.entries[name] = nil
        }
    }

    // MARK: Internals

    private func operate<T>(
        _ operation: String, _ path: String, _ body: (inout State) throws(StoreError) -> T
    )
        throws(StoreError) -> T
    {
        let result: Result<T, StoreError> = state.withLock { state in
            state.calls += 1
            if state.dead || state.dieAtCall == state.calls {
                state.dead = true
                return .failure(.system(operation, path, errno: EIO))
            }
            if state.failAtCall == state.calls {
                return .failure(.system(operation, path, errno: state.failErrno))
            }
            do throws(StoreError) {
                return .success(try body(&state))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private static func inode(_ file: StoreFile, _ state: borrowing State) throws(StoreError) -> Inode {
        guard let inode = state.descriptors[file.descriptor] else { throw .system("fd", file.path, errno: EBADF) }
        return inode
    }

    private static func components(_ path: String) -> [String] {
        path.split(separator: "/").map(String.init).filter { $0 != "." }
    }

    private static func lookup(_ path: String, in state: borrowing State) -> Node? {
        var node = Node.directory(state.root)
        for component in state.components[path] ?? components(path) {
            guard case .directory(let directory) = node, let next = directory.entries[component] else { return nil }
            node = next
        }
        return node
    }

    private static func parent(_ path: String, in state: inout State) throws(StoreError) -> (Directory, String) {
        var parts: [String]
        if let known = state.components[path] {
            parts = known
        } else {
            parts = components(path)
            state.components[path] = parts
        }
        guard let name = parts.popLast() else { throw .system("lookup", path, errno: EINVAL) }
        var directory = state.root
        for component in parts {
            guard case .directory(let next)? = directory.entries[component] else {
                throw .system("lookup", path, errno: ENOENT)
            }
            directory = next
        }
        return (directory, name)
    }
}

