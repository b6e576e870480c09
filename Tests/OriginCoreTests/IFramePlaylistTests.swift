import Foundation
@testable import HLSPackaging
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

/// I-frame playlists (`{r}/iframes.m3u8`): one entry per entry of the rendition, its segment's first keyframe as a
/// byte range from 0, on exactly the rendition's timeline (MSN, DSN, DISCONTINUITY, PDT, EXTINF, GAP).
@Suite("I-frame playlists: the rendition's timeline, one keyframe per segment", .offThePool)
struct IFramePlaylistTests {
    static func text(_ bytes: SharedBytes?) -> String? {
        bytes.map { String(decoding: $0.array, as: UTF8.self) }
    }

    /// The probe's I-frame range of a segment's bytes.
    static func probedRangeEnd(_ bytes: SharedBytes, initSection: InitSectionInfo? = nil) throws -> Int? {
        try bytes.withUnsafeBytes { raw in try MediaProbe.probeSegment(raw, initSection: initSection) }.iFrameRangeEnd
    }

    /// Probe results by rendition and MSN, so a long run probes each segment once.
    final class ProbeCache {
        var ends: [String: Int?] = [:]
    }

    /// How the served I-frame playlist of a rendition departs from its media playlist's timeline and from the
    /// probe's byte ranges (empty: it does not), and how many I-frame and GAP entries it lists. Collected without
    /// `#expect` per entry, which would make the long run slow.
    static func timelineDifferences(
        _ snapshot: RenditionSnapshot, probes: ProbeCache = ProbeCache()
    ) throws -> (differences: [String], iFrames: Int, gaps: Int) {
        var differences: [String] = []
        func check(_ condition: Bool, _ what: @autoclosure () -> String) {
            if !condition { differences.append("\(snapshot.name): \(what())") }
        }
        let mediaText = try #require(text(snapshot.playlist))
        let iFrameText = try #require(text(snapshot.iFramePlaylist))
        let media = try MediaPlaylist.parse(mediaText)
        let iFrames = try MediaPlaylist.parse(iFrameText)
        check(iFrames.iFramesOnly && iFrameText.contains("\n#EXT-X-I-FRAMES-ONLY\n"), "no EXT-X-I-FRAMES-ONLY")
        check(!iFrameText.contains("#EXT-X-DATERANGE"), "a DATERANGE")
        check(iFrames.mediaSequence == media.mediaSequence, "EXT-X-MEDIA-SEQUENCE \(iFrames.mediaSequence)")
        check(iFrames.discontinuitySequence == media.discontinuitySequence, "DSN \(iFrames.discontinuitySequence)")
        check(iFrames.targetDuration == media.targetDuration, "TARGETDURATION \(iFrames.targetDuration)")
        check(iFrames.segments.count == media.segments.count, "\(iFrames.segments.count) entries")
        var counts = (iFrames: 0, gaps: 0)
        for (offset, (frame, segment)) in zip(iFrames.segments, media.segments).enumerated() {
            let msn = media.mediaSequence + UInt64(offset)
            guard let entry = snapshot.entry(msn: msn) else {
                differences.append("\(snapshot.name): msn \(msn) is not in the snapshot")
                continue
            }
            check(frame.uri == segment.uri, "msn \(msn): URI \(frame.uri)")
            check(frame.duration == segment.duration, "msn \(msn): EXTINF \(frame.duration)")
            check(frame.discontinuity == segment.discontinuity, "msn \(msn): DISCONTINUITY \(frame.discontinuity)")
            check(frame.programDateTime == segment.programDateTime, "msn \(msn): PDT")
            check(frame.map == segment.map, "msn \(msn): MAP")
            if let bytes = entry.bytes {
                let key = "\(snapshot.name)/\(msn)"
                let initSection = entry.initSectionVersion.flatMap { snapshot.initSections[$0]?.info }
                let probed = try probes.ends[key] ?? probedRangeEnd(bytes, initSection: initSection)
                probes.ends[key] = probed
                check(
                    entry.iFrameRangeEnd == probed, "msn \(msn): range end \(String(describing: entry.iFrameRangeEnd))")
                if let probed { check(probed > 0 && probed < bytes.count, "msn \(msn): range end \(probed)") }
            } else {
                check(entry.iFrameRangeEnd == nil, "msn \(msn): a GAP with a range")
            }
            if segment.gap || entry.iFrameRangeEnd == nil {
                check(frame.gap && frame.byteRange == nil, "msn \(msn): not a GAP")
                counts.gaps += 1
            } else {
                check(
                    !frame.gap && frame.byteRange == ByteRange(length: entry.iFrameRangeEnd ?? -1, offset: 0),
                    "msn \(msn): BYTERANGE \(String(describing: frame.byteRange))")
                counts.iFrames += 1
            }
        }
        return (differences, counts.iFrames, counts.gaps)
    }

