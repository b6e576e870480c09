import Glibc
public import LiveTimeline
public import MediaProbe
public import SharedBytes
import Synchronization

/// One rendition's bytes in the store: chunk files of segments back to back, and its fMP4 init sections.
public final class RenditionStore: Sendable {
    /// A chunk holds at most this many segments (by default)...
    public static let maximumSegmentsPerChunk = 256
    /// ... and at most this many bytes (a single larger segment gets a chunk of its own).
    public static let maximumChunkBytes: Int64 = 256 << 20

    public let name: String
    /// `{channel}/r/{name}`.
    let directory: String
    private let context: StoreContext
    private let bytesOnDisk: ByteCounter
    /// Held alone (never with another store lock), by `stage` only.
    private let writer: Mutex<ChunkWriter>
    /// The chunk the writer appends to, -1 if none: readable without the writer's lock (eviction spares it).
    private let writingChunk = Atomic<Int64>(-1)
    /// Chunk number to file name (`7.ts`), for reading; the writer adds its new chunks.
    private let chunkNames: Mutex<[UInt32: String]>
    /// The newest chunk that existed when the store was opened (the writer never appends to it): the one a crash
    /// may have left with bytes no record references.
    let newestChunkAtOpen: UInt32?

    private struct ChunkWriter: ~Copyable {
        var file: StoreFile?
        var chunk: UInt32 = 0
        var container: MediaContainer = .mpegTS
        var size: Int64 = 0
        var segments = 0
        var nextChunk: UInt32
    }

    init(name: String, directory: String, context: StoreContext, bytesOnDisk: ByteCounter) throws(StoreError) {
        self.name = name
        self.directory = directory
        self.context = context
        self.bytesOnDisk = bytesOnDisk
        let io = context.io
        try io.makeDirectories(directory + "/index", below: parentDirectory(of: parentDirectory(of: directory)))
        try io.makeDirectories(directory + "/data", below: directory)
        try io.makeDirectories(directory + "/init", below: directory)
        for name in try io.list(directory + "/init") where name.hasSuffix(".tmp") {
            try io.remove(directory + "/init/" + name)
        }
        var names: [UInt32: String] = [:]
        for file in try io.list(directory + "/data") {
            if let number = Self.chunkNumber(file) { names[number] = file }
        }
        chunkNames = Mutex(names)
        newestChunkAtOpen = names.keys.max()
        // A reopened store never appends to an old chunk: whatever a crash left at its end stays unreferenced.
        writer = Mutex(ChunkWriter(nextChunk: (names.keys.max() ?? 0) + (names.isEmpty ? 0 : 1)))
    }

