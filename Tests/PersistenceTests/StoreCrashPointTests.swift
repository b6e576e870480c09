import Glibc
import LiveTimeline
import MediaProbe
import Persistence
import SharedBytes
import TestSupport
import Testing

/// What the store promised to keep: with `.always` everything a returned call wrote, in batched mode what the last
/// flush covered (plus init sections, which are always durable).
struct StorePromise {
    var segments: [String: [UInt64: (SegmentRecord, SharedBytes?)]] = [:]
    var slots: [UInt64: SlotRecord] = [:]
    var initSections: [String: [Int: SharedBytes]] = [:]

    static func acknowledged(_ workload: StoreWorkload) -> StorePromise {
        StorePromise(
            segments: workload.acknowledgedSegments, slots: workload.acknowledgedSlots,
            initSections: workload.acknowledgedInitSections)
    }

    static func flushed(_ workload: StoreWorkload, through sequence: UInt64) -> StorePromise {
        var promise = StorePromise(initSections: workload.acknowledgedInitSections)
        for (number, records) in workload.sequences where number <= sequence {
            for record in records {
                switch record {
                case .segment(let rendition, let segment):
                    promise.segments[rendition, default: [:]][segment.msn] =
                        workload.acknowledgedSegments[rendition]?[segment.msn]
                case .slot(let slot):
                    promise.slots[slot.msn] = slot
                }
            }
        }
        return promise
    }
}

/// Reopens the store after a crash and checks it against what was promised and attempted.
func verifyReopenedStore(
    _ io: CrashingFileIO, workload: StoreWorkload, promise: StorePromise, maximumSegmentsPerChunk: Int,
    checkReadsInsideChunks: Bool, checkWritingOn: Bool = true, context: String
) throws {
    let readsBefore = io.shortReads.count
    let store = try SegmentStore(
        directory: "/data/store", sync: .always, io: io, maximumSegmentsPerChunk: maximumSegmentsPerChunk)
    let channel = try store.channel(StoreWorkload.channel)
    let loaded = try channel.load(depth: 64)

    // Every promised segment and init section is intact.
    for (rendition, records) in promise.segments {
        for (msn, (record, bytes)) in records {
            let found = try channel.segment(rendition: rendition, msn: msn)
            #expect(found?.0 == record, "\(context): \(rendition) \(msn) record")
            #expect(found?.1 == bytes, "\(context): \(rendition) \(msn) bytes")
        }
    }
    for (rendition, sections) in promise.initSections {
        let stored = try channel.rendition(rendition).initSections()
        for (version, bytes) in sections {
            #expect(stored[version] == bytes, "\(context): init \(rendition) v\(version)")
        }
    }
    for rendition in StoreWorkload.renditions {
        for (version, bytes) in try channel.rendition(rendition).initSections() {
            #expect(workload.attemptedInitSections[rendition]?[version] == bytes, "\(context): init never written")
        }
    }

    let anythingPromised = !promise.slots.isEmpty || promise.segments.values.contains { !$0.isEmpty }
    guard let loaded else {
        #expect(!anythingPromised, "\(context): load returned nothing")
        return
    }
    // Slots: consecutive, each one written, covering every promised slot of the last run.
    let msns = loaded.slots.map(\.msn)
    #expect(msns == (msns.first.map { Array($0...msns.last!) } ?? []), "\(context): slots not consecutive")
    for slot in loaded.slots { #expect(workload.attemptedSlots[slot.msn] == slot, "\(context): slot never written") }
    // A slot after the skip starts the last run (promised or not: in batched mode an unflushed one may survive).
    let runStart = (msns.last ?? 0) >= StoreWorkload.msn(9) ? StoreWorkload.msn(9) : StoreWorkload.msn(0)
    for (msn, slot) in promise.slots where msn >= runStart {
        #expect(loaded.slots.contains(slot), "\(context): promised slot \(msn) missing")
    }
    // Renditions in creation order; records written (or made up from a listed slot), bytes as staged.
    #expect(Array(StoreWorkload.renditions.prefix(loaded.renditions.count)) == loaded.renditions.map(\.name))
    let listed = Set(msns)
    for rendition in loaded.renditions {
        for record in rendition.records {
            if let attempted = workload.attemptedSegments[rendition.name]?[record.msn], attempted == record { continue }
            #expect(
                record.kind == .unpersisted && listed.contains(record.msn)
                    && promise.segments[rendition.name]?[record.msn] == nil,
                "\(context): \(rendition.name) \(record.msn) was never written: \(record)")
        }
        let byMSN = Dictionary(uniqueKeysWithValues: rendition.records.map { ($0.msn, $0) })
        for (msn, bytes) in rendition.bytes {
            let location = try #require(byMSN[msn]?.location)
            #expect(workload.stagedBytes[rendition.name]?[location] == bytes, "\(context): bytes never staged")
        }
        for (msn, (record, bytes)) in promise.segments[rendition.name] ?? [:] where msn >= (msns.first ?? .max) {
            #expect(byMSN[msn] == record, "\(context): promised \(rendition.name) \(msn) not loaded")
            #expect(rendition.bytes[msn] == bytes, "\(context): promised bytes \(rendition.name) \(msn) not loaded")
        }
    }
    if checkReadsInsideChunks {
        #expect(
            io.shortReads.dropFirst(readsBefore).filter { $0.contains("/data/") }.isEmpty,
            "\(context): read past a chunk's end")
    }

    // The store keeps working: one more slot, durable across another crash.
    guard checkWritingOn else { return }
    let next =
        max(
            loaded.slots.last?.msn ?? 0,
            loaded.renditions.flatMap(\.records).map(\.msn).max() ?? 0) + 1
    let bytes = SharedBytes([9, 8, 7, 6])
    let location = try channel.rendition("audio").stage(bytes, container: .adts)
    let record = SegmentRecord(
        kind: .segment, msn: next, programDateTimeMilliseconds: 1, durationMilliseconds: 2_000, discontinuity: true,
        startsWithKeyframe: true, container: .adts, location: location, initSectionVersion: nil, mediaEndTicks: 1,
        mediaTimescale: 48_000)
    let slot = SlotRecord(
        msn: next, programDateTimeMilliseconds: 1, durationMilliseconds: 2_000, discontinuitySequence: 9,
        discontinuity: true)
    try channel.append([.segment(rendition: "audio", record), .slot(slot)])
    io.crash(seed: 99)
    let again = try SegmentStore(
        directory: "/data/store", sync: .always, io: io, maximumSegmentsPerChunk: maximumSegmentsPerChunk)
    let reloaded = try #require(try again.channel(StoreWorkload.channel).load(depth: 64))
    #expect(reloaded.slots.last == slot, "\(context): slot after the restart")
    let audio = try #require(reloaded.renditions.first { $0.name == "audio" })
    #expect(audio.records.last == record && audio.bytes[next] == bytes, "\(context): segment after the restart")
}

