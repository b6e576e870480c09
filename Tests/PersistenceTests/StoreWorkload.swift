import LiveTimeline
import MediaProbe
import Persistence
import SharedBytes
import TestSupport

/// A scripted channel for the crash tests: 3 renditions (MPEG-TS video that changes to fMP4 with two init
/// sections, fMP4 video, ADTS audio), segments and GAPs, slot records with a discontinuity and a skip over MSNs
/// (downtime), a container change (a new chunk) and, with small chunks, chunks that fill up. It remembers what the store acknowledged (the calls that
/// returned) and everything it asked the store to write.
struct StoreWorkload {
    static let channel = "ch"
    static let renditions = ["video", "hd", "audio"]
    static let base: UInt64 = (1 << 40) - 7
    static let slotCount = 14
    static let pdtBase: Int64 = 1_795_000_000_000

    /// Acknowledged segment records with their bytes, by rendition and MSN.
    var acknowledgedSegments: [String: [UInt64: (SegmentRecord, SharedBytes?)]] = [:]
    /// Acknowledged slot records by MSN.
    var acknowledgedSlots: [UInt64: SlotRecord] = [:]
    /// Acknowledged init sections by rendition and version.
    var acknowledgedInitSections: [String: [Int: SharedBytes]] = [:]
    /// Every record passed to `append` (acknowledged or not), and every init section and staged byte string.
    var attemptedSegments: [String: [UInt64: SegmentRecord]] = [:]
    var attemptedSlots: [UInt64: SlotRecord] = [:]
    var attemptedInitSections: [String: [Int: SharedBytes]] = [:]
    var stagedBytes: [String: [StoredSegment: SharedBytes]] = [:]
    /// Sequence numbers returned by `append`, with the records they covered.
    var sequences: [(UInt64, [StoreRecord])] = []
    /// What the last `flush()` that returned covered.
    var flushedSequence: UInt64 = 0

    /// The MSN of slot `index` (slots 9 on follow a skip of 5 MSNs).
    static func msn(_ index: Int) -> UInt64 { base + UInt64(index) + (index >= 9 ? 5 : 0) }

    static func bytes(_ rendition: String, _ msn: UInt64) -> SharedBytes {
        let index = Int(truncatingIfNeeded: msn &- base) &+ rendition.utf8.count &* 100
        let count = 300 + Int(msn % 7) * 150 + rendition.utf8.count * 40
        return noise.withUnsafeBytes {
            SharedBytes(copying: UnsafeRawBufferPointer(rebasing: $0[(index * 13 % 4_096)...].prefix(count)))
        }
    }

    /// Pseudo-random bytes the segments are cut from.
    private static let noise: SharedBytes = {
        var random = SplitMix64(seed: 7)
        var words: [UInt64] = []
        for _ in 0..<1_024 { words.append(random.next()) }
        return words.withUnsafeBytes { SharedBytes(copying: $0) }
    }()

    static func container(_ rendition: String, _ index: Int) -> MediaContainer {
        switch rendition {
        case "video": index < 6 ? .mpegTS : .fragmentedMP4Segment
        case "hd": .fragmentedMP4Segment
        default: .adts
        }
    }

    static func isGap(_ rendition: String, _ index: Int) -> Bool {
        (rendition == "audio" && index == 4) || (rendition == "hd" && (index == 2 || index == 10))
    }

    /// Runs the script until the store throws (the error is returned) or the end.
    mutating func run(on store: SegmentStore, flushEvery: Int? = nil) -> StoreError? {
        do throws(StoreError) {
            let channel = try store.channel(Self.channel)
            for name in Self.renditions { _ = try channel.rendition(name) }
            for index in 0..<Self.slotCount {
                let msn = Self.msn(index)
                let pdt = Self.pdtBase + Int64(index) * 2_000 + (index >= 9 ? 10_000 : 0)
                if index == 0 || index == 6 || index == 11 {
                    let version = index == 0 ? 1 : index == 6 ? 2 : 3
                    let rendition = index == 0 ? "hd" : "video"
                    let section = SharedBytes((0..<(100 + version)).map { UInt8(truncatingIfNeeded: $0 * version) })
                    attemptedInitSections[rendition, default: [:]][version] = section
                    try channel.rendition(rendition).writeInitSection(version: version, bytes: section)
                    acknowledgedInitSections[rendition, default: [:]][version] = section
                }
                for name in Self.renditions {
                    let container = Self.container(name, index)
                    var record = SegmentRecord(
                        kind: .gap, msn: msn, programDateTimeMilliseconds: pdt, durationMilliseconds: 2_000,
                        discontinuity: index == 9, startsWithKeyframe: false, container: container, location: nil,
                        initSectionVersion: name == "hd" ? 1 : (index >= 11 ? 3 : index >= 6 ? 2 : nil),
                        mediaEndTicks: nil, mediaTimescale: name == "audio" ? 48_000 : 90_000)
                    var bytes: SharedBytes?
                    if !Self.isGap(name, index) {
                        let segment = Self.bytes(name, msn)
                        let location = try channel.rendition(name).stage(segment, container: container)
                        stagedBytes[name, default: [:]][location] = segment
                        bytes = segment
                        record.kind = .segment
                        record.location = location
                        record.startsWithKeyframe = true
                        record.mediaEndTicks = Int64(index + 1) * 180_000
                    }
                    let records: [StoreRecord] = [.segment(rendition: name, record)]
                    attemptedSegments[name, default: [:]][msn] = record
                    let sequence = try channel.append(records)
                    sequences.append((sequence, records))
                    acknowledgedSegments[name, default: [:]][msn] = (record, bytes)
                }
                let slot = SlotRecord(
                    msn: msn, programDateTimeMilliseconds: pdt, durationMilliseconds: 2_000,
                    discontinuitySequence: 3 + (index >= 9 ? 1 : 0), discontinuity: index == 9)
                attemptedSlots[msn] = slot
                // The newest slot stays open: its segments are held.
                if index < Self.slotCount - 1 {
                    let sequence = try channel.append([.slot(slot)])
                    sequences.append((sequence, [.slot(slot)]))
                    acknowledgedSlots[msn] = slot
                } else {
                    attemptedSlots[msn] = nil
                }
                if let flushEvery, index % flushEvery == flushEvery - 1 { flushedSequence = try store.flush() }
            }
            return nil
        } catch {
            return error
        }
    }
}