    /// Expects the served I-frame playlist of a rendition on its media playlist's timeline, with the probe's ranges.
    static func expectSameTimeline(
        _ snapshot: RenditionSnapshot, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let found = try timelineDifferences(snapshot)
        #expect(found.differences.isEmpty, "\(found.differences)", sourceLocation: sourceLocation)
        #expect(found.iFrames > 0, sourceLocation: sourceLocation)
    }

    // MARK: - The live channel

    @Test func followsTheRenditionOverALongRandomRunOfPushesAndOutages() throws {
        let harness = try Harness(renditions: ["360p", "180p"], window: .segments(5))
        var random = SplitMix64(seed: 15)
        var seen = (iFrames: 0, gaps: 0, discontinuities: 0, checks: 0)
        var differences: [String] = []
        let probes = ProbeCache()
        var slot = 0
        while slot < 300 {
            let roll = Int.random(in: 0..<100, using: &random)
            let outage = Int.random(in: 1...4, using: &random)
            for _ in 0..<(roll < 80 ? 1 : outage) {
                switch roll {
                case 0..<80: try harness.slot()
                case 80..<88: try harness.slot(dropping: ["360p"])
                case 88..<94: try harness.slot(dropping: ["180p"])
                default: try harness.slot(dropping: ["360p", "180p"])
                }
                slot += 1
            }
            for name in ["360p", "180p"] {
                guard let rendition = harness.channel.snapshot.renditions[name], rendition.playlist != nil else {
                    continue
                }
                let found = try Self.timelineDifferences(rendition, probes: probes)
                differences += found.differences.map { "after slot \(slot): \($0)" }
                seen.iFrames += found.iFrames
                seen.gaps += found.gaps
                seen.checks += 1
                if Self.text(rendition.playlist)?.contains("#EXT-X-DISCONTINUITY\n") == true {
                    seen.discontinuities += 1
                }
            }
        }
        #expect(differences.isEmpty, "\(differences.prefix(20))")
        #expect(seen.checks > 420, "checked after every step of the run")
        #expect(seen.iFrames > 1500, "the test source's segments start with keyframes: \(seen)")
        #expect(seen.gaps > 300, "outages listed GAPs: \(seen)")
        #expect(seen.discontinuities > 150, "outages ended in discontinuities: \(seen)")
    }

    @Test func byteRangesEndWithTheFirstKeyframeOfTheTestSourceSegments() throws {
        let harness = try Harness(renditions: ["360p"], window: .segments(10))
        for _ in 0..<4 { try harness.slot() }
        let rendition = try #require(harness.channel.snapshot.renditions["360p"])
        for entry in rendition.entries {
            let bytes = try #require(entry.bytes)
            let info = try bytes.withUnsafeBytes { raw in try MediaProbe.probeSegment(raw, initSection: nil) }
            #expect(info.keyframes.count == 2, "1 s GOPs in 2 s segments")
            #expect(entry.iFrameRangeEnd == info.keyframes.first?.end)
            // A whole number of transport packets, well short of the segment.
            let end = try #require(entry.iFrameRangeEnd)
            #expect(end % 188 == 0)
            #expect(end < info.keyframes[1].start)
        }
        let text = try #require(Self.text(rendition.iFramePlaylist))
        let first = try #require(rendition.entries.first?.iFrameRangeEnd)
        #expect(text.hasPrefix("#EXTM3U\n#EXT-X-VERSION:4\n#EXT-X-TARGETDURATION:2\n"))
        #expect(text.contains("#EXT-X-BYTERANGE:\(first)@0\n#EXTINF:2.000,\n0.ts\n"))
    }

