public import MediaProbe

/// One ADTS frame of AAC silence for a given configuration: a raw_data_block whose channel elements carry no
/// spectral data (max_sfb 0), so every decoder outputs 1024 zero samples per channel.
///
/// Channel configurations 1...7 are supported (ISO/IEC 14496-3 1.6.3.4: SCE, CPE, SCE+CPE, ... up to
/// SCE+CPE+CPE+CPE+LFE), with AAC Main or LC (object types 1, 2), which share this syntax.
///
/// ```swift
/// let silence = try SilentAACFrame(audioObjectType: 2, samplingFrequencyIndex: 3, channelConfiguration: 2)
/// silence.bytes  // FF F1 4C 80 01 BF FC 21 00 03 20 64 1C: AAC-LC, 48 kHz, stereo
/// ```
public struct SilentAACFrame: Sendable, Hashable {
    /// MPEG-4 audio object type (1 Main, 2 LC).
    public let audioObjectType: Int
    /// ADTS sampling_frequency_index (3 = 48 kHz, 4 = 44.1 kHz, ...).
    public let samplingFrequencyIndex: Int
    /// channel_configuration, 1...7.
    public let channelConfiguration: Int
    /// The whole ADTS frame: 7-byte header (no CRC) and the raw data block.
    public let bytes: [UInt8]

    /// Sampling rate in Hz.
    public var sampleRate: Int { ADTSHeader.sampleRates[samplingFrequencyIndex] }

    /// A silent frame for this configuration.
    /// - Throws: `GapFillerError` for other object types, reserved frequency indexes, or channel configuration 0
    ///   (channels defined by a program config element) or above 7.
    public init(audioObjectType: Int, samplingFrequencyIndex: Int, channelConfiguration: Int) throws(GapFillerError) {
        guard audioObjectType == 1 || audioObjectType == 2 else {
            throw GapFillerError("AAC object type \(audioObjectType) is not supported (only Main and LC)")
        }
        guard (0..<ADTSHeader.sampleRates.count).contains(samplingFrequencyIndex) else {
            throw GapFillerError("AAC sampling_frequency_index \(samplingFrequencyIndex) is reserved")
        }
        guard let elements = Self.elements[channelConfiguration] else {
            throw GapFillerError("AAC channel_configuration \(channelConfiguration) is not supported (only 1...7)")
        }
        self.audioObjectType = audioObjectType
        self.samplingFrequencyIndex = samplingFrequencyIndex
        self.channelConfiguration = channelConfiguration
        let block = Self.rawDataBlock(elements)
        let length = 7 + block.count
        let header: [UInt8] = [
            0xFF,
            0xF1,  // syncword low bits, ID 0 (MPEG-4), layer 0, protection_absent 1
            UInt8((audioObjectType - 1) << 6 | samplingFrequencyIndex << 2 | channelConfiguration >> 2),
            UInt8((channelConfiguration & 3) << 6 | length >> 11),
            UInt8((length >> 3) & 0xFF),
            UInt8((length & 7) << 5 | 0x1F),  // + adts_buffer_fullness 0x7FF (variable rate)
            0xFC,  // buffer fullness low bits, number_of_raw_data_blocks_in_frame 0
        ]
        bytes = header + block
    }

    /// A silent frame with the configuration of an ADTS header read from the stream being continued.
    public init(matching header: ADTSHeader) throws(GapFillerError) {
        try self.init(
            audioObjectType: header.audioObjectType, samplingFrequencyIndex: header.samplingFrequencyIndex,
            channelConfiguration: header.channelConfiguration)
    }

    /// PTS offset of frame `index` after the first, in 90 kHz ticks (1024 samples per frame, rounded).
    public func ticks(ofFrame index: Int64) -> Int64 {
        let rate = Int64(sampleRate)
        return (index * 1024 * 90_000 + rate / 2) / rate
    }

    // MARK: - Bitstream

    private enum Element {
        case single, pair, lowFrequency
    }

    /// The syntactic elements of each channel configuration, in bitstream order.
    private static let elements: [Int: [Element]] = [
        1: [.single],
        2: [.pair],
        3: [.single, .pair],
        4: [.single, .pair, .single],
        5: [.single, .pair, .pair],
        6: [.single, .pair, .pair, .lowFrequency],
        7: [.single, .pair, .pair, .pair, .lowFrequency],
    ]

    /// global_gain of the silent channels: any value decodes to silence without spectral data.
    private static let globalGain: UInt32 = 100

    private static func rawDataBlock(_ elements: [Element]) -> [UInt8] {
        var writer = BitWriter()
        var tags: [Int: UInt32] = [:]  // element_instance_tag per element id
        for element in elements {
            let id: UInt32 =
                switch element {
                case .single: 0  // ID_SCE
                case .pair: 1  // ID_CPE
                case .lowFrequency: 3  // ID_LFE
                }
            let tag = tags[Int(id), default: 0]
            tags[Int(id)] = tag + 1
            writer.write(id, bits: 3)
            writer.write(tag, bits: 4)
            switch element {
            case .single, .lowFrequency:
                writer.write(globalGain, bits: 8)
                writeICSInfo(&writer)
                writeEmptyTools(&writer)
            case .pair:
                writer.write(1, bits: 1)  // common_window
                writeICSInfo(&writer)
                writer.write(0, bits: 2)  // ms_mask_present
                for _ in 0..<2 {
                    writer.write(globalGain, bits: 8)
                    writeEmptyTools(&writer)
                }
            }
        }
        writer.write(7, bits: 3)  // ID_END
        return writer.finish()
    }

    /// ics_info of a long window with no scale factor bands.
    private static func writeICSInfo(_ writer: inout BitWriter) {
        writer.write(0, bits: 1)  // ics_reserved_bit
        writer.write(0, bits: 2)  // window_sequence ONLY_LONG_SEQUENCE
        writer.write(0, bits: 1)  // window_shape
        writer.write(0, bits: 6)  // max_sfb: no section, scale factor or spectral data follows
        writer.write(0, bits: 1)  // predictor_data_present
    }

    /// pulse_data_present, tns_data_present, gain_control_data_present: all 0.
    private static func writeEmptyTools(_ writer: inout BitWriter) {
        writer.write(0, bits: 3)
    }
}

/// Writes bits most significant first; `finish` pads the last byte with zeros (byte_alignment).
private struct BitWriter {
    private var bytes: [UInt8] = []
    private var current: UInt8 = 0
    private var used = 0

    mutating func write(_ value: UInt32, bits: Int) {
        for shift in stride(from: bits - 1, through: 0, by: -1) {
            current = current << 1 | UInt8((value >> UInt32(shift)) & 1)
            used += 1
            if used == 8 {
                bytes.append(current)
                current = 0
                used = 0
            }
        }
    }

    mutating func finish() -> [UInt8] {
        if used > 0 { bytes.append(current << (8 - used)) }
        return bytes
    }
}
