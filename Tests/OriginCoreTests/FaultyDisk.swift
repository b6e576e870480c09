import Glibc
import Persistence
import Synchronization

/// POSIX file operations with faults injected on demand: while `fault` is set, each operation it names on a path
/// that contains its `path` fragment fails with its `errno` (EIO, EBADF, ENOSPC), or, for `.shortWrite`, writes only
/// the first half of its bytes and then fails (a write the kernel cut short, then could not finish). Every injected
/// fault is counted in `injected`.
///
/// Descriptor numbers are given out as the kernel does (the lowest free one), from a table of its own: an operation
/// on a closed number fails with EBADF, one on a number reopened for another file acts on that file (as the kernel
/// would) and is recorded in `misdirected`.
final class FaultyDisk: StoreFileIO {
    enum Operation: Sendable, Hashable {
        case open, write, shortWrite, read, syncData, syncDirectory, makeDirectory, rename, preallocate
    }

    struct Fault: Sendable {
        var operations: Set<Operation>
        /// Only paths containing this fragment fail; "" fails every path.
        var path: String = ""
        var errno: Int32 = EIO
    }

    let posix = PosixFileIO()
    let fault = Mutex<Fault?>(nil)
    let injected = Atomic<Int>(0)
    private let descriptors = Mutex<[Int32: StoreFile]>([:])
    private let misdirectedCalls = Mutex<[String]>([])
    /// Operations that reached another file than the one they were meant for.
    var misdirected: [String] { misdirectedCalls.withLock { $0 } }

    /// The real file behind `file`'s number, as the kernel would resolve it.
    private func resolve(_ file: StoreFile, _ operation: String) throws(StoreError) -> StoreFile {
        guard let real = descriptors.withLock({ $0[file.descriptor] }) else {
            throw .system(operation, file.path, errno: EBADF)
        }
        if real.path != file.path {
            misdirectedCalls.withLock { $0.append("\(operation) of \(file.path) reached \(real.path)") }
        }
        return real
    }

    /// Throws if the current fault covers `operation` on `path`.
    private func check(_ operation: Operation, _ path: String) throws(StoreError) {
        guard let fault = fault.withLock({ $0 }), fault.operations.contains(operation),
            fault.path.isEmpty || path.contains(fault.path)
        else { return }
        injected.add(1, ordering: .relaxed)
        throw .system("\(operation) (injected)", path, errno: fault.errno)
    }

    func open(_ path: String, create: Bool) throws(StoreError) -> StoreFile {
        try check(.open, path)
        let real = try posix.open(path, create: create)
        return descriptors.withLock { descriptors in
            var number: Int32 = 3
            while descriptors[number] != nil { number += 1 }
            descriptors[number] = real
            return StoreFile(descriptor: number, path: path)
        }
    }
    func close(_ file: StoreFile) {
        guard let real = descriptors.withLock({ $0.removeValue(forKey: file.descriptor) }) else { return }
        posix.close(real)
    }
    func write(_ file: StoreFile, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StoreError) {
        let real = try resolve(file, "pwrite")
        do {
            try check(.shortWrite, file.path)
        } catch {
            try posix.write(real, UnsafeRawBufferPointer(rebasing: bytes[..<(bytes.count / 2)]), at: offset)
            throw error
        }
        try check(.write, file.path)
        try posix.write(real, bytes, at: offset)
    }
    func read(_ file: StoreFile, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(StoreError) -> Int
    {
        try check(.read, file.path)
        return try posix.read(try resolve(file, "pread"), into: buffer, at: offset)
    }
    func size(_ file: StoreFile) throws(StoreError) -> Int64 { try posix.size(try resolve(file, "fstat")) }
    func syncData(_ file: StoreFile) throws(StoreError) {
        try check(.syncData, file.path)
        try posix.syncData(try resolve(file, "fdatasync"))
    }
    func truncate(_ file: StoreFile, to length: Int64) throws(StoreError) {
        try posix.truncate(try resolve(file, "ftruncate"), to: length)
    }
    func preallocate(_ file: StoreFile, length: Int64) throws(StoreError) {
        try check(.preallocate, file.path)
        try posix.preallocate(try resolve(file, "fallocate"), length: length)
    }
    func syncFilesystem(containing path: String) throws(StoreError) { try posix.syncFilesystem(containing: path) }
    func syncDirectory(_ directory: String) throws(StoreError) {
        try check(.syncDirectory, directory)
        try posix.syncDirectory(directory)
    }
    func makeDirectory(_ path: String) throws(StoreError) {
        try check(.makeDirectory, path)
        try posix.makeDirectory(path)
    }
    func list(_ directory: String) throws(StoreError) -> [String] { try posix.list(directory) }
    func rename(_ source: String, to destination: String) throws(StoreError) {
        try check(.rename, source)
        try posix.rename(source, to: destination)
    }
    func remove(_ path: String) throws(StoreError) { try posix.remove(path) }
}
