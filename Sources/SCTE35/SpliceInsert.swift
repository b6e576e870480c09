/// An SCTE-35 `splice_insert()` command (SCTE 35 section 9.7.3): the start (out of network) or end (back to the
/// network) of a break.
///
/// Encoded in program splice mode (`program_splice_flag` 1), never cancelling; all reserved bits are 1 and
/// `event_id_compliance_flag` is 1, as the standard asks.
public struct SpliceInsert: Sendable, Hashable {
    /// `splice_event_id`: identifies the break; the OUT and the IN of one break share it.
    public var eventId: UInt32
    /// `out_of_network_indicator`: true at the start of a break (cue-out), false at its end (cue-in).
    public var outOfNetwork: Bool
    /// `break_duration()` in 90 kHz ticks (33 bits); nil: `duration_flag` 0.
    public var breakDuration: UInt64?
    /// `auto_return` of the break duration.
    public var autoReturn: Bool
    /// `splice_time()` PTS in 90 kHz ticks (33 bits); nil: `splice_immediate_flag` 1.
    public var spliceTime: UInt64?
    /// `unique_program_id`.
    public var uniqueProgramId: UInt16
    /// `avail_num`.
    public var availNum: UInt8
    /// `avails_expected`.
    public var availsExpected: UInt8

    /// The `splice_command_type` of a splice_insert.
    public static let commandType: UInt8 = 0x05

    /// Creates a splice_insert.
    /// - Parameters:
    ///   - eventId: `splice_event_id`.
    ///   - outOfNetwork: true for a cue-out, false for a cue-in.
    ///   - breakDuration: break length in 90 kHz ticks, or nil for none.
    ///   - autoReturn: `auto_return` (only encoded with a break duration). Default: true.
    ///   - spliceTime: PTS of the splice point in 90 kHz ticks, or nil to splice immediately. Default: nil.
    ///   - uniqueProgramId: `unique_program_id`. Default: 0.
    ///   - availNum: `avail_num`. Default: 0.
    ///   - availsExpected: `avails_expected`. Default: 0.
    public init(
        eventId: UInt32, outOfNetwork: Bool, breakDuration: UInt64? = nil, autoReturn: Bool = true,
        spliceTime: UInt64? = nil, uniqueProgramId: UInt16 = 0, availNum: UInt8 = 0, availsExpected: UInt8 = 0
    ) {
        self.eventId = eventId
        self.outOfNetwork = outOfNetwork
        self.breakDuration = breakDuration
        self.autoReturn = autoReturn
        self.spliceTime = spliceTime
        self.uniqueProgramId = uniqueProgramId
        self.availNum = availNum
        self.availsExpected = availsExpected
    }

    /// Seconds as 90 kHz ticks, rounded to the nearest tick and clamped to 33 bits.
    public static func ticks(seconds: Double) -> UInt64 {
        guard seconds.isFinite, seconds > 0 else { return 0 }
        let ticks = (seconds * 90_000).rounded()
        return ticks >= 8_589_934_591 ? 8_589_934_591 : UInt64(ticks)
    }

    /// The `splice_insert()` bytes (the command only, without the section around it).
    public var commandBytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(20)
        Self.appendBigEndian(UInt64(eventId), byteCount: 4, to: &bytes)
        bytes.append(0x7F)  // splice_event_cancel_indicator 0, reserved 7 bits
        var flags: UInt8 = 0b0100_1111  // program_splice_flag 1, event_id_compliance_flag 1, reserved 3 bits
        if outOfNetwork { flags |= 0x80 }
        if breakDuration != nil { flags |= 0x20 }
        if spliceTime == nil { flags |= 0x10 }
        bytes.append(flags)
        if let spliceTime {
            // splice_time(): time_specified_flag 1, reserved 6 bits, pts_time 33 bits.
            bytes.append(0xFE | UInt8(truncatingIfNeeded: spliceTime >> 32 & 1))
            Self.appendBigEndian(spliceTime & 0xFFFF_FFFF, byteCount: 4, to: &bytes)
        }
        if let breakDuration {
            // break_duration(): auto_return 1 bit, reserved 6 bits, duration 33 bits.
            bytes.append((autoReturn ? 0x80 : 0) | 0x7E | UInt8(truncatingIfNeeded: breakDuration >> 32 & 1))
            Self.appendBigEndian(breakDuration & 0xFFFF_FFFF, byteCount: 4, to: &bytes)
        }
        Self.appendBigEndian(UInt64(uniqueProgramId), byteCount: 2, to: &bytes)
        bytes.append(availNum)
        bytes.append(availsExpected)
        return bytes
    }

    /// Reads a splice_insert command.
    /// - Parameter command: the `splice_command()` bytes of a section whose command type is 0x05.
    /// - Returns: the command; a cancelled event or component splice mode cannot be represented and throws.
    /// - Throws: ``SCTE35Error`` if the bytes are cut short or use a mode this type does not model.
    public init(command: [UInt8]) throws(SCTE35Error) {
        var reader = Reader(bytes: command)
        let eventId = UInt32(try reader.read(4))
        let cancel = try reader.read(1)
        guard cancel & 0x80 == 0 else { throw SCTE35Error("splice_insert: splice_event_cancel_indicator is set") }
        let flags = try reader.read(1)
        guard flags & 0x40 != 0 else { throw SCTE35Error("splice_insert: component splice mode is not supported") }
        var spliceTime: UInt64?
        if flags & 0x10 == 0 {
            let first = try reader.read(1)
            if first & 0x80 != 0 {
                spliceTime = (first & 1) << 32 | (try reader.read(4))
            }
        }
        var breakDuration: UInt64?
        var autoReturn = true
        if flags & 0x20 != 0 {
            let first = try reader.read(1)
            autoReturn = first & 0x80 != 0
            breakDuration = (first & 1) << 32 | (try reader.read(4))
        }
        let uniqueProgramId = UInt16(try reader.read(2))
        let availNum = UInt8(try reader.read(1))
        let availsExpected = UInt8(try reader.read(1))
        self.init(
            eventId: eventId, outOfNetwork: flags & 0x80 != 0, breakDuration: breakDuration, autoReturn: autoReturn,
            spliceTime: spliceTime, uniqueProgramId: uniqueProgramId, availNum: availNum,
            availsExpected: availsExpected)
    }

    static func appendBigEndian(_ value: UInt64, byteCount: Int, to bytes: inout [UInt8]) {
        for shift in stride(from: (byteCount - 1) * 8, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    /// A bounds-checked big-endian reader over a command's bytes.
    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        mutating func read(_ count: Int) throws(SCTE35Error) -> UInt64 {
            guard offset + count <= bytes.count else {
                throw SCTE35Error("splice_insert: cut short at byte \(offset) of \(bytes.count)")
            }
            var value: UInt64 = 0
            for byte in bytes[offset..<(offset + count)] { value = value << 8 | UInt64(byte) }
            offset += count
            return value
        }
    }
}
