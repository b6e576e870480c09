/// What one splice_info_section read from a stream asks for, as far as the origin acts on it: a splice_insert, or one
/// segmentation_descriptor of a time_signal (SCTE 35 sections 9.7.3, 9.7.4 and 10.3.3).
///
/// ``SpliceInfoSection/cues()`` makes them; a splice_null, a time_signal without segmentation descriptors and the
/// other commands (splice_schedule, bandwidth_reservation, private_command) make none.
public struct SpliceCue: Sendable, Hashable {
    /// What the cue does to the break it names.
    public enum Kind: Sendable, Hashable {
        /// A break starts (splice_insert out_of_network 1; a segmentation type that starts an advertisement,
        /// placement opportunity, promo or break).
        case out
        /// A break ends (splice_insert out_of_network 0; the matching end type).
        case `in`
        /// Anything else worth a marker: program and chapter start or end, and the other segmentation types.
        case command
    }

    /// out, in or command; for a cancel, what the cancelled event was (`.out` for a splice_insert).
    public var kind: Kind
    /// splice_event_id (splice_insert) or segmentation_event_id (time_signal).
    public var eventId: UInt32
    /// splice_event_cancel_indicator / segmentation_event_cancel_indicator: the event named is withdrawn.
    public var cancelled: Bool
    /// The splice time with pts_adjustment added, modulo 2^33 (90 kHz); nil: immediate (splice_immediate_flag, or a
    /// time_signal with time_specified_flag 0).
    public var spliceTime: UInt64?
    /// break_duration or segmentation_duration, in 90 kHz ticks; nil when the cue gives none.
    public var duration: UInt64?
    /// splice_insert: the break ends by itself after ``duration`` (auto_return); false for segmentation.
    public var autoReturn: Bool
    /// time_signal: the segmentation_type_id, e.g. 0x30 provider advertisement start; nil for a splice_insert.
    public var segmentationTypeId: UInt8?
    /// time_signal: segmentation_upid_type and the upid's bytes as sent (not interpreted).
    public var upidType: UInt8?
    public var upid: [UInt8]

    public init(
        kind: Kind, eventId: UInt32, cancelled: Bool = false, spliceTime: UInt64? = nil, duration: UInt64? = nil,
        autoReturn: Bool = false, segmentationTypeId: UInt8? = nil, upidType: UInt8? = nil, upid: [UInt8] = []
    ) {
        self.kind = kind
        self.eventId = eventId
        self.cancelled = cancelled
        self.spliceTime = spliceTime
        self.duration = duration
        self.autoReturn = autoReturn
        self.segmentationTypeId = segmentationTypeId
        self.upidType = upidType
        self.upid = upid
    }

    /// `splice_command_type` of a time_signal.
    public static let timeSignalType: UInt8 = 0x06
    /// `splice_descriptor_tag` of a segmentation_descriptor, and its identifier `CUEI`.
    static let segmentationTag: UInt8 = 0x02
    static let cueIdentifier: UInt32 = 0x4355_4549

    /// Segmentation types that start a break, each ended by the next type (type + 1): break (0x22), provider and
    /// distributor advertisement (0x30, 0x32), placement opportunity (0x34, 0x36), overlay placement opportunity
    /// (0x38, 0x3A), promo (0x3C, 0x3E), ad block (0x44, 0x46).
    public static let breakStartTypes: Set<UInt8> = [0x22, 0x30, 0x32, 0x34, 0x36, 0x38, 0x3A, 0x3C, 0x3E, 0x44, 0x46]

    /// What a segmentation type does: `.out` for ``breakStartTypes``, `.in` for their ends, `.command` otherwise.
    public static func kind(segmentationTypeId type: UInt8) -> Kind {
        if breakStartTypes.contains(type) { return .out }
        if type > 0, breakStartTypes.contains(type - 1) { return .in }
        return .command
    }

    /// Reads the splice_insert command bytes, cancelled events and component mode included (the first component's
    /// time stands for the splice).
    static func spliceInsert(_ command: [UInt8], ptsAdjustment: UInt64) throws(SCTE35Error) -> SpliceCue {
        var reader = BitReader(command, context: "splice_insert")
        let eventId = UInt32(try reader.bits(32))
        let cancelled = try reader.bits(1) == 1
        try reader.skip(7)
        guard !cancelled else { return SpliceCue(kind: .out, eventId: eventId, cancelled: true) }
        let outOfNetwork = try reader.bits(1) == 1
        let programSplice = try reader.bits(1) == 1
        let hasDuration = try reader.bits(1) == 1
        let immediate = try reader.bits(1) == 1
        try reader.skip(4)  // event_id_compliance_flag, reserved
        var spliceTime: UInt64?
        if programSplice {
            if !immediate { spliceTime = try reader.spliceTime() }
        } else {
            let components = try reader.bits(8)
            for index in 0..<components {
                try reader.skip(8)  // component_tag
                if !immediate {
                    let time = try reader.spliceTime()
                    if index == 0 { spliceTime = time }
                }
            }
        }
        var duration: UInt64?
        var autoReturn = false
        if hasDuration {
            autoReturn = try reader.bits(1) == 1
            try reader.skip(6)
            duration = try reader.bits(33)
        }
        try reader.skip(32)  // unique_program_id, avail_num, avails_expected
        return SpliceCue(
            kind: outOfNetwork ? .out : .in, eventId: eventId,
            spliceTime: spliceTime.map { ($0 &+ ptsAdjustment) & Self.mask }, duration: duration,
            autoReturn: autoReturn)
    }