    @Test func aGapAndASegmentWithoutALeadingKeyframeAreGapsInTheIFramePlaylist() throws {
        let harness = try Harness(renditions: ["360p"], window: .segments(10))
        try harness.slot()
        try harness.slot(dropping: ["360p"])
        try harness.slot(dropping: ["360p"])
        for _ in 0..<3 { try harness.slot() }
        let rendition = try #require(harness.channel.snapshot.renditions["360p"])
        let media = try harness.playlist("360p")
        let iFrames = try MediaPlaylist.parse(try #require(Self.text(rendition.iFramePlaylist)))
        #expect(media.segments.map(\.gap).contains(true), "the outage listed GAPs")
        #expect(iFrames.segments.map(\.gap) == media.segments.map(\.gap))
        #expect(iFrames.segments.map(\.uri) == media.segments.map(\.uri))
        #expect(iFrames.segments.map(\.discontinuity) == media.segments.map(\.discontinuity))
        #expect(iFrames.segments.contains { $0.discontinuity })

        var window = LiveWindow(length: .segments(4), targetDuration: 2)
        window.append(Self.entry(7, rangeEnd: nil), nowMilliseconds: 0)
        window.append(Self.entry(8, rangeEnd: 940), nowMilliseconds: 0)
        let playlist = window.iFramePlaylist(decoration: .none, encrypted: false)
        #expect(playlist.segments.map(\.gap) == [true, false])
        #expect(playlist.segments.map(\.byteRange) == [nil, ByteRange(length: 940, offset: 0)])
    }

    @Test func restartRestoresTheByteRangesByProbingTheStoredSegments() throws {
        let directory = try TemporaryDirectory.make("iframes").path
        let clock = ManualClock()
        let renditions = ["360p", "180p"]
        var generators = try renditions.map {
            try TestStreamGenerator(profile: TestSourceProfile.named($0)!, segmentDuration: 2)
        }
        func start() throws -> Origin {
            var channel = ChannelConfiguration(name: "ch", renditions: renditions.map { .init(name: $0) })
            channel.window = .segments(6)
            return try Origin(
                configuration: OriginConfiguration(
                    channels: [channel], ingest: IngestConfiguration(autoCreate: false), dataDirectory: directory),
                clock: clock, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        }
        var origin: Origin? = try start()
        for n in 0..<10 {
            clock.advance(seconds: 2)
            for (index, rendition) in renditions.enumerated() {
                let bytes = SharedBytes(generators[index].nextSegment().bytes)
                // 180p misses two slots: GAPs in both of its playlists.
                guard rendition == "360p" || !(6...7).contains(n) else { continue }
                _ = try origin!.ingest(channel: "ch", rendition: rendition, fileName: "s.ts", body: bytes)
            }
            origin!.tick()
        }
        var before: [String: (text: String, entries: [WindowEntry])] = [:]
        for rendition in renditions {
            let snapshot = try #require(origin!.channel(named: "ch")?.snapshot.renditions[rendition])
            before[rendition] = (try #require(Self.text(snapshot.iFramePlaylist)), snapshot.entries)
            #expect(before[rendition]!.text.contains("#EXT-X-BYTERANGE:"))
        }
        #expect(before["180p"]!.text.contains("#EXT-X-GAP\n"))
        origin = nil
        let restarted = try start()
        for rendition in renditions {
            let after = try #require(restarted.channel(named: "ch")?.snapshot.renditions[rendition])
            #expect(Self.text(after.iFramePlaylist) == before[rendition]!.text, "\(rendition)")
            #expect(before[rendition]!.entries.count > 6, "retained entries were compared too")
            for entry in before[rendition]!.entries {
                #expect(
                    after.entry(msn: entry.msn)?.iFrameRangeEnd == entry.iFrameRangeEnd, "\(rendition) \(entry.msn)")
            }
            try Self.expectSameTimeline(after)
        }
    }

    @Test func fragmentedMP4RangesStartAtZeroAndCarryTheMapAcrossARestart() throws {
        let directory = try TemporaryDirectory.make("iframes-fmp4").path
        let clock = ManualClock()
        func start() throws -> Origin {
            try Origin(
                configuration: OriginConfiguration(
                    channels: [], ingest: IngestConfiguration(autoCreate: true), dataDirectory: directory),
                clock: clock, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        }
        let initSection = try Self.fixture("fmp4-h264-aac-init.mp4")
        var origin: Origin? = try start()
        _ = try origin!.ingest(channel: "fm", rendition: "v", fileName: "init.mp4", body: initSection)
        for n in 0..<2 {
            clock.advance(seconds: 2)
            _ = try origin!.ingest(
                channel: "fm", rendition: "v", fileName: "\(n).m4s", body: try Self.fixture("fmp4-h264-aac-\(n).m4s"))
            origin!.tick()
        }
        clock.advance(seconds: 3)
        origin!.tick()
        let before = try #require(origin!.channel(named: "fm")?.snapshot.renditions["v"])
        let text = try #require(Self.text(before.iFramePlaylist))
        #expect(text.hasPrefix("#EXTM3U\n#EXT-X-VERSION:5\n"))
        #expect(text.contains("#EXT-X-MAP:URI=\"init-0.mp4\"\n"))
        let end = try #require(before.entries.first?.iFrameRangeEnd)
        #expect(text.contains("#EXT-X-BYTERANGE:\(end)@0\n"))
        try Self.expectSameTimeline(before)
        origin = nil
        let restarted = try start()
        let after = try #require(restarted.channel(named: "fm")?.snapshot.renditions["v"])
        #expect(Self.text(after.iFramePlaylist) == text)
        #expect(after.entries.map(\.iFrameRangeEnd) == before.entries.map(\.iFrameRangeEnd))
    }

    static func fixture(_ name: String) throws -> SharedBytes {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let path = root.appendingPathComponent("MediaProbeTests/Fixtures/\(name)").path
        return SharedBytes(try #require(FileManager.default.contents(atPath: path).map { [UInt8]($0) }))
    }

    // MARK: - Rendering (design section 7)

    static let t0: Int64 = 1_795_480_800_000  // 2026-11-24T00:40:00.000Z

    static func entry(
        _ msn: UInt64, rangeEnd: Int?, ms: Int64 = 2000, discontinuity: Bool = false, gap: Bool = false,
        container: MediaContainer = .mpegTS, initSection: Int? = nil
    ) -> WindowEntry {
        WindowEntry(
            msn: msn, durationMilliseconds: ms, programDateTimeMilliseconds: t0 + (Int64(msn) - 100) * 2000,
            discontinuity: discontinuity,
            content: gap ? .gap(filler: nil) : .segment(SharedBytes([0x47]), startsWithKeyframe: rangeEnd != nil),
            container: container, initSectionVersion: initSection, iFrameRangeEnd: gap ? nil : rangeEnd)
    }

    /// The worked example: 100..103, 101 a GAP, 103 after the feed came back.
    static func exampleWindow(container: MediaContainer = .mpegTS, initSection: Int? = nil) -> LiveWindow {
        var window = LiveWindow(length: .segments(4), targetDuration: 2, discontinuitySequence: 4)
        let entries = [
            entry(100, rangeEnd: 5076, container: container, initSection: initSection),
            entry(101, rangeEnd: nil, gap: true, container: container, initSection: initSection),
            entry(102, rangeEnd: 4888, container: container, initSection: initSection),
            entry(103, rangeEnd: 5264, ms: 1960, discontinuity: true, container: container, initSection: initSection),
        ]
        for entry in entries { window.append(entry, nowMilliseconds: t0) }
        return window
    }

    @Test func plainIFramePlaylistOfTheWorkedExample() {
        let text = Self.exampleWindow().iFramePlaylist(decoration: .none, encrypted: false).render()
        #expect(
            text == """
                #EXTM3U
                #EXT-X-VERSION:4
                #EXT-X-TARGETDURATION:2
                #EXT-X-MEDIA-SEQUENCE:100
                #EXT-X-DISCONTINUITY-SEQUENCE:4
                #EXT-X-INDEPENDENT-SEGMENTS
                #EXT-X-I-FRAMES-ONLY
                #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:00.000Z
                #EXT-X-BYTERANGE:5076@0
                #EXTINF:2.000,
                100.ts
                #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:02.000Z
                #EXT-X-GAP
                #EXTINF:2.000,
                101.ts
                #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:04.000Z
                #EXT-X-BYTERANGE:4888@0
                #EXTINF:2.000,
                102.ts
                #EXT-X-DISCONTINUITY
                #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:06.000Z
                #EXT-X-BYTERANGE:5264@0
                #EXTINF:1.960,
                103.ts

                """)
    }

    @Test func fragmentedMP4IFramePlaylistHasTheMapAndVersion5() {
        let text = Self.exampleWindow(container: .fragmentedMP4Segment, initSection: 0)
            .iFramePlaylist(decoration: .none, encrypted: false).render()
        #expect(text.hasPrefix("#EXTM3U\n#EXT-X-VERSION:5\n"))
        #expect(
            text.contains(
                "#EXT-X-I-FRAMES-ONLY\n#EXT-X-MAP:URI=\"init-0.mp4\"\n#EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:00.000Z\n"
                    + "#EXT-X-BYTERANGE:5076@0\n#EXTINF:2.000,\n100.m4s\n"))
        #expect(text.components(separatedBy: "#EXT-X-MAP:").count == 2, "one MAP for one init section")
    }

    @Test func encryptedEntriesAreTheirOwnResourcesWithoutByteRanges() {
        let playlist = Self.exampleWindow().iFramePlaylist(decoration: .none, encrypted: true)
        #expect(playlist.iFramesOnly)
        #expect(playlist.segments.map(\.uri) == ["iframe-100.ts", "101.ts", "iframe-102.ts", "iframe-103.ts"])
        #expect(playlist.segments.allSatisfy { $0.byteRange == nil })
        #expect(playlist.segments.map(\.gap) == [false, true, false, false])
    }

    @Test func theDecorationAppliesAsToTheMediaPlaylist() {
        var keys = KeySchedule()
        keys.change(rotateEvery: 3, fromMSN: 0)
        let decoration = PlaylistDecoration(
            definitions: [.import(name: "token")], uriSuffix: "?token={$token}", keys: keys)
        let window = Self.exampleWindow()
        let iFrames = window.iFramePlaylist(decoration: decoration, encrypted: true)
        let media = window.playlist(independentSegments: true, decoration: decoration)
        #expect(iFrames.definitions == media.definitions)
        #expect(iFrames.segments.map(\.key) == media.segments.map(\.key))
        #expect(
            iFrames.segments.map(\.uri) == [
                "iframe-100.ts?token={$token}", "101.ts?token={$token}", "iframe-102.ts?token={$token}",
                "iframe-103.ts?token={$token}",
            ])
    }

    // MARK: - Statistics and the multivariant playlist

    @Test func iFrameBitRatesComeFromTheRangesOverTheirDurations() {
        var statistics = RenditionStatistics()
        statistics.countIFrame(rangeEnd: 10_000, milliseconds: 2000)
        statistics.countIFrame(rangeEnd: nil, milliseconds: 2000)
        statistics.countIFrame(rangeEnd: 30_000, milliseconds: 2000)
        #expect(statistics.iFramePeakBitrate == 120_000)
        #expect(statistics.iFrameAverageBitrate == 80_000)
    }

    @Test func theMultivariantLineCarriesTheMeasuredIFrameRates() throws {
        let harness = try Harness(renditions: ["360p", "180p"], window: .segments(100))
        for _ in 0..<6 { try harness.slot() }
        let snapshot = harness.channel.snapshot
        let multivariant = try #require(Self.text(snapshot.multivariantPlaylist))
        for (name, codec, resolution) in [("360p", "avc1.4d401e", "640x360"), ("180p", "avc1.4d400c", "320x180")] {
            let entries = try #require(snapshot.renditions[name]?.entries)
            #expect(entries.count == 6)
            let ends = entries.compactMap(\.iFrameRangeEnd)
            #expect(ends.count == 6)
            let milliseconds = entries.map(\.durationMilliseconds)
            let peak = try #require(zip(ends, milliseconds).map { Int(Int64($0) * 8000 / $1) }.max())
            let average = Int(Int64(ends.reduce(0, +)) * 8000 / milliseconds.reduce(0, +))
            #expect(
                multivariant.contains(
                    "#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=\(peak),AVERAGE-BANDWIDTH=\(average),CODECS=\"\(codec)\","
                        + "RESOLUTION=\(resolution),VIDEO-RANGE=SDR,URI=\"\(name)/iframes.m3u8\"\n"), "\(multivariant)")
        }
        #expect(multivariant.hasSuffix("URI=\"180p/iframes.m3u8\"\n"), "after the variants, in rendition order")
    }

