import Foundation
import HLSPackaging
import HLSPlaylist
import HTTPPushInput
import Logging
import MediaProbe
import SharedBytes
import TestSource
import TestSupport
import Testing

@testable import LiveTimeline
@testable import OriginCore

/// `outage: slate`: the slots of an outage are listed as regular segments whose bytes are the filler, with
/// EXT-X-DISCONTINUITY where the slate starts and where the encoder's media returns; `outage: gap` is unchanged.
@Suite("Slate mode for outages", .offThePool)
struct SlateModeTests {
    typealias Pushed = GapFillerIntegrationTests.Pushed

    static func playlist(_ channel: Pushed, _ rendition: String) throws -> MediaPlaylist {
        let snapshot = try #require(channel.origin.channel(named: "ch")?.snapshot.renditions[rendition])
        return try MediaPlaylist.parse(String(decoding: try #require(snapshot.playlist).array, as: UTF8.self))
    }

    @Test func slateOutageListsFillerSegmentsWithADiscontinuityAtBothJoins() throws {
        let channel = try Pushed(gapResponse: .filler, outage: .slate)
        try channel.outage()
        let entries = channel.entries180p
        #expect(entries.map(\.isGap) == Array(repeating: false, count: 8))
        #expect(entries.map(\.discontinuity) == [false, false, false, true, false, false, true, false])
        #expect(entries.allSatisfy { $0.filler == nil && $0.bytes != nil })

        // The slate continues the last real segment's timeline and lasts its slot.
        let lastReal = try MediaProbe.probeSegment(entries[2].bytes!.array)
        var expectedStart = lastReal.startTime.ticks + lastReal.duration.ticks
        for entry in entries[3...5] {
            let info = try MediaProbe.probeSegment(entry.bytes!.array)
            #expect(info.startTime.ticks == expectedStart)
            #expect(info.duration.ticks == entry.durationMilliseconds * 90)
            #expect(info.startsWithKeyframe)
            expectedStart += info.duration.ticks
        }

        // The playlists: no GAP, the discontinuities at the same MSNs in both renditions (the discontinuity sequence
        // is the channel's), the slate's EXTINF and PDT those of the slots.
        for rendition in ["180p", "360p"] {
            let playlist = try Self.playlist(channel, rendition)
            #expect(playlist.segments.allSatisfy { !$0.gap })
            #expect(playlist.discontinuitySequence == 0)
            #expect(playlist.segments.map(\.discontinuity) == [false, false, false, true, false, false, true, false])
        }
        let gapChannel = try Pushed(gapResponse: .filler)
        try gapChannel.outage()
        let slate = try Self.playlist(channel, "180p").segments
        let gap = try Self.playlist(gapChannel, "180p").segments
        #expect(slate.map(\.uri) == gap.map(\.uri))
        #expect(slate.map(\.duration) == gap.map(\.duration))
        #expect(slate.map(\.programDateTime) == gap.map(\.programDateTime))
        // The slate's bytes are the filler the GAP URL answers in gap mode.
        #expect(entries[3...5].map(\.bytes) == gapChannel.entries180p[3...5].map(\.filler))
    }

    @Test func theDiscontinuitySequenceCountsBothJoinsOfEachOutage() throws {
        let channel = try Pushed(gapResponse: .filler, outage: .slate)
        try channel.outage()
        try channel.outage()  // a second outage: two more discontinuities
        let entries = channel.entries180p
        #expect(entries.count == 16)
        #expect(entries.filter(\.discontinuity).map(\.msn) == [3, 6, 11, 14])
        // Window of 100: nothing has slid out, so the sequence stays 0 and the playlist lists all four.
        let playlist = try Self.playlist(channel, "180p")
        #expect(playlist.segments.filter(\.discontinuity).count == 4)
    }

    @Test func theDiscontinuitySequenceGrowsAsTheSlateJoinsSlideOutOfTheWindow() throws {
        let channel = try Pushed(gapResponse: .filler, outage: .slate, window: 3)
        try channel.outage()  // MSNs 0...7, discontinuities at 3 and 6
        var sequences: [UInt64] = []
        var firsts: [UInt64] = []
        for _ in 0..<6 {
            let playlist = try Self.playlist(channel, "180p")
            sequences.append(playlist.discontinuitySequence)
            firsts.append(playlist.mediaSequence)
            // Both renditions count the same.
            #expect(try Self.playlist(channel, "360p").discontinuitySequence == playlist.discontinuitySequence)
            try channel.slot()
        }
        // The window's first MSN, and how many discontinuities slid out before it (3 and 6 leave at 4 and 7).
        #expect(firsts == [5, 6, 7, 8, 9, 10])
        #expect(sequences == [1, 1, 2, 2, 2, 2])
    }

    @Test func gapModeIsUnchanged() throws {
        let channel = try Pushed(gapResponse: .filler)
        try channel.outage()
        let entries = channel.entries180p
        #expect(entries.map(\.isGap) == [false, false, false, true, true, true, false, false])
        // As before slate mode: the only discontinuity is where the encoder's media returns after the GAPs.
        #expect(entries.map(\.discontinuity) == [false, false, false, false, false, false, true, false])
        let playlist = try Self.playlist(channel, "180p")
        #expect(playlist.segments.map(\.gap) == entries.map(\.isGap))
        #expect(playlist.segments.map(\.discontinuity) == entries.map(\.discontinuity))
    }

    @Test func slateIsMadeEvenWhenGapURLsAnswer404() throws {
        let channel = try Pushed(gapResponse: .notFound, outage: .slate)
        try channel.outage()
        #expect(channel.entries180p.map(\.isGap) == Array(repeating: false, count: 8))
    }

    @Test func anOperatorsClipPerRenditionIsLoopedInTheSlate() throws {
        let directory = try TemporaryDirectory.make("slate-clip")
        defer { try? FileManager.default.removeItem(at: directory) }
        // A clip coded like each rendition: a 2 s segment of a fresh test source stream (25 fps, no B-frames).
        var clipFrames: [String: [[UInt8]]] = [:]
        for name in ["360p", "180p"] {
            var generator = try TestStreamGenerator(
                profile: try #require(TestSourceProfile.named(name)), segmentDuration: 2)
            let clip = generator.nextSegment().bytes
            try Data(clip).write(to: directory.appendingPathComponent("clip-\(name).ts"))
            clipFrames[name] = try Self.videoFrames(clip)
        }
        let channel = try Pushed(
            gapResponse: .filler, outage: .slate,
            slateClip: directory.appendingPathComponent("clip-{rendition}.ts").path)
        try channel.outage()
        let entries = channel.entries180p
        #expect(entries.map(\.discontinuity) == [false, false, false, true, false, false, true, false])
        let clip = try #require(clipFrames["180p"])
        for entry in entries[3...5] {
            // Every frame of the clip, from its first, one per frame duration (the last keyframe would be 2 frames).
            let frames = try Self.videoFrames(try #require(entry.bytes).array)
            #expect(frames.count == clip.count)
            #expect(frames == clip)
            let info = try MediaProbe.probeSegment(entry.bytes!.array)
            #expect(info.duration.ticks == entry.durationMilliseconds * 90)
        }
    }

    /// The payloads of the video PES packets of an MPEG-TS segment.
    static func videoFrames(_ segment: [UInt8]) throws -> [[UInt8]] {
        let contents = try TransportStreamContents(segment)
        let video = try #require(contents.streams.first { $0.streamType == 0x1B })
        return (contents.pesPackets[video.pid] ?? []).map(\.payload)
    }

    @Test func fragmentedMP4RenditionsGetSlateDecodableWithTheirInitSection() throws {
        let clock = ManualClock()
        var configuration = ChannelConfiguration(
            name: "fm", renditions: [RenditionConfiguration(name: "v")], window: .segments(100))
        configuration.outage = .slate
        let origin = try Origin(
            configuration: OriginConfiguration(channels: [configuration]), clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let initSection = try IFramePlaylistTests.fixture("fmp4-h264-aac-init.mp4")
        _ = try origin.ingest(channel: "fm", rendition: "v", fileName: "init.mp4", body: initSection)
        for n in 0..<2 {
            clock.advance(seconds: 2)
            _ = try origin.ingest(
                channel: "fm", rendition: "v", fileName: "\(n).m4s",
                body: try IFramePlaylistTests.fixture("fmp4-h264-aac-\(n).m4s"))
            origin.tick()
        }
        for _ in 0..<3 {
            clock.advance(seconds: 2)
            origin.tick()
        }
        let snapshot = try #require(origin.channel(named: "fm")?.snapshot.renditions["v"])
        let entries = snapshot.entries
        #expect(entries.count >= 3)
        #expect(entries.allSatisfy { !$0.isGap })
        #expect(entries.map(\.discontinuity).prefix(3) == [false, false, true])
        let info = try MediaProbe.probeInitSection(initSection.array)
        let last = try MediaProbe.probeSegment(entries[1].bytes!.array, initSection: info)
        for (index, entry) in entries.dropFirst(2).enumerated() {
            #expect(entry.container == .fragmentedMP4Segment)
            #expect(entry.initSectionVersion == entries[1].initSectionVersion)
            let slate = try MediaProbe.probeSegment(entry.bytes!.array, initSection: info)
            #expect(slate.startsWithKeyframe)
            if index == 0 {
                #expect(slate.startTime.ticks == last.startTime.ticks + last.duration.ticks)
            }
        }
    }
}
