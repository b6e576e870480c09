/// Finds the CEA-608/708 caption channels carried in H.264/HEVC SEI (ATSC A/53 part 4, `GA94` user data in
/// `user_data_registered_itu_t_t35`, the form ffmpeg, x264 and broadcast encoders write).
///
/// Feed it the access units of a segment in decoding order; it reads only the prefix SEI NAL units before each access
/// unit's first slice, and stops after ``maximumSEIUnits`` of them, so its cost is bounded whatever the segment holds.
///
/// - CEA-608 (`cc_type` 0 = field 1, 1 = field 2): the data channel comes from the control codes (first byte 0x10-0x17
///   channel 1, 0x18-0x1F channel 2, parity bit stripped); text with no control code before it counts for channel 1.
///   Field 1 gives `CC1`/`CC2`, field 2 `CC3`/`CC4`. Padding (0x80 0x80) and XDS name no channel.
/// - CEA-708 (`cc_type` 3 starts a DTVCC packet, 2 continues it): each non-empty service block names `SERVICEn`.
///
/// The same scan reads alternative_transfer_characteristics (payload type 147 in H.264 and HEVC): the transfer an
/// HDR-capable decoder is to use instead of the VUI's, HLG (18) over BT.2020's SDR-compatible 14 as HLG encoders
/// write it (``preferredTransferCharacteristics``).
struct CaptionSEI {
    /// The most SEI NAL units read per segment.
    static let maximumSEIUnits = 64
    /// The largest DTVCC packet (CEA-708 5.: packet_size_code 0 means 128 bytes).
    private static let maximumPacketSize = 128

    /// SEI NAL units read so far.
    private(set) var seiUnitsRead = 0
    /// preferred_transfer_characteristics of the last alternative_transfer_characteristics SEI read.
    private(set) var preferredTransferCharacteristics: UInt8?
    private var found: Set<ClosedCaptionChannel> = []
    /// The CEA-608 data channel (1 or 2) the last control code of each field selected; 0 while XDS or text mode
    /// data runs; nil before any control code.
    private var currentChannel: [Int?] = [nil, nil]
    /// The DTVCC packet being assembled from `cc_type` 3 and 2 pairs.
    private var packet: [UInt8] = []

    /// True once the SEI budget is spent; further access units are not read.
    var isExhausted: Bool { seiUnitsRead >= Self.maximumSEIUnits }

    /// The channels found, sorted (CC1...CC4, then SERVICE1...), after completing a pending DTVCC packet.
    mutating func finish() -> [ClosedCaptionChannel] {
        finishPacket()
        return found.sorted()
    }

    /// Reads the SEI NAL units of one Annex B access unit (start codes) up to its first slice.
    /// - Returns: whether the first slice is a random access picture (IDR / IRAP), nil when there is no slice.
    @discardableResult
    mutating func consumeAnnexB(_ bytes: UnsafeRawBufferPointer, hevc: Bool) -> Bool? {
        var start = Self.nextStartCode(in: bytes, from: 0)
        while let unitStart = start, unitStart < bytes.count {
            let next = Self.nextStartCode(in: bytes, from: unitStart)
            var end = next.map { $0 - 3 } ?? bytes.count
            while end > unitStart, bytes[end - 1] == 0, next != nil { end -= 1 }
            if let keyframe = consumeUnit(UnsafeRawBufferPointer(rebasing: bytes[unitStart..<end]), hevc: hevc) {
                return keyframe
            }
            start = next
        }
        return nil
    }

