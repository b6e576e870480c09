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

/// A 2xx and a listing both mean durable: a pass whose store records cannot be written is not carried out (nothing
/// journaled, nothing published) and its push is refused 507; what a player saw listed survives a restart.
@Suite("Durable store: nothing acknowledged or listed that the store does not hold", .offThePool)
struct DurableAcknowledgementTests {
    let directory: String
    let clock = ManualClock()
    let disk = FaultyDisk()
    var generator: TestStreamGenerator

    init() throws {
        directory = try TemporaryDirectory.make("durable-ack").path
        generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 2)
    }

    func start(io: any StoreFileIO) throws -> Origin {
        var channel = ChannelConfiguration(name: "ch", renditions: [.init(name: "360p")])
        channel.window = .segments(6)
        return try Origin(
            configuration: OriginConfiguration(channels: [channel], dataDirectory: directory), clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), storeFileIO: io)
    }

    mutating func push(_ origin: Origin) -> Result<IngestReceipt, IngestError> {
        let bytes = SharedBytes(generator.nextSegment().bytes)
        return Result { () throws(IngestError) in
            try origin.ingest(channel: "ch", rendition: "360p", fileName: "s.ts", body: bytes)
        }
    }

    func entries(_ origin: Origin) -> [WindowEntry] {
        origin.channel(named: "ch")?.snapshot.renditions["360p"]?.entries ?? []
    }

    @Test mutating func aPushWhoseIndexWriteFailsIsRefused507AndNothingOfItIsListed() throws {
        var origin: Origin? = try start(io: disk)
        for _ in 0..<3 {
            clock.advance(seconds: 2)
            _ = try push(origin!).get()
            origin!.tick()
        }
        let listedBefore = entries(origin!)
        let versionBefore = origin!.channel(named: "ch")!.snapshot.version

        disk.fault.withLock { $0 = .init(operations: [.write], path: ".idx") }
        clock.advance(seconds: 2)
        switch push(origin!) {
        case .success(let receipt):
            Issue.record("acknowledged although its index record was not written: \(receipt.message)")
        case .failure(let error):
            #expect(error.reason == .notPersisted)
            #expect(error.message.contains("Input/output error"))
        }
        #expect(disk.injected.load(ordering: .relaxed) > 0)
        #expect(entries(origin!).map(\.msn) == listedBefore.map(\.msn), "the refused push is listed")
        #expect(origin!.channel(named: "ch")!.snapshot.version == versionBefore, "a failed pass published")
        #expect(try #require(origin!.channel(named: "ch")?.status().storage).state == "degraded")

        // The fault clears: the refused slot closes as a GAP, the next push is taken, and all of it is durable.
        disk.fault.withLock { $0 = nil }
        clock.advance(seconds: 1.5)
        origin!.tick()
        clock.advance(seconds: 0.5)
        _ = try push(origin!).get()
        origin!.tick()
        #expect(try #require(origin!.channel(named: "ch")?.status().storage).state == "ok")
        let listed = entries(origin!)
        #expect(listed.count == listedBefore.count + 2, "the refused slot closes (a GAP), then the next push is listed")
        origin = nil
        let restarted = try start(io: PosixFileIO())
        let restored = try #require(restarted.channel(named: "ch")?.snapshot.renditions["360p"])
        for entry in listed {
            let again = try #require(restored.entry(msn: entry.msn), "msn \(entry.msn) lost across the restart")
            #expect(again.isGap == entry.isGap, "msn \(entry.msn) changed across the restart")
            #expect(again.bytes == entry.bytes, "msn \(entry.msn): other bytes after the restart")
        }
    }

    @Test mutating func aSegmentHeldForItsSlotIsNotServedFromTheStoreUntilListed() throws {
        var channel = ChannelConfiguration(name: "two", renditions: [.init(name: "360p"), .init(name: "180p")])
        channel.window = .segments(6)
        let origin = try Origin(
            configuration: OriginConfiguration(channels: [channel], dataDirectory: directory), clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        var low = try TestStreamGenerator(profile: TestSourceProfile.named("180p")!, segmentDuration: 2)
        func both() throws {
            clock.advance(seconds: 2)
            _ = try origin.ingest(
                channel: "two", rendition: "360p", fileName: "s.ts", body: SharedBytes(generator.nextSegment().bytes))
            _ = try origin.ingest(
                channel: "two", rendition: "180p", fileName: "s.ts", body: SharedBytes(low.nextSegment().bytes))
            origin.tick()
        }
        for _ in 0..<2 { try both() }
        let two = try #require(origin.channel(named: "two"))
        clock.advance(seconds: 2)
        // 360p fills the next slot; 180p has not: the slot is held, nothing of it listed yet.
        let held = try #require(
            try origin.ingest(
                channel: "two", rendition: "360p", fileName: "s.ts", body: SharedBytes(generator.nextSegment().bytes)
            ).msn)
        #expect(two.snapshot.renditions["360p"]?.entry(msn: held) == nil, "held, not listed")
        #expect(two.storedSegment(rendition: "360p", msn: held) == nil, "the store answered a held MSN")
        _ = try origin.ingest(
            channel: "two", rendition: "180p", fileName: "s.ts", body: SharedBytes(low.nextSegment().bytes))
        origin.tick()
        #expect(two.snapshot.renditions["360p"]?.entry(msn: held) != nil, "listed once the slot closed")
        #expect(two.storedSegment(rendition: "360p", msn: held) != nil, "then the store answers it too")
    }
}
