import LiveTimeline
import MediaProbe
import Persistence
import SharedBytes
import TestSupport
import Testing

@Suite("Store record coding", .offThePool)
struct StoreRecordCodingTests {
    static let segment = SegmentRecord(
        kind: .segment, msn: 1 << 40 | 12_345, programDateTimeMilliseconds: 1_795_000_000_123,
        durationMilliseconds: 2_002, discontinuity: true, startsWithKeyframe: true, container: .mpegTS,
        location: StoredSegment(chunk: 17, offset: 1 << 33 | 5, length: 188 * 1_000, crc: 0xDEAD_BEEF),
        initSectionVersion: 3, mediaEndTicks: 8_589_934_592 * 3 + 7, mediaTimescale: 90_000)
    static let gap = SegmentRecord(
        kind: .gap, msn: 99, programDateTimeMilliseconds: -5, durationMilliseconds: 1_000, discontinuity: false,
        startsWithKeyframe: false, container: .fragmentedMP4Segment, location: nil, initSectionVersion: nil,
        mediaEndTicks: nil, mediaTimescale: 48_000)
    static let slot = SlotRecord(
        msn: 1 << 40 | 77, programDateTimeMilliseconds: 1_795_000_000_000, durationMilliseconds: 2_000,
        discontinuitySequence: 1 << 35 | 9, discontinuity: true)

    @Test func segmentRecordsRoundTrip() {
        for record in [Self.segment, Self.gap] {
            let bytes = StoreRecordCoding.encode(record)
            #expect(bytes.count == 64)
            #expect(StoreRecordCoding.decodeSegment(bytes) == .valid(record))
        }
        var unpersisted = Self.gap
        unpersisted.kind = .unpersisted
        unpersisted.container = .adts
        unpersisted.initSectionVersion = 0
        #expect(StoreRecordCoding.decodeSegment(StoreRecordCoding.encode(unpersisted)) == .valid(unpersisted))
    }

    /// Kind 4: an empty cue segment the origin generated; no chunk bytes, the text is regenerated from the MPEGTS
    /// kept in `offset` and checked against the CRC (zlib's, the same as `WebVTTSegment.crc32`).
    @Test func synthesizedRecordsRoundTripAndTheirCRCIsTheStoresOwn() {
        let text = WebVTTSegment.empty(mpegts: 126_000)
        let record = SegmentRecord(
            kind: .synthesized, msn: 41, programDateTimeMilliseconds: 1_795_000_000_000, durationMilliseconds: 2_000,
            discontinuity: false, startsWithKeyframe: true, container: .webVTT,
            location: StoredSegment(
                chunk: 0, offset: 126_000, length: UInt32(text.count), crc: WebVTTSegment.crc32(text)),
            initSectionVersion: nil, mediaEndTicks: nil, mediaTimescale: 90_000)
        #expect(StoreRecordCoding.decodeSegment(StoreRecordCoding.encode(record)) == .valid(record))
        #expect(storeCRC32(text) == WebVTTSegment.crc32(text))
        #expect(record.hasBytes)
    }

    @Test func slotRecordsRoundTrip() {
        let bytes = StoreRecordCoding.encode(Self.slot)
        #expect(bytes.count == 32)
        #expect(StoreRecordCoding.decodeSlot(bytes) == .valid(Self.slot))
        var plain = Self.slot
        plain.discontinuity = false
        plain.discontinuitySequence = 0
        #expect(StoreRecordCoding.decodeSlot(StoreRecordCoding.encode(plain)) == .valid(plain))
    }

    @Test func everySingleBitFlipIsDetected() {
        for original in [StoreRecordCoding.encode(Self.segment), StoreRecordCoding.encode(Self.slot)] {
            for bit in 0..<(original.count * 8) {
                var flipped = original
                flipped[bit / 8] ^= 1 << UInt8(bit % 8)
                if original.count == 64 {
                    #expect(StoreRecordCoding.decodeSegment(flipped) == .corrupt, "bit \(bit)")
                } else {
                    #expect(StoreRecordCoding.decodeSlot(flipped) == .corrupt, "bit \(bit)")
                }
            }
        }
    }

    @Test func allZeroIsAbsent() {
        #expect(StoreRecordCoding.decodeSegment([UInt8](repeating: 0, count: 64)) == .absent)
        #expect(StoreRecordCoding.decodeSlot([UInt8](repeating: 0, count: 32)) == .absent)
        var almost = [UInt8](repeating: 0, count: 64)
        almost[63] = 1
        #expect(StoreRecordCoding.decodeSegment(almost) == .corrupt)
    }
}
