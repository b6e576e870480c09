/// The caption track of the `captions` profile: CEA-608 on CC1 (field 1, data channel 1) in ATSC A/53 `GA94` SEI,
/// one byte pair per frame, as broadcast encoders send it.
///
/// Every second, the first frames load "HELLO" off screen (pop-on: resume caption loading, a preamble address code
/// for row 15, the text) and show it (end of caption); four fifths into the second it is erased. Control codes are
/// sent twice, as CEA-608 asks; every other frame carries padding (0x80 0x80).
public enum CEA608Captions {
    /// The text shown once a second.
    public static let text = "HELLO"

    /// The field-1 byte pair (without parity) of frame `index` of a second that has `framesPerSecond` frames.
    static func pair(frameInSecond index: Int, framesPerSecond: Int) -> (UInt8, UInt8) {
        let resumeCaptionLoading: (UInt8, UInt8) = (0x14, 0x20)
        let row15: (UInt8, UInt8) = (0x14, 0x70)
        let endOfCaption: (UInt8, UInt8) = (0x14, 0x2F)
        let eraseDisplayedMemory: (UInt8, UInt8) = (0x14, 0x2C)
        let characters = Array(text.utf8)
        let textPairs = stride(from: 0, to: characters.count, by: 2).map { start in
            (characters[start], start + 1 < characters.count ? characters[start + 1] : 0)
        }
        let script =
            [resumeCaptionLoading, resumeCaptionLoading, row15, row15] + textPairs + [endOfCaption, endOfCaption]
        if index < script.count { return script[index] }
        let erase = framesPerSecond * 4 / 5
        if index == erase || index == erase + 1 { return eraseDisplayedMemory }
        return (0, 0)
    }

    /// The SEI NAL unit (start code included) carrying the frame's caption data: one `user_data_registered_itu_t_t35`
    /// message with `cc_data` of two constructs, the field-1 pair and field-2 padding.
    static func seiNALUnit(frameInSecond index: Int, framesPerSecond: Int) -> [UInt8] {
        let (first, second) = pair(frameInSecond: index, framesPerSecond: framesPerSecond)
        let constructs: [UInt8] = [
            0xFC, withOddParity(first), withOddParity(second),  // cc_valid, cc_type 0: field 1
            0xFD, 0x80, 0x80,  // cc_valid, cc_type 1: field 2 padding
        ]
        // itu_t_t35_country_code (USA), provider (ATSC), user_identifier GA94, user_data_type_code 3 (cc_data),
        // process_cc_data_flag + cc_count, em_data, the constructs, marker_bits.
        let payload: [UInt8] =
            [0xB5, 0x00, 0x31, 0x47, 0x41, 0x39, 0x34, 0x03, 0xC0 | UInt8(constructs.count / 3), 0xFF] + constructs
            + [0xFF]
        let rbsp: [UInt8] = [0x06, 0x04, UInt8(payload.count)] + payload + [0x80]
        return [0x00, 0x00, 0x00, 0x01] + withEmulationPrevention(rbsp)
    }

    /// Sets bit 7 so that the byte has an odd number of one bits (CEA-608 parity).
    static func withOddParity(_ byte: UInt8) -> UInt8 {
        let low = byte & 0x7F
        return low.nonzeroBitCount % 2 == 0 ? low | 0x80 : low
    }

    /// Inserts 0x03 after every two zero bytes followed by a byte of 0...3 (H.264 7.4.1).
    static func withEmulationPrevention(_ rbsp: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(rbsp.count + 4)
        var zeros = 0
        for byte in rbsp {
            if zeros >= 2, byte <= 3 {
                output.append(3)
                zeros = 0
            }
            output.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return output
    }
}
