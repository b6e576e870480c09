import Glibc

/// A store operation that failed: the `errno` it failed with (0 when not a system error) and what was attempted.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// The system error number, e.g. `ENOSPC`; 0 for errors the store found itself (a bad checksum, a short file).
    public let errno: Int32
    /// The operation, the path and the reason, e.g. `pwrite /data/store/ch/r/v/data/3.ts: No space left on device`.
    public let message: String

    public init(errno: Int32, message: String) {
        self.errno = errno
        self.message = message
    }

    /// The failed system call `operation` on `path` with `code`'s description.
    public static func system(_ operation: String, _ path: String, errno code: Int32) -> StoreError {
        StoreError(errno: code, message: "\(operation) \(path): \(String(cString: strerror(code)))")
    }

    /// A problem the store found in the data (no errno).
    public static func data(_ message: String) -> StoreError { StoreError(errno: 0, message: message) }

    public var description: String { message }
}

/// An open file of the store: the descriptor and the path it was opened with (for error messages).
public struct StoreFile: Sendable, Hashable {
    public let descriptor: Int32
    public let path: String

    public init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }
}

/// The file operations the store uses: POSIX in production, a crash-simulating in-memory file system in tests.
///
/// Semantics follow POSIX: written bytes, created, renamed and removed names may be lost in a crash until they are
/// synced (`syncData` for a file's bytes and size, `syncDirectory` for the names in a directory,
/// `syncFilesystem` for everything).
public protocol StoreFileIO: Sendable {
    /// Opens `path` for reading and writing; creates it (empty) if `create` and it does not exist.
    func open(_ path: String, create: Bool) throws(StoreError) -> StoreFile
    /// Closes a file; never fails.
    func close(_ file: StoreFile)
    /// Writes all of `bytes` at `offset` (pwrite, repeated until done).
    func write(_ file: StoreFile, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StoreError)
    /// Reads into `buffer` from `offset` until it is full or the file ends; returns the number of bytes read.
    func read(
        _ file: StoreFile, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64
    ) throws(StoreError)
        -> Int
    /// The file's size in bytes.
    func size(_ file: StoreFile) throws(StoreError) -> Int64
    /// Makes the file's bytes and size durable (fdatasync).
    func syncData(_ file: StoreFile) throws(StoreError)
    /// Cuts or extends the file to `length` bytes.
    func truncate(_ file: StoreFile, to length: Int64) throws(StoreError)
    /// Reserves disk space for the first `length` bytes without changing the size (fallocate KEEP_SIZE); a file
    /// system without support may throw, the store only uses it to make later writes unlikely to fail.
    func preallocate(_ file: StoreFile, length: Int64) throws(StoreError)
    /// Makes every write on the file system holding `path` durable, names included (syncfs).
    func syncFilesystem(containing path: String) throws(StoreError)
    /// Makes the names in `directory` (created, renamed, removed entries) durable (fsync of the directory).
    func syncDirectory(_ directory: String) throws(StoreError)
    /// Creates one directory level; an existing directory is fine.
    func makeDirectory(_ path: String) throws(StoreError)
    /// The names in `directory` (without `.` and `..`); empty if it does not exist.
    func list(_ directory: String) throws(StoreError) -> [String]
    /// Renames `source` to `destination`, replacing it.
    func rename(_ source: String, to destination: String) throws(StoreError)
    /// Removes a file; a missing file is fine.
    func remove(_ path: String) throws(StoreError)
}

extension StoreFileIO {
    /// Writes an array's bytes at `offset`.
    func write(_ file: StoreFile, bytes: [UInt8], at offset: Int64) throws(StoreError) {
        let result: Result<Void, StoreError> = bytes.withUnsafeBytes { raw in
            Result { () throws(StoreError) in try write(file, raw, at: offset) }
        }
        try result.get()
    }

    /// Reads up to `count` bytes at `offset` (fewer at the end of the file).
    func read(_ file: StoreFile, count: Int, at offset: Int64) throws(StoreError) -> [UInt8] {
        var failure: StoreError?
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            do throws(StoreError) {
                initialized = try read(file, into: UnsafeMutableRawBufferPointer(buffer), at: offset)
            } catch {
                failure = error
                initialized = 0
            }
        }
        if let failure { throw failure }
        return bytes
    }

    /// Reads a whole file, or nil if it does not exist.
    func contents(of path: String) throws(StoreError) -> [UInt8]? {
        let file: StoreFile
        do {
            file = try open(path, create: false)
        } catch  where error.errno == ENOENT {
            return nil
        }
        defer { close(file) }
        let length = try size(file)
        return try read(file, count: Int(length), at: 0)
    }

    /// Replaces `path` with `bytes` atomically and durably: `{path}.tmp` is written and synced, renamed over
    /// `path`, then the directory is synced (the same steps as `DurableFile`, through this seam).
    func replaceDurably(_ path: String, with bytes: [UInt8]) throws(StoreError) {
        let temporary = path + ".tmp"
        let file = try open(temporary, create: true)
        do {
            try truncate(file, to: 0)
            try write(file, bytes: bytes, at: 0)
            try syncData(file)
        } catch {
            close(file)
            try? remove(temporary)
            throw error
        }
        close(file)
        try rename(temporary, to: path)
        try syncDirectory(parentDirectory(of: path))
    }

    /// `replaceDurably`, returning how many bytes the file grew by (negative if it shrank).
    func replaceDurablyCounting(_ path: String, with bytes: [UInt8]) throws(StoreError) -> Int64 {
        var old: Int64 = 0
        if let file = try? open(path, create: false) {
            old = (try? size(file)) ?? 0
            close(file)
        }
        try replaceDurably(path, with: bytes)
        return Int64(bytes.count) - old
    }

    /// Creates `path` and every missing parent, syncing each parent whose entries changed (the one way the origin
    /// creates a directory: a crash after it returned never loses the directory's name).
    public func makeDirectoriesDurably(_ path: String) throws(StoreError) {
        var parent = path.hasPrefix("/") ? "/" : "."
        for component in path.split(separator: "/") {
            let current = (parent == "/" ? "" : parent) + "/" + component
            if try !list(parent).contains(String(component)) {
                try makeDirectory(current)
                try syncDirectory(parent)
            }
            parent = current
        }
    }

    /// Creates `path` and its missing parents below `root` (which must exist), syncing each parent whose entries
    /// changed.
    func makeDirectories(_ path: String, below root: String) throws(StoreError) {
        guard path.hasPrefix(root + "/") else { return }
        var current = root
        for component in path.dropFirst(root.count + 1).split(separator: "/") {
            let next = current + "/" + component
            if try !list(current).contains(String(component)) {
                try makeDirectory(next)
                try syncDirectory(current)
            }
            current = next
        }
    }
}

