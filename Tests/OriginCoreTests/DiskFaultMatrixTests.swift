import Foundation
import Glibc
import HLSPackaging
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

/// Disk faults injected through the store's file seam, one row per fault: while it lasts pushes get 507 and the
/// status says why; nothing listed is lost (every entry listed during the fault survives a restart as it was
/// listed); once it clears, the origin takes pushes again by itself.
@Suite("Disk faults: 507, nothing unsynced listed, a degraded status, recovery by itself", .offThePool)
struct DiskFaultMatrixTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var operations: Set<FaultyDisk.Operation>
        var path: String
        var errno: Int32
        var testDescription: String {
            "\(operations.map { "\($0)" }.sorted().joined(separator: "+")) on '\(path)' errno \(errno)"
        }
    }

    static let rows: [Row] = [
        Row(operations: [.write], path: "/data/", errno: EIO),
        Row(operations: [.shortWrite], path: "/data/", errno: EIO),
        Row(operations: [.syncData], path: "/data/", errno: EIO),
        Row(operations: [.write], path: ".idx", errno: EBADF),
        Row(operations: [.shortWrite], path: ".idx", errno: EIO),
        Row(operations: [.syncData], path: ".slots", errno: EIO),
        Row(operations: [.write, .shortWrite, .syncData, .open, .syncDirectory], path: "", errno: EIO),
        Row(operations: [.write, .syncData, .preallocate, .makeDirectory], path: "", errno: ENOSPC),
    ]

    @Test(arguments: rows)
    func aFaultRefusesPushesListsNothingUnsyncedAndClearsByItself(row: Row) throws {
        let directory = try TemporaryDirectory.make("disk-fault").path
        let clock = ManualClock()
        let disk = FaultyDisk()
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 2)
        func start(_ io: any StoreFileIO) throws -> Origin {
            var channel = ChannelConfiguration(name: "ch", renditions: [.init(name: "360p")])
            channel.window = .segments(10)
            return try Origin(
                configuration: OriginConfiguration(channels: [channel], dataDirectory: directory), clock: clock,
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), storeFileIO: io)
        }
        func push(_ origin: Origin) -> Result<IngestReceipt, IngestError> {
            let bytes = SharedBytes(generator.nextSegment().bytes)
            return Result { () throws(IngestError) in
                try origin.ingest(channel: "ch", rendition: "360p", fileName: "s.ts", body: bytes)
            }
        }
        var origin: Origin? = try start(disk)
        for _ in 0..<3 {
            clock.advance(seconds: 2)
            _ = try push(origin!).get()
            origin!.tick()
        }
        disk.fault.withLock { $0 = .init(operations: row.operations, path: row.path, errno: row.errno) }
        for _ in 0..<2 {
            clock.advance(seconds: 2)
            switch push(origin!) {
            case .success(let receipt): Issue.record("acknowledged during the fault: \(receipt.message)")
            case .failure(let error): #expect(error.reason == .notPersisted, "\(error)")
            }
            clock.advance(seconds: 1)
            origin!.tick()
        }
        let status = try #require(origin!.channel(named: "ch")?.status().storage)
        #expect(status.state == "degraded")
        #expect(status.writeFailures > 0)
        #expect(status.reason?.contains("(injected)") == true, "\(String(describing: status.reason))")
        let listedDuringFault = origin!.channel(named: "ch")?.snapshot.renditions["360p"]?.entries ?? []

        disk.fault.withLock { $0 = nil }
        clock.advance(seconds: 1)
        origin!.tick()
        clock.advance(seconds: 1)
        _ = try push(origin!).get()
        origin!.tick()
        #expect(try #require(origin!.channel(named: "ch")?.status().storage).state == "ok")
        let listed = origin!.channel(named: "ch")?.snapshot.renditions["360p"]?.entries ?? []
        origin = nil
        let restarted = try start(PosixFileIO())
        let restored = try #require(restarted.channel(named: "ch")?.snapshot.renditions["360p"])
        for entry in listedDuringFault + listed {
            let again = try #require(restored.entry(msn: entry.msn), "msn \(entry.msn) lost across the restart")
            #expect(again.isGap == entry.isGap, "msn \(entry.msn): listed gap \(entry.isGap), restored \(again.isGap)")
            #expect(again.bytes == entry.bytes, "msn \(entry.msn): other bytes after the restart")
        }
    }
}
