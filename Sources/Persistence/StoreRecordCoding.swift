import CZlib
public import LiveTimeline
import MediaProbe
public import SharedBytes

/// What is at a record's position in an index file.
public enum DecodedRecord<Record: Sendable & Hashable>: Sendable, Hashable {
    /// All zero: never written.
    case absent
    /// Written, but the CRC does not match (torn or damaged).
    case corrupt
    case valid(Record)

    /// The record if it is valid.
    public var record: Record? {
        if case .valid(let record) = self { return record }
        return nil
    }
}

/// CRC-32 (zlib's) of a byte range.
func storeCRC32(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
    guard let base = bytes.baseAddress, bytes.count > 0 else { return 0 }
    var crc = crc32(0, nil, 0)
    var offset = 0
    while offset < bytes.count {
        let piece = min(bytes.count - offset, Int(UInt32.max >> 1))
        crc = crc32(crc, base.assumingMemoryBound(to: UInt8.self) + offset, uInt(piece))
        offset += piece
    }
    return UInt32(truncatingIfNeeded: crc)
}

/// CRC-32 of a segment's bytes.
public func storeCRC32(_ bytes: SharedBytes) -> UInt32 {
    bytes.withUnsafeBytes { storeCRC32($0) }
}

/// The store's fixed-size, little-endian, CRC'd records: 64-byte segment records (one per MSN and rendition) and
/// 32-byte slot records (one per MSN and channel). All zero means absent; a record is valid only if its last four
/// bytes are the CRC-32 of the others.
public enum StoreRecordCoding {
    public static let segmentRecordSize = 64
    public static let slotRecordSize = 32
    /// Record format version in byte 3 of a segment record.
    static let segmentFormat: UInt8 = 1

    // Segment record flags (byte 1).
    private static let flagDiscontinuity: UInt8 = 1 << 0
    private static let flagKeyframe: UInt8 = 1 << 1
    private static let flagLocation: UInt8 = 1 << 2
    private static let flagInitSection: UInt8 = 1 << 3
    private static let flagMediaEnd: UInt8 = 1 << 4
    // Slot record flags (byte 24).
    private static let slotFlagDiscontinuity: UInt8 = 1 << 0
    /// Set by the store on a slot whose MSN does not follow the previous slot it wrote (or on the channel's first):
    /// the MSNs between were skipped on purpose (downtime), so a hole below this slot is not a torn write.
    static let slotFlagAfterSkip: UInt8 = 1 << 1

