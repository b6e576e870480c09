import Foundation
import LiveTimeline
import MediaProbe
import Persistence
import SharedBytes
import TestSupport
import Testing

/// The store on the real file system (PosixFileIO) with `.always`.
@Suite("Segment store on disk", .offThePool)
struct PosixSegmentStoreTests {
    @Test func stagedSegmentsAndRecordsComeBackAfterReopening() throws {
        let root = try TemporaryDirectory.make("PosixSegmentStoreTests").path + "/store"
        defer { try? FileManager.default.removeItem(atPath: (root as NSString).deletingLastPathComponent) }
        let base: UInt64 = 1 << 40
        var written: [UInt64: SharedBytes] = [:]
        var trackedBytes: Int64 = 0
        do {
            let store = try SegmentStore(directory: root, sync: .always)
            let channel = try store.channel("news")
            #expect(try store.channel("news") === channel)
            let video = try channel.rendition("v720")
            let audio = try channel.rendition("audio")
            try video.writeInitSection(version: 1, bytes: SharedBytes([1, 2, 3]))
            for index in 0..<10 as Range<UInt64> {
                let msn = base + index
                let bytes = SharedBytes((0..<(1_000 + Int(index))).map { UInt8(truncatingIfNeeded: $0 &+ Int(index)) })
                let location = try video.stage(bytes, container: .mpegTS)
                #expect(try video.read(location) == bytes)
                written[msn] = bytes
                let pdt = 1_795_000_000_000 + Int64(index) * 2_000
                try channel.append([
                    .segment(
                        rendition: "v720",
                        SegmentRecord(
                            kind: .segment, msn: msn, programDateTimeMilliseconds: pdt, durationMilliseconds: 2_000,
                            discontinuity: false, startsWithKeyframe: true, container: .mpegTS, location: location,
                            initSectionVersion: nil, mediaEndTicks: Int64(index) * 180_000, mediaTimescale: 90_000)),
                    .segment(
                        rendition: "audio",
                        SegmentRecord(
                            kind: .gap, msn: msn, programDateTimeMilliseconds: pdt, durationMilliseconds: 2_000,
                            discontinuity: false, startsWithKeyframe: false, container: .adts, location: nil,
                            initSectionVersion: nil, mediaEndTicks: nil, mediaTimescale: 90_000)),
                ])
                if index < 9 {
                    try channel.append([
                        .slot(
                            SlotRecord(
                                msn: msn, programDateTimeMilliseconds: pdt, durationMilliseconds: 2_000,
                                discontinuitySequence: 4, discontinuity: index == 3))
                    ])
                }
            }
            _ = audio
            #expect(channel.bytesOnDisk > 10_000)
            trackedBytes = channel.bytesOnDisk
        }
        let reopened = try SegmentStore(directory: root, sync: .always)
        #expect(reopened.channelNames() == ["news"])
        let channel = try reopened.channel("news")
        // What was tracked while writing is what a fresh count finds.
        #expect(channel.bytesOnDisk == trackedBytes)
        let stored = try #require(try channel.load(depth: 5))
        #expect(stored.slots.map(\.msn) == Array((base + 4)...(base + 8)))
        #expect(stored.slots.first?.discontinuity == false)
        #expect(stored.renditions.map(\.name) == ["v720", "audio"])
        let video = stored.renditions[0]
        #expect(video.records.map(\.msn) == Array((base + 4)...(base + 9)))
        for record in video.records { #expect(video.bytes[record.msn] == written[record.msn]) }
        #expect(video.initSections == [1: SharedBytes([1, 2, 3])])
        #expect(stored.renditions[1].records.allSatisfy { $0.kind == .gap })
        let (record, bytes) = try #require(try channel.segment(rendition: "v720", msn: base + 2))
        #expect(record.msn == base + 2)
        #expect(bytes == written[base + 2])
        #expect(try channel.slots(from: base + 2, through: base + 3).map(\.msn) == [base + 2, base + 3])
        #expect(try channel.slot(containing: 1_795_000_000_000 + 2 * 2_000 + 5)?.msn == base + 2)
    }
}