/// The directory part of a path (`/a/b` for `/a/b/c`).
func parentDirectory(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return slash == path.startIndex ? "/" : String(path[..<slash])
}

/// The store's files through the kernel: every call retried on EINTR, errors carry `errno`.
public struct PosixFileIO: StoreFileIO {
    public init() {}

    public func open(_ path: String, create: Bool) throws(StoreError) -> StoreFile {
        while true {
            let descriptor = Glibc.open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0o644)
            if descriptor >= 0 { return StoreFile(descriptor: descriptor, path: path) }
            if errno != EINTR { throw .system("open", path, errno: errno) }
        }
    }

    public func close(_ file: StoreFile) {
        _ = Glibc.close(file.descriptor)
    }

    public func write(_ file: StoreFile, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StoreError) {
        var written = 0
        while written < bytes.count {
            let result = pwrite(
                file.descriptor, bytes.baseAddress! + written, bytes.count - written, off_t(offset) + written)
            if result < 0 {
                if errno == EINTR { continue }
                throw .system("pwrite", file.path, errno: errno)
            }
            written += result
        }
    }

    public func read(
        _ file: StoreFile, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64
    )
        throws(StoreError) -> Int
    {
        var total = 0
        while total < buffer.count {
            let result = pread(
                file.descriptor, buffer.baseAddress! + total, buffer.count - total, off_t(offset) + total)
            if result < 0 {
                if errno == EINTR { continue }
                throw .system("pread", file.path, errno: errno)
            }
            if result == 0 { break }
            total += result
        }
        return total
    }

    public func size(_ file: StoreFile) throws(StoreError) -> Int64 {
        var status = stat()
        guard fstat(file.descriptor, &status) == 0 else { throw .system("fstat", file.path, errno: errno) }
        return Int64(status.st_size)
    }

    public func syncData(_ file: StoreFile) throws(StoreError) {
        while fdatasync(file.descriptor) != 0 {
            if errno != EINTR { throw .system("fdatasync", file.path, errno: errno) }
        }
    }

    public func truncate(_ file: StoreFile, to length: Int64) throws(StoreError) {
        while ftruncate(file.descriptor, off_t(length)) != 0 {
            if errno != EINTR { throw .system("ftruncate", file.path, errno: errno) }
        }
    }

    public func preallocate(_ file: StoreFile, length: Int64) throws(StoreError) {
        guard let fallocate = Self.fallocate else { throw StoreError(errno: ENOSYS, message: "fallocate: missing") }
        let keepSize: Int32 = 1  // FALLOC_FL_KEEP_SIZE
        while fallocate(file.descriptor, keepSize, 0, length) != 0 {
            if errno != EINTR { throw .system("fallocate", file.path, errno: errno) }
        }
    }

    public func syncFilesystem(containing path: String) throws(StoreError) {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .system("open", path, errno: errno) }
        defer { _ = Glibc.close(descriptor) }
        guard let syncfs = Self.syncfs else {
            sync()
            return
        }
        while syncfs(descriptor) != 0 {
            if errno != EINTR { throw .system("syncfs", path, errno: errno) }
        }
    }

    public func syncDirectory(_ directory: String) throws(StoreError) {
        let descriptor = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .system("open", directory, errno: errno) }
        defer { _ = Glibc.close(descriptor) }
        while fsync(descriptor) != 0 {
            if errno != EINTR { throw .system("fsync", directory, errno: errno) }
        }
    }

    public func makeDirectory(_ path: String) throws(StoreError) {
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else { throw .system("mkdir", path, errno: errno) }
    }

    public func list(_ directory: String) throws(StoreError) -> [String] {
        guard let stream = opendir(directory) else {
            if errno == ENOENT { return [] }
            throw .system("opendir", directory, errno: errno)
        }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    public func rename(_ source: String, to destination: String) throws(StoreError) {
        guard Glibc.rename(source, destination) == 0 else { throw .system("rename", source, errno: errno) }
    }

    public func remove(_ path: String) throws(StoreError) {
        guard unlink(path) == 0 || errno == ENOENT else { throw .system("unlink", path, errno: errno) }
    }

    // syncfs(2) and fallocate(2) are GNU extensions the Glibc module does not import: looked up once by name.
    private typealias SyncFilesystem = @convention(c) (Int32) -> Int32
    private typealias Fallocate = @convention(c) (Int32, Int32, Int64, Int64) -> Int32
    private static let syncfs: SyncFilesystem? = symbol("syncfs")
    private static let fallocate: Fallocate? = symbol("fallocate64")

    private static func symbol<F>(_ name: String) -> F? {
        guard let address = dlsym(nil, name) else { return nil }
        return unsafeBitCast(address, to: F.self)
    }
}
