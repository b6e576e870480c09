/// Reassembles the PSI sections (ISO/IEC 13818-1 2.4.4) carried on one PID from its packets' payloads: a packet with
/// payload_unit_start_indicator has a pointer_field, whose bytes end the section being assembled, then new sections;
/// a section may span any number of packets and several may share one; 0xFF after a section is stuffing up to the
/// next payload_unit_start. The sections are handed out as sent (table_id ... CRC_32), not validated: the reader
/// checks what it needs (`crcIsValid`).
///
/// Bounded: a section is at most `maximumSectionBytes`; a longer one is dropped and counted. Lengths are read from
/// the stream, so the arithmetic on them is checked (a hostile packet can make a section be dropped, never a trap).
struct PSISectionAssembler: Sendable {
    /// Bytes of the section(s) being assembled; nil: waiting for a payload_unit_start.
    private var pending: [UInt8]?
    /// Sections dropped: too long, or a pointer_field past the payload.
    private(set) var dropped = 0

    /// Largest section: 3 header bytes + a 12-bit section_length.
    static let maximumSectionBytes = 3 + 0x0FFF

    init() {}

    /// Forgets a section in progress (packets of the PID were lost).
    mutating func reset() { pending = nil }

    /// The sections dropped since the last call.
    mutating func takeDropped() -> Int {
        defer { dropped = 0 }
        return dropped
    }

    /// Takes one transport packet's payload on the PID; calls `body` with each section that ends in it, in order.
    mutating func consume(
        _ payload: UnsafeRawBufferPointer, unitStart: Bool, _ body: ([UInt8]) -> Void
    ) {
        guard !payload.isEmpty else { return }
        var start = 0
        if unitStart {
            let pointer = Int(payload[0])
            let (sectionStart, overflow) = pointer.addingReportingOverflow(1)
            guard !overflow, sectionStart <= payload.count else {
                pending = nil
                dropped += 1
                return
            }
            if pending != nil {
                pending!.append(contentsOf: payload[1..<sectionStart])
                drain(body)
                // What is left of the old section's bytes is cut short by the new start.
                if let left = pending, !left.isEmpty { dropped += 1 }
            }
            pending = []
            start = sectionStart
        }
        guard pending != nil else { return }
        pending!.append(contentsOf: payload[start...])
        drain(body)
    }

    /// Hands out the whole sections at the start of the buffer; stops at stuffing or a partial section.
    private mutating func drain(_ body: ([UInt8]) -> Void) {
        while let buffer = pending {
            guard let first = buffer.first else { return }
            guard first != 0xFF else {
                pending = nil  // stuffing up to the next payload_unit_start
                return
            }
            guard buffer.count >= 3 else { return }
            let length = 3 + (Int(buffer[1] & 0x0F) << 8 | Int(buffer[2]))
            guard buffer.count >= length else {
                if buffer.count > Self.maximumSectionBytes {
                    pending = nil
                    dropped += 1
                }
                return
            }
            body(Array(buffer[..<length]))
            pending = Array(buffer[length...])
        }
    }

    /// Whether a long-form section's (section_syntax_indicator set) CRC_32 matches its bytes: CRC-32/MPEG-2 over the
    /// whole section, CRC included, is 0.
    static func crcIsValid(_ section: [UInt8]) -> Bool {
        guard section.count >= 3 + 4 else { return false }
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in section {
            crc ^= UInt32(byte) << 24
            for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
        }
        return crc == 0
    }
}
