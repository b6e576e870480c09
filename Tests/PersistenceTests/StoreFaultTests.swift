import Glibc
import LiveTimeline
import MediaProbe
import Persistence
import SharedBytes
import TestSupport
import Testing

/// Writes one segment of `rendition` at `msn` and its slot; returns the record.
@discardableResult
func writeSlot(
    _ channel: ChannelStore, rendition: String, msn: UInt64, bytes: SharedBytes
) throws(StoreError)
    -> SegmentRecord
{
    let location = try channel.rendition(rendition).stage(bytes, container: .mpegTS)
    let pdt = 1_795_000_000_000 + Int64(truncatingIfNeeded: msn % 1_000_000) * 2_000
    let record = SegmentRecord(
        kind: .segment, msn: msn, programDateTimeMilliseconds: pdt, durationMilliseconds: 2_000, discontinuity: false,
        startsWithKeyframe: true, container: .mpegTS, location: location, initSectionVersion: nil,
        mediaEndTicks: nil, mediaTimescale: 90_000)
    let slot = SlotRecord(
        msn: msn, programDateTimeMilliseconds: pdt, durationMilliseconds: 2_000, discontinuitySequence: 0,
        discontinuity: false)
    try channel.append([.segment(rendition: rendition, record), .slot(slot)])
    return record
}

@Suite("Store faults and corruption", .offThePool)
struct StoreFaultTests {
    static let base: UInt64 = 1 << 40
    /// The failing write opens new index files (whose names need a directory sync), the write after it uses them.
    static let msns: [UInt64] = [base - 4_000, base, base + 1]

    static func segmentBytes(_ msn: UInt64) -> SharedBytes {
        SharedBytes((0..<(500 + Int(msn % 13))).map { UInt8(truncatingIfNeeded: $0 &+ Int(msn % 251)) })
    }

    @Test(arguments: [ENOSPC, EIO])
    func failedWritesSurfaceTheirErrnoAndTheStoreKeepsWorking(errno code: Int32) throws {
        // The failure hits each call of a stage + append in turn (open, write, sync, directory sync, ...).
        let probe = CrashingFileIO()
        let probeChannel = try SegmentStore(directory: "/store", sync: .always, io: probe).channel("ch")
        try writeSlot(probeChannel, rendition: "v", msn: Self.msns[0], bytes: Self.segmentBytes(Self.msns[0]))
        let callsBefore = probe.calls
        try writeSlot(probeChannel, rendition: "v", msn: Self.msns[1], bytes: Self.segmentBytes(Self.msns[1]))
        let calls = probe.calls - callsBefore
        #expect(calls >= 8)
        var failures = 0
        for k in 1...calls {
            let io = CrashingFileIO()
            let store = try SegmentStore(directory: "/store", sync: .always, io: io)
            let channel = try store.channel("ch")
            try writeSlot(channel, rendition: "v", msn: Self.msns[0], bytes: Self.segmentBytes(Self.msns[0]))
            io.fail(atCall: k, errno: code)
            var failure: StoreError?
            do {
                try writeSlot(channel, rendition: "v", msn: Self.msns[1], bytes: Self.segmentBytes(Self.msns[1]))
            } catch {
                failure = error
            }
            // Only a failed reservation of index space (fallocate) is not an error: the writes themselves decide.
            if let failure {
                #expect(failure.errno == code, "call \(k): \(failure)")
                failures += 1
            }
            // Space is back: the next segment is stored, and survives a crash with the first.
            try writeSlot(channel, rendition: "v", msn: Self.msns[2], bytes: Self.segmentBytes(Self.msns[2]))
            io.crash(seed: UInt64(k))
            let reopened = try SegmentStore(directory: "/store", sync: .always, io: io).channel("ch")
            for msn in [Self.msns[0], Self.msns[2]] {
                #expect(try reopened.segment(rendition: "v", msn: msn)?.1 == Self.segmentBytes(msn), "call \(k)")
            }
            let loaded = try #require(try reopened.load(depth: 10))
            #expect(loaded.slots.last?.msn == Self.msns[2], "call \(k)")
            #expect(loaded.renditions[0].bytes[Self.msns[2]] == Self.segmentBytes(Self.msns[2]), "call \(k)")
        }
        #expect(failures >= calls - 2)
    }

