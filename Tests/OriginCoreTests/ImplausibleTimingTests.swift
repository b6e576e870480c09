import Foundation
import HLSPackaging
import HLSPlaylist
import HTTPPushInput
import LiveTimeline
import Logging
import MediaProbe
import SharedBytes
import TestSupport
import Testing

@testable import OriginCore

/// Pushes whose media times no encoder writes: fragments lasting days or centuries, timestamps that jump by ages.
/// Each is refused with `implausibleTiming` (422) and a body saying which value is out of bounds; nothing is listed,
/// the target duration stays unfixed, and the process lives on (a Swift overflow trap would end it: the test process
/// is the witness). The crafted fragments are 100-200 bytes, as a network peer would send them.
@Suite("Media times no stream carries", .offThePool)
struct ImplausibleTimingTests {
    // MARK: - Crafted fMP4

    static func be32(_ value: UInt64) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
    static func be64(_ value: UInt64) -> [UInt8] { be32(value >> 32) + be32(value & 0xFFFF_FFFF) }
    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        be32(UInt64(8 + payload.count)) + Array(type.utf8) + payload
    }
    static func fullBox(_ type: String, version: UInt8 = 0, flags: UInt64 = 0, _ payload: [UInt8]) -> [UInt8] {
        box(type, [version] + be32(flags).suffix(3) + payload)
    }

    /// A moof + empty mdat for track 1 (the video track of `fmp4-h264-aac-init.mp4`, timescale 15360): tfhd with a
    /// default sample duration, tfdt, and a trun of `sampleCount` samples that lists nothing per sample.
    static func fragment(sampleCount: UInt64, sampleDuration: UInt64, decodeTime: UInt64 = 0) -> [UInt8] {
        let tfhd = fullBox("tfhd", flags: 0x02_0008 | 0x20, be32(1) + be32(sampleDuration) + be32(0x0200_0000))
        let tfdt = fullBox("tfdt", version: 1, be64(decodeTime))
        let trun = fullBox("trun", be32(sampleCount))
        return box("moof", fullBox("mfhd", be32(1)) + box("traf", tfhd + tfdt + trun)) + box("mdat", [])
    }

    static let initSection = "fmp4-h264-aac-init.mp4"
    static let timescale: UInt64 = 15360

    /// An origin on a manual clock with channel `fm` (no configured target duration) and Low-Latency channel `ll`
    /// (PART-TARGET 0.4 s, whose target duration the configuration fixes at 2 s), both fMP4 with an init section.
    final class Origins {
        let clock = ManualClock()
        let origin: Origin

        init() throws {
            var ll = ChannelConfiguration(
                name: "ll", renditions: [RenditionConfiguration(name: "v")], targetDuration: 2, window: .segments(8))
            ll.lowLatency = LowLatencyConfiguration(partTarget: 0.4)
            let fm = ChannelConfiguration(name: "fm", renditions: [RenditionConfiguration(name: "v")])
            origin = try Origin(
                configuration: OriginConfiguration(channels: [fm, ll], ingest: IngestConfiguration(autoCreate: false)),
                clock: clock, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            clock.advance(seconds: 2)
            for channel in ["fm", "ll"] {
                _ = try origin.ingest(
                    channel: channel, rendition: "v", fileName: "init.mp4",
                    body: try IFramePlaylistTests.fixture(ImplausibleTimingTests.initSection))
            }
        }

        func push(_ channel: String, _ bytes: [UInt8], file: String = "0.m4s") -> IngestError? {
            do {
                _ = try origin.ingest(channel: channel, rendition: "v", fileName: file, body: SharedBytes(bytes))
                return nil
            } catch {
                return error
            }
        }

        /// Streams `bytes` into `ll/v` in pieces of `piece` bytes; the refusal, from a piece or from the end.
        func stream(_ bytes: [UInt8], piece: Int = 64) throws -> IngestError? {
            let push = try #require(try origin.beginStreamingPush(channel: "ll", rendition: "v", fileName: "0.m4s"))
            for start in stride(from: 0, to: bytes.count, by: piece) {
                clock.advance(seconds: 0.01)
                let end = min(start + piece, bytes.count)
                if let refusal = bytes[start..<end].withUnsafeBytes({ push.receive($0) }) { return refusal }
            }
            do {
                _ = try push.finish()
                return nil
            } catch {
                return error
            }
        }

        func snapshot(_ channel: String) -> RenditionSnapshot? {
            origin.channel(named: channel)?.snapshot.renditions["v"]
        }

        func targetDuration(_ channel: String) throws -> Int? {
            guard let text = snapshot(channel)?.playlist.map({ String(decoding: $0.array, as: UTF8.self) }) else {
                return nil
            }
            return try MediaPlaylist.parse(text).targetDuration
        }
    }

    /// A whole real 2-second segment (the fixture's second fragment set).
    static func realSegment() throws -> [UInt8] { try IFramePlaylistTests.fixture("fmp4-h264-aac-0.m4s").array }

    // MARK: - Whole pushes: the first segment fixes the target duration

    @Test func aFirstFragmentLastingCenturiesIsRefusedAndFixesNoTargetDuration() throws {
        let origins = try Origins()
        // 2^31 - 1 samples of 2^32 - 1 ticks: 6 * 10^14 s. Today this saturates MediaTime.microseconds and traps.
        let fragment = Self.fragment(sampleCount: 0x7FFF_FFFF, sampleDuration: 0xFFFF_FFFF)
        #expect(fragment.count < 200)
        let refusal = try #require(origins.push("fm", fragment))
        #expect(refusal.reason == .implausibleTiming, "\(refusal)")
        #expect(refusal.message.contains("longer than"), "\(refusal)")
        #expect(origins.snapshot("fm")?.entries.isEmpty ?? true)
        let status = try #require(origins.origin.channel(named: "fm")?.status().renditions.first { $0.name == "v" })
        #expect(status.segmentsRejected == 1)
        // The channel takes a real segment afterwards, and that one fixes the target duration.
        origins.clock.advance(seconds: 2)
        #expect(origins.push("fm", try Self.realSegment()) == nil)
        origins.origin.tick()
        #expect(try origins.targetDuration("fm") == 2)
    }

    @Test func aFirstFragmentLastingDaysDoesNotFixATargetDurationOfDays() throws {
        let origins = try Origins()
        // 1,000 samples of 1,000 s: accepted today, fixing EXT-X-TARGETDURATION at 1,000,000 s for ever.
        let refusal = try #require(
            origins.push("fm", Self.fragment(sampleCount: 1000, sampleDuration: 1000 * Self.timescale)))
        #expect(refusal.reason == .implausibleTiming, "\(refusal)")
        #expect(refusal.message.contains("1000000"), "\(refusal)")
        origins.clock.advance(seconds: 2)
        #expect(origins.push("fm", try Self.realSegment()) == nil)
        origins.origin.tick()
        #expect(try origins.targetDuration("fm") == 2)
    }

    @Test func theLongestFirstSegmentTakenIsTheDocumentedMaximum() throws {
        let longest = ChannelState.maximumSegmentSeconds
        let origins = try Origins()
        let tooLong = Self.fragment(sampleCount: 1, sampleDuration: UInt64(longest) * Self.timescale + Self.timescale)
        #expect(origins.push("fm", tooLong)?.reason == .implausibleTiming)
        let atTheBound = Self.fragment(sampleCount: 1, sampleDuration: UInt64(longest) * Self.timescale)
        origins.clock.advance(seconds: Double(longest))
        #expect(origins.push("fm", atTheBound) == nil)
        origins.origin.tick()
        #expect(origins.origin.channel(named: "fm")?.status().renditions.first?.segmentsAccepted == 1)
    }

    @Test func aMediaStartNearTheTopOf64BitsOpensASharedTimelineSlotWithoutOverflow() throws {
        // A redundancy group anchors a feed on arrival - media start (ms). A track of timescale 1 with tfdt
        // 9,223,372,036,854,776 s: its start in ms wraps 64 bits to Int64.min + 192, and arrival - start trapped.
        var initSection = try IFramePlaylistTests.fixture(Self.initSection).array
        let mdhd = try #require(initSection.indices.first { Array(initSection[$0..<($0 + 4)]) == Array("mdhd".utf8) })
        initSection.replaceSubrange((mdhd + 16)..<(mdhd + 20), with: Self.be32(1))  // track 1: timescale 1
        var shared = ChannelConfiguration(name: "tl", renditions: [RenditionConfiguration(name: "v")])
        shared.sharedTimeline = SharedTimeline()
        let clock = ManualClock()
        let origin = try Origin(
            configuration: OriginConfiguration(channels: [shared], ingest: IngestConfiguration(autoCreate: false)),
            clock: clock, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        clock.advance(seconds: 2)
        _ = try origin.ingest(channel: "tl", rendition: "v", fileName: "init.mp4", body: SharedBytes(initSection))
        let receipt = try origin.ingest(
            channel: "tl", rendition: "v", fileName: "0.m4s",
            body: SharedBytes(Self.fragment(sampleCount: 2, sampleDuration: 1, decodeTime: 9_223_372_036_854_776)))
        #expect(receipt.kind == .segment)
        // Its slot starts at the arrival (the anchor is rounded down to the group's 500 ms grid), not ages away.
        let pdt = try #require(origin.channel(named: "tl")?.snapshot.renditions["v"]?.entries.first)
            .programDateTimeMilliseconds
        #expect(abs(pdt - (clock.nowMilliseconds() - 2000)) <= 500, "\(pdt)")
    }

    // MARK: - Streamed pushes into a Low-Latency rendition: the cutter and the part arithmetic

    @Test func aFirstMoofWhoseDurationOverflowsIsRefusedOnAStreamedPush() throws {
        let origins = try Origins()
        // 2^32 - 1 samples of 2^32 - 1 ticks: the LL cutter's product overflows Int64 (a trap on the HTTP thread).
        let fragment = Self.fragment(sampleCount: 0xFFFF_FFFF, sampleDuration: 0xFFFF_FFFF)
        #expect(fragment.count < 120)
        let refusal = try #require(try origins.stream(fragment))
        #expect(refusal.reason == .implausibleTiming, "\(refusal)")
        #expect(origins.snapshot("ll")?.entries.isEmpty ?? true)
        #expect(origins.snapshot("ll")?.lowLatency?.lastPart == nil)
        // The rendition takes the next push.
        #expect(try origins.origin.beginStreamingPush(channel: "ll", rendition: "v", fileName: "1.m4s") != nil)
    }

    @Test func aStreamedPushWhoseSecondMoofJumpsAgesAheadIsRefused() throws {
        let origins = try Origins()
        // Two short fragments; the second's tfdt is 2^62 ticks on: the first part would last 9.5 million years.
        let first = Self.fragment(sampleCount: 1, sampleDuration: Self.timescale / 10)
        let second = Self.fragment(sampleCount: 1, sampleDuration: Self.timescale / 10, decodeTime: 1 << 62)
        let refusal = try #require(try origins.stream(first + second))
        #expect(refusal.reason == .implausibleTiming, "\(refusal)")
        #expect(origins.snapshot("ll")?.entries.isEmpty ?? true)
        #expect(origins.snapshot("ll")?.lowLatency?.lastPart == nil)
    }

    @Test func aStreamedPushWhoseDecodeTimeGoesBackIsRefused() throws {
        let origins = try Origins()
        let first = Self.fragment(sampleCount: 1, sampleDuration: Self.timescale / 10, decodeTime: 1 << 40)
        let second = Self.fragment(sampleCount: 1, sampleDuration: Self.timescale / 10, decodeTime: 0)
        let refusal = try #require(try origins.stream(first + second))
        #expect(refusal.reason == .implausibleTiming, "\(refusal)")
        #expect(origins.snapshot("ll")?.lowLatency?.lastPart == nil)
    }
}