    /// Reads the SEI NAL units of one length-prefixed sample (avcC/hvcC form) up to its first slice.
    /// - Parameter lengthSize: bytes of each NAL unit's length field (1, 2 or 4).
    /// - Returns: whether the first slice is a random access picture, nil when there is no slice.
    @discardableResult
    mutating func consumeLengthPrefixed(_ bytes: UnsafeRawBufferPointer, lengthSize: Int, hevc: Bool) -> Bool? {
        var offset = 0
        while offset + lengthSize <= bytes.count {
            var length = 0
            for index in offset..<(offset + lengthSize) { length = length << 8 | Int(bytes[index]) }
            offset += lengthSize
            guard length > 0, length <= bytes.count - offset else { return nil }
            let unit = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)])
            if let keyframe = consumeUnit(unit, hevc: hevc) { return keyframe }
            offset += length
        }
        return nil
    }

    /// One NAL unit (header included): SEI is read, a slice ends the access unit's prefix.
    /// - Returns: nil to go on, or whether the slice is a random access picture.
    private mutating func consumeUnit(_ unit: UnsafeRawBufferPointer, hevc: Bool) -> Bool? {
        guard let header = unit.first else { return nil }
        if hevc {
            let type = NALUnits.hevcType(header)
            if type < 32 { return NALUnits.hevcIRAP.contains(type) }
            if type == 39, unit.count > 2 { consumeSEI(NALUnits.rbsp(unit), headerSize: 2) }
        } else {
            let type = NALUnits.h264Type(header)
            if (1...5).contains(type) { return type == NALUnits.h264IDR }
            if type == 6 { consumeSEI(NALUnits.rbsp(unit), headerSize: 1) }
        }
        return nil
    }

    /// The sei_message()s of one SEI RBSP (H.264 7.3.2.3, HEVC 7.3.5): payloadType and payloadSize each as a run of
    /// 0xFF bytes plus a last byte.
    mutating func consumeSEI(_ rbsp: [UInt8], headerSize: Int) {
        guard !isExhausted else { return }
        seiUnitsRead += 1
        var offset = headerSize
        func readVariable() -> Int? {
            var value = 0
            while offset < rbsp.count {
                let byte = rbsp[offset]
                offset += 1
                value += Int(byte)
                if byte != 0xFF { return value }
            }
            return nil
        }
        // A message needs at least a type and a size byte; a lone 0x80 is rbsp_trailing_bits.
        while rbsp.count - offset >= 2 {
            guard let type = readVariable(), let size = readVariable(), size <= rbsp.count - offset else { return }
            if type == 4 { consumeT35(rbsp[offset..<(offset + size)]) }
            // alternative_transfer_characteristics: preferred_transfer_characteristics u(8); an empty one is ignored.
            if type == 147, size >= 1 { preferredTransferCharacteristics = rbsp[offset] }
            offset += size
        }
    }

    /// `user_data_registered_itu_t_t35`: country 0xB5 (USA), provider 0x0031 (ATSC), `GA94`, type 3 = cc_data().
    private mutating func consumeT35(_ payload: ArraySlice<UInt8>) {
        let prefix: [UInt8] = [0xB5, 0x00, 0x31, 0x47, 0x41, 0x39, 0x34, 0x03]
        guard payload.count >= prefix.count + 2, payload.prefix(prefix.count).elementsEqual(prefix) else { return }
        let flags = payload[payload.startIndex + 8]
        guard flags & 0x40 != 0 else { return }  // process_cc_data_flag
        let count = Int(flags & 0x1F)
        var offset = payload.startIndex + 10  // after the flags and em_data bytes
        for _ in 0..<count {
            guard offset + 3 <= payload.endIndex else { return }
            consumePair(payload[offset], payload[offset + 1], payload[offset + 2])
            offset += 3
        }
    }

    /// One cc_data construct: `11111 cc_valid cc_type` then two data bytes.
    private mutating func consumePair(_ marker: UInt8, _ first: UInt8, _ second: UInt8) {
        guard marker & 0x04 != 0 else { return }  // cc_valid
        switch marker & 0x03 {
        case 0, 1: consume608(field: Int(marker & 0x03), first, second)
        case 3:
            finishPacket()
            packet = [first, second]
        default:
            guard !packet.isEmpty, packet.count < Self.maximumPacketSize else { return }
            packet.append(first)
            packet.append(second)
        }
    }

    /// A CEA-608 byte pair of field 0 (field 1) or 1 (field 2).
    private mutating func consume608(field: Int, _ first: UInt8, _ second: UInt8) {
        guard first.nonzeroBitCount % 2 == 1 else { return }  // odd parity fails: the decoder drops the pair
        let code = first & 0x7F
        let data = second & 0x7F
        switch code {
        case 0x10...0x1F:
            let channel = code & 0x08 == 0 ? 1 : 2
            // 0x14/0x1C (field 1) or 0x15/0x1D (field 2) with 0x2A/0x2B: text restart / resume text display,
            // the Text mode service, which is no caption channel.
            if code & 0x06 == 0x04, data == 0x2A || data == 0x2B {
                currentChannel[field] = 0
                return
            }
            currentChannel[field] = channel
            found.insert(.cea608(field * 2 + channel))
        case 0x01...0x0F:
            currentChannel[field] = 0  // XDS (field 2)
        default:
            guard code >= 0x20 || data >= 0x20 else { return }  // padding / nulls
            switch currentChannel[field] {
            case nil: found.insert(.cea608(field * 2 + 1))
            case let channel?: if channel > 0 { found.insert(.cea608(field * 2 + channel)) }
            }
        }
    }

    /// A DTVCC packet (CEA-708 6.): a header byte (sequence, packet_size_code), then service blocks, each with a
    /// header (service_number 3 bits, block_size 5 bits; service 7 takes an extended service number byte).
    private mutating func finishPacket() {
        defer { packet.removeAll(keepingCapacity: true) }
        guard let header = packet.first else { return }
        let sizeCode = Int(header & 0x3F)
        let end = min(packet.count, sizeCode == 0 ? Self.maximumPacketSize : sizeCode * 2)
        var offset = 1
        while offset < end {
            let blockHeader = packet[offset]
            offset += 1
            var service = Int(blockHeader >> 5)
            let blockSize = Int(blockHeader & 0x1F)
            if service == 0 { return }  // null block: the rest is padding
            if service == 7 {
                guard offset < end else { return }
                service = Int(packet[offset] & 0x3F)
                offset += 1
            }
            guard blockSize > 0, offset + blockSize <= end else { return }
            if (1...63).contains(service) { found.insert(.cea708(service: service)) }
            offset += blockSize
        }
    }

    /// The offset just past the next 00 00 01 at or after `from`, nil when there is none.
    private static func nextStartCode(in bytes: UnsafeRawBufferPointer, from: Int) -> Int? {
        var index = from
        while index + 2 < bytes.count {
            if bytes[index + 2] > 1 {
                index += 3
            } else if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1 {
                return index + 3
            } else {
                index += 1
            }
        }
        return nil
    }
}
