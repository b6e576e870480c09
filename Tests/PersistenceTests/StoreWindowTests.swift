import LiveTimeline
import MediaProbe
import Persistence
import SharedBytes
import TestSupport
import Testing

@Suite("Store window, lookups and eviction", .offThePool)
struct StoreWindowTests {
    /// Starts below an epoch boundary so the MSNs span three index files.
    static let base: UInt64 = (1 << 40) - 1_000
    static let count: UInt64 = 6_000

    static func bytes(_ msn: UInt64) -> SharedBytes {
        SharedBytes([UInt8(truncatingIfNeeded: msn), UInt8(truncatingIfNeeded: msn >> 8), 0x47, 1, 2])
    }

    static func pdt(_ msn: UInt64) -> Int64 { 1_795_000_000_000 + Int64(msn - base) * 2_000 }

    /// A channel with `count` slots of one rendition (6,000 MSNs: the last one held), in memory.
    static func filledChannel() throws -> (CrashingFileIO, ChannelStore) {
        let io = CrashingFileIO()
        let store = try SegmentStore(directory: "/store", sync: .never, io: io)
        let channel = try store.channel("big")
        let rendition = try channel.rendition("v")
        for msn in base..<(base + count) {
            let location = try rendition.stage(bytes(msn), container: .mpegTS)
            var records: [StoreRecord] = [
                .segment(
                    rendition: "v",
                    SegmentRecord(
                        kind: .segment, msn: msn, programDateTimeMilliseconds: pdt(msn), durationMilliseconds: 2_000,
                        discontinuity: false, startsWithKeyframe: true, container: .mpegTS, location: location,
                        initSectionVersion: nil, mediaEndTicks: nil, mediaTimescale: 90_000))
            ]
            if msn < base + count - 1 {
                records.append(
                    .slot(
                        SlotRecord(
                            msn: msn, programDateTimeMilliseconds: pdt(msn), durationMilliseconds: 2_000,
                            discontinuitySequence: 0, discontinuity: false)))
            }
            try channel.append(records)
        }
        return (io, channel)
    }

    static func checkWindow(_ channel: ChannelStore, depth: Int) throws {
        let loaded = try #require(try channel.load(depth: depth))
        let newestSlot = base + count - 2
        #expect(loaded.slots.map(\.msn) == Array((newestSlot - UInt64(depth) + 1)...newestSlot))
        let records = loaded.renditions[0].records
        #expect(records.map(\.msn) == Array((newestSlot - UInt64(depth) + 1)...(newestSlot + 1)))
        for record in records { #expect(loaded.renditions[0].bytes[record.msn] == bytes(record.msn)) }
    }

    @Test func loadReturnsTheNewestSlotsAfterThousandsOfMSNsAndAfterEviction() throws {
        let (io, channel) = try Self.filledChannel()
        try Self.checkWindow(channel, depth: 120)
        #expect(try channel.slot(containing: Self.pdt(Self.base + 4_321) + 1_999)?.msn == Self.base + 4_321)
        #expect(try channel.slot(containing: Self.pdt(Self.base) - 1) == nil)
        #expect(
            try channel.slots(from: Self.base + 995, through: Self.base + 1_004).map(\.msn)
                == Array((Self.base + 995)...(Self.base + 1_004)))
        let chunksBefore = try PosixLikeListing.names(io, "/store/big/r/v/data")
        #expect(chunksBefore.count == Int((Self.count + 255) / 256))
        let sizeBefore = channel.bytesOnDisk

        let horizon = Self.base + 5_000
        try channel.evict(below: horizon)
        #expect(String(decoding: io.contents("/store/big/horizon.json") ?? [], as: UTF8.self).contains("\(horizon)"))
        // Index files wholly below the horizon and chunks holding only evicted segments are gone.
        let keptEpochs = Array((horizon >> 12)...((Self.base + Self.count - 1) >> 12))
        #expect(keptEpochs.count == 2)
        #expect(try PosixLikeListing.names(io, "/store/big/r/v/index") == keptEpochs.map { "\($0).idx" })
        #expect(try PosixLikeListing.names(io, "/store/big/slots") == keptEpochs.map { "\($0).slots" })
        let chunksAfter = try PosixLikeListing.names(io, "/store/big/r/v/data")
        #expect(chunksAfter.count < chunksBefore.count && chunksAfter.count >= 4)
        #expect(channel.bytesOnDisk < sizeBefore)
        #expect(try channel.segment(rendition: "v", msn: Self.base + 10) == nil)
        #expect(try channel.segment(rendition: "v", msn: horizon)?.1 == Self.bytes(horizon))
        #expect(
            try channel.slots(from: Self.base, through: horizon + 2).map(\.msn) == [horizon, horizon + 1, horizon + 2])
        #expect(try channel.slot(containing: Self.pdt(horizon - 5)) == nil)
        #expect(try channel.slot(containing: Self.pdt(horizon + 500))?.msn == horizon + 500)
        try Self.checkWindow(channel, depth: 120)

        // Reopened, the horizon holds: a depth reaching below it stops there.
        try io.syncFilesystem(containing: "/store")
        io.crash(seed: 1)
        let reopened = try SegmentStore(directory: "/store", sync: .always, io: io).channel("big")
        #expect(reopened.bytesOnDisk == channel.bytesOnDisk)
        let loaded = try #require(try reopened.load(depth: 5_000))
        #expect(loaded.slots.first?.msn ?? 0 >= horizon)
        try Self.checkWindow(reopened, depth: 999)
    }
}

extension StoreWindowTests {
    @Test func theNextIndexFileIsCreatedOnceTheCurrentOneIsHalfFull() throws {
        let io = CrashingFileIO()
        let channel = try SegmentStore(directory: "/store", sync: .always, io: io).channel("ch")
        let epochStart: UInt64 = 1 << 41
        try writeSlot(channel, rendition: "v", msn: epochStart + 2_047, bytes: SharedBytes([1]))
        #expect(try PosixLikeListing.names(io, "/store/ch/slots") == ["\(epochStart >> 12).slots"])
        try writeSlot(channel, rendition: "v", msn: epochStart + 2_048, bytes: SharedBytes([2]))
        let expected = ["\(epochStart >> 12)", "\((epochStart >> 12) + 1)"]
        #expect(try PosixLikeListing.names(io, "/store/ch/slots") == expected.map { $0 + ".slots" })
        #expect(try PosixLikeListing.names(io, "/store/ch/r/v/index") == expected.map { $0 + ".idx" })
        // The empty file ahead changes nothing that is read back.
        io.crash(seed: 5)
        let loaded = try #require(
            try SegmentStore(directory: "/store", sync: .always, io: io).channel("ch").load(depth: 9))
        #expect(loaded.slots.map(\.msn) == [epochStart + 2_047, epochStart + 2_048])
        #expect(loaded.renditions[0].bytes[epochStart + 2_048] == SharedBytes([2]))
    }
}

/// Sorted file names in a directory of the in-memory file system.
enum PosixLikeListing {
    static func names(_ io: CrashingFileIO, _ directory: String) throws -> [String] {
        try io.list(directory).sorted()
    }
}