    /// A finished workload, reopened after `damage`.
    func loadAfterFlipping(_ damage: (CrashingFileIO) -> Void) throws -> (StoredChannel, ChannelStore) {
        let io = CrashingFileIO()
        var workload = StoreWorkload()
        #expect(workload.run(on: try SegmentStore(directory: "/data/store", sync: .always, io: io)) == nil)
        damage(io)
        io.crash(seed: 0)
        let channel = try SegmentStore(directory: "/data/store", sync: .always, io: io).channel(StoreWorkload.channel)
        return (try #require(try channel.load(depth: 64)), channel)
    }

    @Test func aCorruptSegmentComesBackWithoutBytes() throws {
        let msn = StoreWorkload.msn(10)
        let (loaded, channel) = try loadAfterFlipping { io in
            let chunk = "/data/store/ch/r/video/data/1.m4s"
            // The chunk starts with the first fMP4 segment (index 6); flip a bit inside index 10's range.
            let offset = (6..<10).map { StoreWorkload.bytes("video", StoreWorkload.msn($0)).count }.reduce(0, +)
            #expect(io.flipBit(chunk, byte: offset + 17, bit: 3))
        }
        let video = try #require(loaded.renditions.first { $0.name == "video" })
        let record = try #require(video.records.first { $0.msn == msn })
        #expect(record.kind == .segment)
        #expect(video.bytes[msn] == nil)
        #expect(video.bytes[StoreWorkload.msn(11)] == StoreWorkload.bytes("video", StoreWorkload.msn(11)))
        let found = try #require(try channel.segment(rendition: "video", msn: msn))
        #expect(found.0 == record && found.1 == nil)
    }

    @Test func anUnreadableSegmentRecordIsMadeUpFromItsSlot() throws {
        let msn = StoreWorkload.msn(10)
        let (loaded, channel) = try loadAfterFlipping { io in
            let path = "/data/store/ch/r/hd/index/\(msn >> 12).idx"
            #expect(io.flipBit(path, byte: Int(msn & 4095) * 64 + 20))
        }
        let hd = try #require(loaded.renditions.first { $0.name == "hd" })
        let slot = try #require(loaded.slots.first { $0.msn == msn })
        let record = try #require(hd.records.first { $0.msn == msn })
        #expect(record.kind == .unpersisted && record.location == nil)
        #expect(record.programDateTimeMilliseconds == slot.programDateTimeMilliseconds)
        #expect(record.durationMilliseconds == slot.durationMilliseconds)
        #expect(try channel.segment(rendition: "hd", msn: msn) == nil)
    }

    @Test func aMissingChunkLeavesItsRecordsWithoutBytes() throws {
        let (loaded, _) = try loadAfterFlipping { io in
            try? io.remove("/data/store/ch/r/audio/data/0.aac")
            try? io.syncDirectory("/data/store/ch/r/audio/data")
        }
        let audio = try #require(loaded.renditions.first { $0.name == "audio" })
        #expect(audio.records.contains { $0.kind == .segment })
        #expect(audio.bytes.isEmpty)
    }

    @Test func aCorruptSlotRecordEndsTheRestoredSlotsAboveIt() throws {
        let corrupt = StoreWorkload.msn(11)
        let (loaded, _) = try loadAfterFlipping { io in
            #expect(io.flipBit("/data/store/ch/slots/\(corrupt >> 12).slots", byte: Int(corrupt & 4095) * 32 + 9))
        }
        // Listed MSNs above the damage come back; none is reused below it.
        #expect(loaded.slots.map(\.msn) == [StoreWorkload.msn(12)])
    }

    @Test func slotsAboveATornSlotAreDroppedEvenBeyondTheDepth() throws {
        let io = CrashingFileIO()
        let channel = try SegmentStore(directory: "/s", sync: .always, io: io).channel("ch")
        let first = Self.base + 100
        for msn in first...(first + 14) {
            try writeSlot(channel, rendition: "v", msn: msn, bytes: Self.segmentBytes(msn))
        }
        // Slot first + 10 never reached the disk; the ones above it did (an unflushed batch, torn).
        let torn = first + 10
        #expect(
            io.overwrite(
                "/s/ch/slots/\(torn >> 12).slots", at: Int(torn & 4095) * 32, with: [UInt8](repeating: 0, count: 32)))
        io.crash(seed: 0)
        let reopened = try SegmentStore(directory: "/s", sync: .always, io: io).channel("ch")
        let loaded = try #require(try reopened.load(depth: 3))
        #expect(loaded.slots.map(\.msn) == [torn - 3, torn - 2, torn - 1])
        // The segments above stay (as held records); the slot MSNs above the tear are free again.
        #expect(loaded.renditions[0].records.last?.msn == first + 14)
        #expect(try reopened.slots(from: torn, through: first + 14).isEmpty)
        try writeSlot(reopened, rendition: "v", msn: torn, bytes: Self.segmentBytes(torn))
        io.crash(seed: 1)
        let again = try SegmentStore(directory: "/s", sync: .always, io: io).channel("ch")
        #expect(try again.load(depth: 3)?.slots.map(\.msn) == [torn - 2, torn - 1, torn])
    }