    @Test func onlyVideoRenditionsGetIFrameStreamsAndTheSettingTurnsThemOff() throws {
        func state(_ configure: (inout ChannelConfiguration) -> Void = { _ in }) throws -> ChannelState {
            // hi and lo with I-frame rates (301 000 / 262 000 and 96 000 / 84 000).
            try MultivariantRenditionTests.demuxState(hint: MultivariantRenditionTests.ffmpegHint, configure: configure)
        }
        // hi and lo carry video; en and fr are audio, lo-vtt subtitles.
        #expect(
            try #require(state().multivariant()).iFrameStreams == [
                IFrameStream(
                    uri: "hi/iframes.m3u8", bandwidth: 301_000, averageBandwidth: 262_000, codecs: ["avc1.42c01e"],
                    resolution: Resolution(width: 640, height: 360)),
                IFrameStream(
                    uri: "lo/iframes.m3u8", bandwidth: 96_000, averageBandwidth: 84_000, codecs: ["avc1.42c00d"],
                    resolution: Resolution(width: 320, height: 180)),
            ])
        let off = try state { $0.iFramePlaylists = false }
        #expect(try #require(off.multivariant()).iFrameStreams.isEmpty)
        #expect(!off.renditions.contains { off.hasIFramePlaylist($0) })
    }

    @Test func aChannelWithIFramePlaylistsOffPublishesNone() throws {
        var channel = ChannelConfiguration(name: "off", renditions: [.init(name: "360p")])
        channel.iFramePlaylists = false
        let clock = ManualClock()
        let origin = try Origin(
            configuration: OriginConfiguration(channels: [channel], ingest: IngestConfiguration(autoCreate: false)),
            clock: clock, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 2)
        for _ in 0..<3 {
            clock.advance(seconds: 2)
            _ = try origin.ingest(
                channel: "off", rendition: "360p", fileName: "s.ts", body: SharedBytes(generator.nextSegment().bytes))
            origin.tick()
        }
        let snapshot = try #require(origin.channel(named: "off")?.snapshot)
        #expect(snapshot.renditions["360p"]?.playlist != nil)
        #expect(snapshot.renditions["360p"]?.iFramePlaylist == nil)
        #expect(Self.text(snapshot.multivariantPlaylist)?.contains("I-FRAME") == false)
    }

    @Test func theDVRMultivariantDropsIFrameStreams() {
        var multivariant = MultivariantPlaylist(
            independentSegments: true,
            variants: [VariantStream(uri: "360p/index.m3u8", bandwidth: 800_000, codecs: ["avc1.4d401e"])])
        multivariant.iFrameStreams = [
            IFrameStream(uri: "360p/iframes.m3u8", bandwidth: 90_000, codecs: ["avc1.4d401e"])
        ]
        let text = multivariant.render()
        let interval = DVRInterval(kind: .startOver, startMilliseconds: Self.t0)
        let rewritten = interval.passThrough(multivariant: text)
        #expect(!rewritten.contains("I-FRAME"))
        #expect(rewritten.contains("360p/index.m3u8?start="))
        #expect(rewritten.hasSuffix("\n"))
    }
}
