import Foundation
import GapFiller
import MediaProbe
import TestSupport
import Testing

@Suite("Silent AAC frames")
struct SilentAACFrameTests {
    @Test func stereoAt48kHzIsTheKnownThirteenBytes() throws {
        let frame = try SilentAACFrame(audioObjectType: 2, samplingFrequencyIndex: 3, channelConfiguration: 2)
        #expect(frame.bytes == [0xFF, 0xF1, 0x4C, 0x80, 0x01, 0xBF, 0xFC, 0x21, 0x00, 0x03, 0x20, 0x64, 0x1C])
        #expect(frame.sampleRate == 48_000)
    }

    @Test func monoAt44100HzIsOneSingleChannelElement() throws {
        let frame = try SilentAACFrame(audioObjectType: 2, samplingFrequencyIndex: 4, channelConfiguration: 1)
        // SCE tag 0, global_gain 100, ics_info all 0, no tools, END: 000 0000 01100100 00000000000 000 111.
        #expect(frame.bytes == [0xFF, 0xF1, 0x50, 0x40, 0x01, 0x7F, 0xFC, 0x00, 0xC8, 0x00, 0x07])
        #expect(frame.ticks(ofFrame: 1) == 2090)  // 1024 / 44100 s = 2089.8 ticks
        #expect(frame.ticks(ofFrame: 441) == 921_600)  // exactly 10.24 s
    }

    @Test func headerReadsBackAsTheConfiguration() throws {
        for configuration in 1...7 {
            let frame = try SilentAACFrame(
                audioObjectType: 2, samplingFrequencyIndex: 6, channelConfiguration: configuration)
            let header = try frame.bytes.withUnsafeBytes { bytes throws(ProbeError) in try ADTSHeader(bytes, at: 0) }
            #expect(header.channelConfiguration == configuration)
            #expect(header.sampleRate == 24_000)
            #expect(header.audioObjectType == 2)
            #expect(header.frameLength == frame.bytes.count)
            #expect(header.rawDataBlocks == 1)
        }
    }

    @Test func unsupportedConfigurationsThrow() {
        #expect(throws: GapFillerError.self) {
            try SilentAACFrame(audioObjectType: 5, samplingFrequencyIndex: 3, channelConfiguration: 2)
        }
        #expect(throws: GapFillerError.self) {
            try SilentAACFrame(audioObjectType: 2, samplingFrequencyIndex: 3, channelConfiguration: 0)
        }
        #expect(throws: GapFillerError.self) {
            try SilentAACFrame(audioObjectType: 2, samplingFrequencyIndex: 13, channelConfiguration: 2)
        }
    }

    /// ffmpeg decodes 50 frames of every channel configuration to exactly 50 x 1024 zero samples per channel.
    @Test(
        .enabled(if: ChildProcess.ffmpegInstalled, "ffmpeg not installed"), .tags(.endToEnd),
        arguments: [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 8)])
    func ffmpegDecodesSilence(configuration: Int, channels: Int) async throws {
        let directory = try TemporaryDirectory.make("GapFillerTests")
        defer { try? FileManager.default.removeItem(at: directory) }
        for (objectType, frequency) in [(2, 3), (1, 4)] {
            let frame = try SilentAACFrame(
                audioObjectType: objectType, samplingFrequencyIndex: frequency, channelConfiguration: configuration)
            try Data(Array(repeatElement(frame.bytes, count: 50).joined()))
                .write(to: directory.appendingPathComponent("silence.aac"))
            let decoded = try await ChildProcess.run(
                "ffmpeg", ["-v", "error", "-i", "silence.aac", "-f", "s16le", "-acodec", "pcm_s16le", "-"],
                in: directory)
            #expect(decoded.status == 0)
            #expect(decoded.standardError == "", "ffmpeg said: \(decoded.standardError)")
            #expect(decoded.standardOutputData.count == 50 * 1024 * channels * 2)
            #expect(decoded.standardOutputData.allSatisfy { $0 == 0 })
        }
    }
}