    @Test func aCrashWhileLoadRepairsIsRepairedAgain() throws {
        let first = Self.base + 100
        let torn = first + 10
        /// 15 slots, the 11th torn, and bytes of a refused push at the end of the chunk.
        func damagedStore() throws -> CrashingFileIO {
            let io = CrashingFileIO()
            let channel = try SegmentStore(directory: "/s", sync: .always, io: io).channel("ch")
            for msn in first...(first + 14) {
                try writeSlot(channel, rendition: "v", msn: msn, bytes: Self.segmentBytes(msn))
            }
            _ = try channel.rendition("v").stage(SharedBytes([1, 2, 3]), container: .mpegTS)
            #expect(
                io.overwrite(
                    "/s/ch/slots/\(torn >> 12).slots", at: Int(torn & 4095) * 32, with: [UInt8](repeating: 0, count: 32)
                ))
            io.crash(seed: 0)
            return io
        }
        let probe = try damagedStore()
        let before = probe.calls
        _ = try SegmentStore(directory: "/s", sync: .always, io: probe).channel("ch").load(depth: 3)
        let calls = probe.calls - before
        for k in 1...calls {
            let io = try damagedStore()
            io.die(atCall: k)
            _ = try? SegmentStore(directory: "/s", sync: .always, io: io).channel("ch").load(depth: 3)
            io.crash(seed: UInt64(k))
            let channel = try SegmentStore(directory: "/s", sync: .always, io: io).channel("ch")
            let loaded = try #require(try channel.load(depth: 3), "crash at call \(k)")
            #expect(loaded.slots.map(\.msn) == [torn - 3, torn - 2, torn - 1], "crash at call \(k)")
            #expect(loaded.renditions[0].bytes[torn - 1] == Self.segmentBytes(torn - 1), "crash at call \(k)")
            #expect(
                io.contents("/s/ch/r/v/data/0.ts")?.count
                    == (first...(first + 14)).map { Self.segmentBytes($0).count }.reduce(0, +))
        }
    }

    @Test func aTornTailOfAChunkIsCutAtOpen() throws {
        let io = CrashingFileIO()
        let store = try SegmentStore(directory: "/s", sync: .always, io: io)
        let channel = try store.channel("ch")
        try writeSlot(channel, rendition: "v", msn: 7, bytes: Self.segmentBytes(7))
        // A push whose bytes were staged but never recorded (refused, or a crash before its record).
        _ = try channel.rendition("v").stage(SharedBytes([1, 2, 3, 4]), container: .mpegTS)
        io.crash(seed: 3)
        let reopened = try SegmentStore(directory: "/s", sync: .always, io: io).channel("ch")
        #expect(try reopened.load(depth: 5)?.renditions[0].bytes[7] == Self.segmentBytes(7))
        #expect(io.contents("/s/ch/r/v/data/0.ts")?.count == Self.segmentBytes(7).count)
    }
}
