import Foundation
import Glibc
import HLSPackaging
import HLSPlaylist
import HTTPPushInput
import LiveTimeline
import Logging
import OriginCore
import Persistence
import SharedBytes
import Synchronization
import TestSource
import TestSupport
import Testing

/// POSIX file operations, with writes and syncs failing (ENOSPC) while `full` is set: a disk that fills up and
/// frees again. As on a real file system, space reserved (`preallocate`) before the disk filled still takes writes
/// (the store reserves its index files for this), and syncing them succeeds.
final class FillingDisk: StoreFileIO {
    let posix = PosixFileIO()
    let full = Atomic<Bool>(false)
    /// Bytes reserved per path.
    private let reserved = Mutex<[String: Int64]>([:])

    private func isReserved(_ path: String, through end: Int64) -> Bool {
        reserved.withLock { ($0[path] ?? -1) >= end }
    }

    private func check(_ what: String) throws(StoreError) {
        if full.load(ordering: .relaxed) {
            throw StoreError(errno: ENOSPC, message: "\(what): No space left on device")
        }
    }

    func open(_ path: String, create: Bool) throws(StoreError) -> StoreFile {
        if create { try check("open \(path)") }
        return try posix.open(path, create: create)
    }
    func close(_ file: StoreFile) { posix.close(file) }
    func write(_ file: StoreFile, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StoreError) {
        if !isReserved(file.path, through: offset + Int64(bytes.count)) { try check("write \(file.path)") }
        try posix.write(file, bytes, at: offset)
    }
    func read(_ file: StoreFile, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(StoreError) -> Int
    {
        try posix.read(file, into: buffer, at: offset)
    }
    func size(_ file: StoreFile) throws(StoreError) -> Int64 { try posix.size(file) }
    func syncData(_ file: StoreFile) throws(StoreError) {
        if !isReserved(file.path, through: 0) { try check("fdatasync \(file.path)") }
        try posix.syncData(file)
    }
    func truncate(_ file: StoreFile, to length: Int64) throws(StoreError) { try posix.truncate(file, to: length) }
    func preallocate(_ file: StoreFile, length: Int64) throws(StoreError) {
        try check("fallocate \(file.path)")
        try posix.preallocate(file, length: length)
        reserved.withLock { $0[file.path] = max($0[file.path] ?? 0, length) }
    }
    func syncFilesystem(containing path: String) throws(StoreError) { try posix.syncFilesystem(containing: path) }
    func syncDirectory(_ directory: String) throws(StoreError) { try posix.syncDirectory(directory) }
    func makeDirectory(_ path: String) throws(StoreError) {
        try check("mkdir \(path)")
        try posix.makeDirectory(path)
    }
    func list(_ directory: String) throws(StoreError) -> [String] { try posix.list(directory) }
    func rename(_ source: String, to destination: String) throws(StoreError) {
        try posix.rename(source, to: destination)
    }
    func remove(_ path: String) throws(StoreError) { try posix.remove(path) }
}

/// A full disk never crashes the origin and never stops the live stream: pushes are refused 507 (a 2xx always means
/// durable), their slots become GAP entries, the status says why, and it clears by itself when space returns.
@Suite("Durable store: a full disk degrades loudly and recovers", .offThePool)
struct FullDiskTests {
    @Test func aFullDiskRefusesPushesWith507WhilePlaylistsAdvanceAndRecoversByItself() throws {
        let clock = ManualClock()
        let disk = FillingDisk()
        let directory = try TemporaryDirectory.make("full-disk").path
        let channel = ChannelConfiguration(name: "ch", renditions: [.init(name: "360p")])
        let origin = try Origin(
            configuration: OriginConfiguration(channels: [channel], dataDirectory: directory), clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), storeFileIO: disk)
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 2)
        func push() -> Result<IngestReceipt, IngestError> {
            Result { () throws(IngestError) in
                try origin.ingest(
                    channel: "ch", rendition: "360p", fileName: "s.ts", body: SharedBytes(generator.nextSegment().bytes)
                )
            }
        }
        for _ in 0..<4 {
            clock.advance(seconds: 2)
            _ = try push().get()
            origin.tick()
        }
        let status = { try #require(origin.channel(named: "ch")?.status()) }
        #expect(try status().storage?.state == "ok")

        disk.full.store(true, ordering: .relaxed)
        for _ in 0..<3 {
            clock.advance(seconds: 2)
            guard case .failure(let error) = push() else {
                Issue.record("a push was acknowledged while the disk was full")
                continue
            }
            #expect(error.reason == .notPersisted)
            #expect(error.message.contains("No space left on device"))
            clock.advance(seconds: 0.1)
            origin.tick()
        }
        clock.advance(seconds: 2)
        origin.tick()
        let degraded = try #require(try status().storage)
        #expect(degraded.state == "degraded")
        #expect(degraded.reason?.contains("No space left") == true)
        #expect(degraded.writeFailures >= 3)
        let listed = try MediaPlaylist.parse(
            String(
                decoding: try #require(origin.channel(named: "ch")?.snapshot.renditions["360p"]?.playlist).array,
                as: UTF8.self))
        #expect(listed.segments.suffix(3).allSatisfy { $0.gap }, "the refused slots are GAP entries")

        disk.full.store(false, ordering: .relaxed)
        clock.advance(seconds: 2)
        let receipt = try push().get()
        origin.tick()
        #expect(receipt.msn != nil)
        #expect(try status().storage?.state == "ok", "it clears by itself once a write succeeds")
    }
}