    /// Appends a segment's bytes to the open chunk (a new chunk when the container changes or the chunk is full),
    /// CRCs them and, with `.always`, makes them durable (plus the new chunk's name) before returning. One writer at
    /// a time (serialized here); runs outside the channel's lock.
    public func stage(_ bytes: SharedBytes, container: MediaContainer) throws(StoreError) -> StoredSegment {
        let crc = storeCRC32(bytes)
        let io = context.io
        let durable = context.syncsEachWrite
        let result: Result<StoredSegment, StoreError> = writer.withLock { writer in
            do throws(StoreError) {
                let length = Int64(bytes.count)
                if writer.file == nil || writer.container != container
                    || writer.segments >= context.maximumSegmentsPerChunk
                    || (writer.segments > 0 && writer.size + length > Self.maximumChunkBytes)
                {
                    if let old = writer.file { io.close(old) }
                    writer.file = nil
                    let number = writer.nextChunk
                    let fileName = "\(number).\(Self.fileExtension(container))"
                    let file = try io.open(directory + "/data/" + fileName, create: true)
                    writer.file = file
                    writer.nextChunk = number + 1
                    writer.chunk = number
                    writingChunk.store(Int64(number), ordering: .sequentiallyConsistent)
                    writer.container = container
                    writer.size = 0
                    writer.segments = 0
                    chunkNames.withLock { $0[number] = fileName }
                    if durable {
                        do throws(StoreError) {
                            try io.syncDirectory(directory + "/data")
                        } catch {
                            // The chunk's name may not be durable: the next stage starts another chunk.
                            io.close(file)
                            writer.file = nil
                            throw error
                        }
                    }
                }
                let file = writer.file!
                let offset = writer.size
                do throws(StoreError) {
                    try withExtendedLifetime(bytes) { () throws(StoreError) in
                        try io.write(
                            file, UnsafeRawBufferPointer(start: bytes.unsafeBaseAddress, count: bytes.count),
                            at: offset)
                    }
                    if durable { try io.syncData(file) }
                } catch {
                    // After a failed write or sync the chunk's tail is in doubt: cut it back and start a new chunk.
                    try? io.truncate(file, to: offset)
                    io.close(file)
                    writer.file = nil
                    writingChunk.store(-1, ordering: .sequentiallyConsistent)
                    throw error
                }
                writer.size += length
                writer.segments += 1
                bytesOnDisk.add(length)
                return .success(
                    StoredSegment(chunk: writer.chunk, offset: UInt64(offset), length: UInt32(bytes.count), crc: crc))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Reads a stored segment and checks its length and CRC.
    /// - Throws: the I/O error, or a `StoreError` with errno 0 when the bytes are missing, short or corrupt.
    public func read(_ location: StoredSegment) throws(StoreError) -> SharedBytes {
        guard let path = chunkPath(location.chunk) else {
            throw StoreError(errno: ENOENT, message: "\(directory): chunk \(location.chunk) is missing")
        }
        let file = try context.io.open(path, create: false)
        defer { context.io.close(file) }
        return try Self.read(location, from: file, io: context.io)
    }

    /// The path of a chunk file, nil if it does not exist (for serving it with sendfile).
    public func chunkPath(_ chunk: UInt32) -> String? {
        if let name = chunkNames.withLock({ $0[chunk] }) { return directory + "/data/" + name }
        return nil
    }

    /// Chunk numbers with their file names.
    func chunks() -> [UInt32: String] { chunkNames.withLock { $0 } }

    /// The chunk the writer appends to (nil before the first stage).
    func currentChunk() -> UInt32? {
        let chunk = writingChunk.load(ordering: .sequentiallyConsistent)
        return chunk < 0 ? nil : UInt32(chunk)
    }

    /// Removes chunk files below `chunk` (never the writer's); returns the bytes freed.
    func removeChunks(below chunk: UInt32) throws(StoreError) -> Int64 {
        let writing = currentChunk()
        let doomed = chunkNames.withLock { names in
            names.filter { $0.key < chunk && $0.key != writing }
        }
        var freed: Int64 = 0
        for (number, fileName) in doomed {
            let path = directory + "/data/" + fileName
            if let file = try? context.io.open(path, create: false) {
                freed += (try? context.io.size(file)) ?? 0
                context.io.close(file)
            }
            try context.io.remove(path)
            _ = chunkNames.withLock { $0.removeValue(forKey: number) }
        }
        return freed
    }

    /// Reads `location` from an open chunk and checks it.
    static func read(
        _ location: StoredSegment, from file: StoreFile, io: any StoreFileIO
    ) throws(StoreError)
        -> SharedBytes
    {
        let count = Int(location.length)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 16)
        defer { buffer.deallocate() }
        let target = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
        let read = try io.read(file, into: target, at: Int64(location.offset))
        guard read == count else {
            throw .data("\(file.path): segment at \(location.offset) is short (\(read) of \(count) bytes)")
        }
        guard storeCRC32(UnsafeRawBufferPointer(target)) == location.crc else {
            throw .data("\(file.path): segment at \(location.offset) fails its CRC")
        }
        return SharedBytes(copying: UnsafeRawBufferPointer(target))
    }

    /// Writes fMP4 initialization section `version` durably (temporary file, sync, rename, directory sync).
    public func writeInitSection(version: Int, bytes: SharedBytes) throws(StoreError) {
        bytesOnDisk.add(try context.io.replaceDurablyCounting(directory + "/init/\(version).mp4", with: bytes.array))
    }

    /// The stored fMP4 initialization sections by version.
    public func initSections() throws(StoreError) -> [Int: SharedBytes] {
        var sections: [Int: SharedBytes] = [:]
        for file in try context.io.list(directory + "/init") {
            guard file.hasSuffix(".mp4"), let version = Int(file.dropLast(4)) else { continue }
            if let bytes = try context.io.contents(of: directory + "/init/" + file) {
                sections[version] = SharedBytes(bytes)
            }
        }
        return sections
    }

    static func fileExtension(_ container: MediaContainer) -> String {
        switch container {
        case .mpegTS: "ts"
        case .fragmentedMP4Segment: "m4s"
        case .fragmentedMP4Init: "mp4"
        case .adts: "aac"
        case .webVTT: "vtt"
        }
    }

    /// `12` for `12.ts`.
    static func chunkNumber(_ fileName: String) -> UInt32? {
        guard let dot = fileName.firstIndex(of: "."), !fileName.hasSuffix(".tmp") else { return nil }
        return UInt32(fileName[..<dot])
    }
}

/// A channel's bytes on disk, shared with its renditions.
final class ByteCounter: Sendable {
    private let value = Atomic<Int64>(0)

    func add(_ bytes: Int64) { value.add(bytes, ordering: .relaxed) }

    var current: Int64 { value.load(ordering: .relaxed) }
}