    /// Layout (offsets): kind 0, flags 1, container 2, format 3, EXTINF ms u32 4, MSN u64 8, PDT ms i64 16, chunk u32
    /// 24, length u32 28, offset u64 32, data CRC u32 40, init version i32 44, media end i64 48, media timescale u32
    /// 56, record CRC u32 60.
    public static func encode(_ record: SegmentRecord) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: segmentRecordSize)
        var flags: UInt8 = 0
        if record.discontinuity { flags |= flagDiscontinuity }
        if record.startsWithKeyframe { flags |= flagKeyframe }
        if record.location != nil { flags |= flagLocation }
        if record.initSectionVersion != nil { flags |= flagInitSection }
        if record.mediaEndTicks != nil { flags |= flagMediaEnd }
        bytes[0] = record.kind.rawValue
        bytes[1] = flags
        bytes[2] = containerCode(record.container)
        bytes[3] = segmentFormat
        put(UInt32(clamping: record.durationMilliseconds), into: &bytes, at: 4)
        put(record.msn, into: &bytes, at: 8)
        put(UInt64(bitPattern: record.programDateTimeMilliseconds), into: &bytes, at: 16)
        if let location = record.location {
            put(location.chunk, into: &bytes, at: 24)
            put(location.length, into: &bytes, at: 28)
            put(location.offset, into: &bytes, at: 32)
            put(location.crc, into: &bytes, at: 40)
        }
        put(UInt32(bitPattern: Int32(clamping: record.initSectionVersion ?? 0)), into: &bytes, at: 44)
        put(UInt64(bitPattern: record.mediaEndTicks ?? 0), into: &bytes, at: 48)
        put(UInt32(clamping: record.mediaTimescale), into: &bytes, at: 56)
        sealCRC(&bytes)
        return bytes
    }

    /// Decodes the 64 bytes at the start of `bytes`.
    public static func decodeSegment(_ bytes: UnsafeRawBufferPointer) -> DecodedRecord<SegmentRecord> {
        precondition(bytes.count >= segmentRecordSize)
        let record = UnsafeRawBufferPointer(rebasing: bytes[0..<segmentRecordSize])
        if isZero(record) { return .absent }
        guard crcMatches(record), record[3] == segmentFormat, let kind = SegmentRecord.Kind(rawValue: record[0]),
            let container = container(record[2])
        else { return .corrupt }
        let flags = record[1]
        let location: StoredSegment? =
            flags & flagLocation == 0
            ? nil
            : StoredSegment(
                chunk: get(record, 24), offset: get(record, 32), length: get(record, 28), crc: get(record, 40))
        let initVersion: UInt32 = get(record, 44)
        let mediaEnd: UInt64 = get(record, 48)
        let timescale: UInt32 = get(record, 56)
        let duration: UInt32 = get(record, 4)
        let pdt: UInt64 = get(record, 16)
        return .valid(
            SegmentRecord(
                kind: kind, msn: get(record, 8), programDateTimeMilliseconds: Int64(bitPattern: pdt),
                durationMilliseconds: Int64(duration), discontinuity: flags & flagDiscontinuity != 0,
                startsWithKeyframe: flags & flagKeyframe != 0, container: container, location: location,
                initSectionVersion: flags & flagInitSection == 0 ? nil : Int(Int32(bitPattern: initVersion)),
                mediaEndTicks: flags & flagMediaEnd == 0 ? nil : Int64(bitPattern: mediaEnd),
                mediaTimescale: Int64(timescale)))
    }

    public static func decodeSegment(_ bytes: [UInt8]) -> DecodedRecord<SegmentRecord> {
        bytes.withUnsafeBytes { decodeSegment($0) }
    }

    /// Layout (offsets): MSN u64 0, PDT ms i64 8, duration ms u32 16, DSN low 32 bits 20, flags 24, DSN bits 32-55
    /// 25, record CRC u32 28.
    public static func encode(_ slot: SlotRecord) -> [UInt8] { encode(slot, afterSkip: false) }

    static func encode(_ slot: SlotRecord, afterSkip: Bool) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: slotRecordSize)
        put(slot.msn, into: &bytes, at: 0)
        put(UInt64(bitPattern: slot.programDateTimeMilliseconds), into: &bytes, at: 8)
        put(UInt32(clamping: slot.durationMilliseconds), into: &bytes, at: 16)
        let dsn = min(slot.discontinuitySequence, (1 << 56) - 1)
        put(UInt32(truncatingIfNeeded: dsn), into: &bytes, at: 20)
        bytes[24] = (slot.discontinuity ? slotFlagDiscontinuity : 0) | (afterSkip ? slotFlagAfterSkip : 0)
        bytes[25] = UInt8(truncatingIfNeeded: dsn >> 32)
        bytes[26] = UInt8(truncatingIfNeeded: dsn >> 40)
        bytes[27] = UInt8(truncatingIfNeeded: dsn >> 48)
        sealCRC(&bytes)
        return bytes
    }

    public static func decodeSlot(_ bytes: UnsafeRawBufferPointer) -> DecodedRecord<SlotRecord> {
        decodeSlotWithFlags(bytes).map { $0.slot }
    }

    public static func decodeSlot(_ bytes: [UInt8]) -> DecodedRecord<SlotRecord> {
        bytes.withUnsafeBytes { decodeSlot($0) }
    }

    /// The slot and whether the store marked it as following skipped MSNs.
    static func decodeSlotWithFlags(_ bytes: UnsafeRawBufferPointer) -> DecodedRecord<StoredSlot> {
        precondition(bytes.count >= slotRecordSize)
        let record = UnsafeRawBufferPointer(rebasing: bytes[0..<slotRecordSize])
        if isZero(record) { return .absent }
        guard crcMatches(record), record[24] & ~(slotFlagDiscontinuity | slotFlagAfterSkip) == 0 else {
            return .corrupt
        }
        let low: UInt32 = get(record, 20)
        let dsn = UInt64(low) | UInt64(record[25]) << 32 | UInt64(record[26]) << 40 | UInt64(record[27]) << 48
        let pdt: UInt64 = get(record, 8)
        let duration: UInt32 = get(record, 16)
        let slot = SlotRecord(
            msn: get(record, 0), programDateTimeMilliseconds: Int64(bitPattern: pdt),
            durationMilliseconds: Int64(duration), discontinuitySequence: dsn,
            discontinuity: record[24] & slotFlagDiscontinuity != 0)
        return .valid(StoredSlot(slot: slot, afterSkip: record[24] & slotFlagAfterSkip != 0))
    }

    static func containerCode(_ container: MediaContainer) -> UInt8 {
        switch container {
        case .mpegTS: 1
        case .fragmentedMP4Init: 2
        case .fragmentedMP4Segment: 3
        case .adts: 4
        case .webVTT: 5
        }
    }

    static func container(_ code: UInt8) -> MediaContainer? {
        switch code {
        case 1: .mpegTS
        case 2: .fragmentedMP4Init
        case 3: .fragmentedMP4Segment
        case 4: .adts
        case 5: .webVTT
        default: nil
        }
    }

    /// True if every byte is zero (records are multiples of 8 bytes).
    private static func isZero(_ record: UnsafeRawBufferPointer) -> Bool {
        var combined: UInt64 = 0
        for offset in stride(from: 0, to: record.count, by: 8) {
            combined |= record.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        }
        return combined == 0
    }

    private static func sealCRC(_ bytes: inout [UInt8]) {
        let count = bytes.count
        let crc = bytes.withUnsafeBytes { storeCRC32(UnsafeRawBufferPointer(rebasing: $0[0..<(count - 4)])) }
        put(crc, into: &bytes, at: count - 4)
    }

    private static func crcMatches(_ record: UnsafeRawBufferPointer) -> Bool {
        let stored: UInt32 = get(record, record.count - 4)
        return storeCRC32(UnsafeRawBufferPointer(rebasing: record[0..<(record.count - 4)])) == stored
    }

    private static func put<T: FixedWidthInteger>(_ value: T, into bytes: inout [UInt8], at offset: Int) {
        for index in 0..<(T.bitWidth / 8) {
            bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (index * 8))
        }
    }

    private static func get<T: FixedWidthInteger>(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> T {
        var value: T = 0
        for index in 0..<(T.bitWidth / 8) {
            value |= T(truncatingIfNeeded: bytes[offset + index]) << (index * 8)
        }
        return value
    }
}

/// A slot record with the store's own flag.
struct StoredSlot: Sendable, Hashable {
    var slot: SlotRecord
    var afterSkip: Bool
}

extension DecodedRecord {
    func map<Other>(_ transform: (Record) -> Other) -> DecodedRecord<Other> {
        switch self {
        case .absent: .absent
        case .corrupt: .corrupt
        case .valid(let record): .valid(transform(record))
        }
    }
}
