import Foundation
import Glibc
import LiveTimeline
import MediaProbe
import Persistence
import SharedBytes
import Synchronization
import TestSupport
import Testing

/// POSIX files behind descriptor numbers given out as the kernel does: the lowest free one, so a closed number is
/// the next open's. An operation on a closed number fails with EBADF; one on a number reopened for another file acts
/// on that file (as the kernel would) and is recorded in `misdirected`. Files written and not yet synced are in
/// `unsynced`.
final class ReusingDescriptors: StoreFileIO {
    private struct State {
        var open: [Int32: StoreFile] = [:]
        var misdirected: [String] = []
        var unsynced: Set<String> = []
    }

    private let posix = PosixFileIO()
    private let state = Mutex(State())

    var misdirected: [String] { state.withLock { $0.misdirected } }
    var unsynced: Set<String> { state.withLock { $0.unsynced } }

    /// The real file behind `file`'s number, as the kernel would resolve it.
    private func resolve(_ file: StoreFile, _ operation: String) throws(StoreError) -> StoreFile {
        let real = state.withLock { state -> StoreFile? in
            guard let real = state.open[file.descriptor] else { return nil }
            if real.path != file.path {
                state.misdirected.append("\(operation) of \(file.path) reached \(real.path)")
            }
            return real
        }
        guard let real else { throw .system(operation, file.path, errno: EBADF) }
        return real
    }

    func open(_ path: String, create: Bool) throws(StoreError) -> StoreFile {
        let real = try posix.open(path, create: create)
        return state.withLock { state in
            var number: Int32 = 3
            while state.open[number] != nil { number += 1 }
            state.open[number] = real
            return StoreFile(descriptor: number, path: path)
        }
    }
    func close(_ file: StoreFile) {
        guard let real = state.withLock({ $0.open.removeValue(forKey: file.descriptor) }) else { return }
        posix.close(real)
    }
    func write(_ file: StoreFile, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StoreError) {
        let real = try resolve(file, "pwrite")
        try posix.write(real, bytes, at: offset)
        state.withLock { _ = $0.unsynced.insert(real.path) }
    }
    func read(_ file: StoreFile, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(StoreError) -> Int
    {
        try posix.read(try resolve(file, "pread"), into: buffer, at: offset)
    }
    func size(_ file: StoreFile) throws(StoreError) -> Int64 { try posix.size(try resolve(file, "fstat")) }
    func syncData(_ file: StoreFile) throws(StoreError) {
        let real = try resolve(file, "fdatasync")
        try posix.syncData(real)
        state.withLock { _ = $0.unsynced.remove(real.path) }
    }
    func truncate(_ file: StoreFile, to length: Int64) throws(StoreError) {
        try posix.truncate(try resolve(file, "ftruncate"), to: length)
    }
    func preallocate(_ file: StoreFile, length: Int64) throws(StoreError) {
        try posix.preallocate(try resolve(file, "fallocate"), length: length)
    }
    func syncFilesystem(containing path: String) throws(StoreError) {
        try posix.syncFilesystem(containing: path)
        state.withLock { $0.unsynced.removeAll() }
    }
    func syncDirectory(_ directory: String) throws(StoreError) { try posix.syncDirectory(directory) }
    func makeDirectory(_ path: String) throws(StoreError) { try posix.makeDirectory(path) }
    func list(_ directory: String) throws(StoreError) -> [String] { try posix.list(directory) }
    func rename(_ source: String, to destination: String) throws(StoreError) {
        try posix.rename(source, to: destination)
    }
    func remove(_ path: String) throws(StoreError) { try posix.remove(path) }
}

@Suite("Index file cache: every file a pass wrote is synced, never a closed or reused descriptor", .offThePool)
struct IndexFileCacheTests {
    @Test func aPassWritingMoreIndexFilesThanTheCacheHoldsSyncsEachOfThem() throws {
        let root = FileManager.default.temporaryDirectory.path + "/index-cache-\(UInt32.random(in: .min ... .max))"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let io = ReusingDescriptors()
        let channel = try SegmentStore(directory: root, sync: .always, io: io).channel("ch")
        // 13 renditions writing GAP records in the second half of an epoch: each pass opens each rendition's index
        // file and prepares its next one, 26 files and the slots' 2, more than the 24 kept open.
        let renditions = (0..<13).map { "r\($0)" }
        let first: UInt64 = 3_000
        for msn in first..<(first + 3) {
            var records: [StoreRecord] = renditions.map { rendition in
                .segment(
                    rendition: rendition,
                    SegmentRecord(
                        kind: .gap, msn: msn, programDateTimeMilliseconds: 1_795_000_000_000 + Int64(msn) * 2_000,
                        durationMilliseconds: 2_000, discontinuity: false, startsWithKeyframe: false,
                        container: .mpegTS, location: nil, initSectionVersion: nil, mediaEndTicks: nil,
                        mediaTimescale: 90_000))
            }
            records.append(
                .slot(
                    SlotRecord(
                        msn: msn, programDateTimeMilliseconds: 1_795_000_000_000 + Int64(msn) * 2_000,
                        durationMilliseconds: 2_000, discontinuitySequence: 0, discontinuity: false)))
            try channel.append(records)
            #expect(io.misdirected.isEmpty, "\(io.misdirected.prefix(3))")
            #expect(io.unsynced.filter { $0.hasSuffix(".idx") || $0.hasSuffix(".slots") }.isEmpty)
        }
        let loaded = try #require(try channel.load(depth: 3))
        #expect(loaded.renditions.count == 13)
        #expect(loaded.renditions.allSatisfy { $0.records.map(\.msn) == [first, first + 1, first + 2] })
    }
}

@Suite("New directories survive a crash", .offThePool)
struct DurableDirectoryTests {
    @Test func everyDirectoryCreatedIsSyncedInItsParent() throws {
        let io = CrashingFileIO()
        try io.makeDirectoriesDurably("/data/channels/keys")
        try io.makeDirectoriesDurably("/data/channels/keys")
        io.crash(seed: 7)
        #expect(try io.list("/").contains("data"))
        #expect(try io.list("/data") == ["channels"])
        #expect(try io.list("/data/channels") == ["keys"])
    }
}