    /// Reads a segmentation_descriptor's body (after tag and length).
    static func segmentation(
        _ body: ArraySlice<UInt8>, spliceTime: UInt64?
    ) throws(SCTE35Error) -> SpliceCue? {
        var reader = BitReader(Array(body), context: "segmentation_descriptor")
        guard try reader.bits(32) == cueIdentifier else { return nil }
        let eventId = UInt32(try reader.bits(32))
        let cancelled = try reader.bits(1) == 1
        try reader.skip(7)
        guard !cancelled else { return SpliceCue(kind: .out, eventId: eventId, cancelled: true, spliceTime: spliceTime) }
        let programSegmentation = try reader.bits(1) == 1
        let hasDuration = try reader.bits(1) == 1
        try reader.skip(6)  // delivery_not_restricted_flag and the restrictions or reserved bits
        if !programSegmentation {
            let components = try reader.bits(8)
            try reader.skip(Int(components) * 48)  // component_tag, reserved, pts_offset
        }
        let duration = hasDuration ? try reader.bits(40) : nil
        let upidType = UInt8(try reader.bits(8))
        let upidLength = Int(try reader.bits(8))
        let upid = try reader.bytes(upidLength)
        let type = UInt8(try reader.bits(8))
        try reader.skip(16)  // segment_num, segments_expected; sub_segment fields (optional) are left unread
        return SpliceCue(
            kind: kind(segmentationTypeId: type), eventId: eventId, spliceTime: spliceTime,
            duration: duration.map { min($0, Self.mask) }, segmentationTypeId: type, upidType: upidType, upid: upid)
    }

    static let mask: UInt64 = (1 << 33) - 1
}

extension SpliceInfoSection {
    /// The cues this section carries: one for a splice_insert, one per segmentation_descriptor of a time_signal,
    /// none for splice_null, other commands and encrypted sections.
    /// - Throws: ``SCTE35Error`` when the command or a segmentation descriptor is cut short or overruns its length.
    public func cues() throws(SCTE35Error) -> [SpliceCue] {
        guard !encrypted else { return [] }
        switch commandType {
        case SpliceInsert.commandType:
            return [try SpliceCue.spliceInsert(command, ptsAdjustment: ptsAdjustment)]
        case SpliceCue.timeSignalType:
            var reader = BitReader(command, context: "time_signal")
            let time = try reader.spliceTime().map { ($0 &+ ptsAdjustment) & SpliceCue.mask }
            var cues: [SpliceCue] = []
            var offset = 0
            while offset < descriptors.count {
                guard offset + 2 <= descriptors.count else {
                    throw SCTE35Error("descriptor loop: a descriptor header is cut short at byte \(offset)")
                }
                let tag = descriptors[offset]
                let length = Int(descriptors[offset + 1])
                let end = offset + 2 + length
                guard end <= descriptors.count else {
                    throw SCTE35Error(
                        "descriptor loop: descriptor 0x\(String(tag, radix: 16)) of \(length) bytes runs past the "
                            + "loop's end")
                }
                if tag == SpliceCue.segmentationTag,
                    let cue = try SpliceCue.segmentation(descriptors[(offset + 2)..<end], spliceTime: time)
                {
                    cues.append(cue)
                }
                offset = end
            }
            return cues
        default:
            return []
        }
    }
}

/// A bounds-checked reader of big-endian bit fields.
struct BitReader {
    let bytes: [UInt8]
    let context: String
    var bit = 0

    init(_ bytes: [UInt8], context: String) {
        self.bytes = bytes
        self.context = context
    }

    mutating func bits(_ count: Int) throws(SCTE35Error) -> UInt64 {
        guard count <= 64, bit + count <= bytes.count * 8 else {
            throw SCTE35Error("\(context): cut short at byte \(bit / 8) of \(bytes.count)")
        }
        var value: UInt64 = 0
        for _ in 0..<count {
            value = value << 1 | UInt64(bytes[bit >> 3] >> (7 - UInt8(bit & 7)) & 1)
            bit += 1
        }
        return value
    }

    mutating func skip(_ count: Int) throws(SCTE35Error) {
        guard count >= 0, bit + count <= bytes.count * 8 else {
            throw SCTE35Error("\(context): cut short at byte \(bit / 8) of \(bytes.count)")
        }
        bit += count
    }

    mutating func bytes(_ count: Int) throws(SCTE35Error) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count)
        for _ in 0..<count { out.append(UInt8(try bits(8))) }
        return out
    }

    /// `splice_time()`: the 33-bit pts_time, nil when time_specified_flag is 0.
    mutating func spliceTime() throws(SCTE35Error) -> UInt64? {
        guard try bits(1) == 1 else {
            try skip(7)
            return nil
        }
        try skip(6)
        return try bits(33)
    }
}