@Suite("Store crash points", .offThePool)
struct StoreCrashPointTests {
    /// Calls the whole workload makes (the crash points).
    static func callCount(maximumSegmentsPerChunk: Int) throws -> Int {
        let io = CrashingFileIO()
        let store = try SegmentStore(
            directory: "/data/store", sync: .always, io: io, maximumSegmentsPerChunk: maximumSegmentsPerChunk)
        var workload = StoreWorkload()
        #expect(workload.run(on: store) == nil)
        return io.calls
    }

    /// Small chunks, so the workload fills chunks as well as changing containers.
    @Test func everyAcknowledgedWriteSurvivesACrashAtEveryCall() throws {
        let maximumSegmentsPerChunk = 3
        let calls = try Self.callCount(maximumSegmentsPerChunk: maximumSegmentsPerChunk)
        #expect(calls > 200)
        // Each crash point gets its own seed for the torn sectors; every third keeps unsynced names at random.
        for k in 1...calls {
            let io = CrashingFileIO()
            io.die(atCall: k)
            var workload = StoreWorkload()
            if let store = try? SegmentStore(
                directory: "/data/store", sync: .always, io: io, maximumSegmentsPerChunk: maximumSegmentsPerChunk)
            {
                _ = workload.run(on: store)
            }
            io.crash(seed: UInt64(k) &* 10_007 &+ UInt64(maximumSegmentsPerChunk), keepsUnsyncedNames: k % 3 == 0)
            try verifyReopenedStore(
                io, workload: workload, promise: .acknowledged(workload),
                maximumSegmentsPerChunk: maximumSegmentsPerChunk, checkReadsInsideChunks: true,
                checkWritingOn: k % 4 == 0, context: "crash at call \(k) of \(calls)")
        }
    }

    @Test func batchedWritesAreDurableOnceFlushedAndNotPromisedBefore() throws {
        for seed in 0..<40 as Range<UInt64> {
            let io = CrashingFileIO()
            let store = try SegmentStore(directory: "/data/store", sync: .batched(intervalMilliseconds: 50), io: io)
            var workload = StoreWorkload()
            // Stop at a random call, flushing every 3 slots on the way.
            io.die(atCall: 60 + Int(seed) * 9)
            _ = workload.run(on: store, flushEvery: 3)
            io.crash(seed: seed)
            try verifyReopenedStore(
                io, workload: workload, promise: .flushed(workload, through: workload.flushedSequence),
                maximumSegmentsPerChunk: 256,
                checkReadsInsideChunks: false, context: "batched seed \(seed)")
        }
    }

    @Test func batchedWritesAreNotDurableBeforeAFlush() throws {
        let io = CrashingFileIO()
        let store = try SegmentStore(directory: "/data/store", sync: .batched(intervalMilliseconds: 50), io: io)
        let channel = try store.channel("ch")
        let rendition = try channel.rendition("video")
        // The directories exist durably (created with syncs); the writes after this are not synced.
        let callsBefore = io.calls
        let location = try rendition.stage(SharedBytes([1, 2, 3]), container: .mpegTS)
        let record = SegmentRecord(
            kind: .segment, msn: 5, programDateTimeMilliseconds: 0, durationMilliseconds: 1_000, discontinuity: false,
            startsWithKeyframe: true, container: .mpegTS, location: location, initSectionVersion: nil,
            mediaEndTicks: nil, mediaTimescale: 90_000)
        let sequence = try channel.append([.segment(rendition: "video", record)])
        #expect(io.calls > callsBefore)
        io.crash(seed: 1)
        let lost = try SegmentStore(directory: "/data/store", sync: .always, io: io)
        #expect(try lost.channel("ch").load(depth: 10) == nil)

        let store2 = try SegmentStore(directory: "/data/store", sync: .batched(intervalMilliseconds: 50), io: io)
        let channel2 = try store2.channel("ch")
        let location2 = try channel2.rendition("video").stage(SharedBytes([1, 2, 3]), container: .mpegTS)
        var record2 = record
        record2.location = location2
        let sequence2 = try channel2.append([.segment(rendition: "video", record2)])
        #expect(try store2.flush() >= sequence2)
        _ = sequence
        io.crash(seed: 2)
        let kept = try #require(
            try SegmentStore(directory: "/data/store", sync: .always, io: io).channel("ch").load(depth: 10))
        #expect(kept.renditions.first?.records == [record2])
        #expect(kept.renditions.first?.bytes[5] == SharedBytes([1, 2, 3]))
    }
}
