import Foundation
import MediaProbe
import TSSegmenter
import TestSource
import TestSupport
import Testing

@testable import MPEGTSWriter

/// A segment the segmenter handed out: how it started, its bytes, how it ended.
struct CutSegment: Equatable {
    var start: TransportStreamSegmenter.SegmentStart
    var bytes: [UInt8]
    var end: TransportStreamSegmenter.SegmentEnd
}

/// What a run of the segmenter gave.
struct SegmenterRun {
    var segments: [CutSegment] = []
    var warnings: [String] = []
    var status: TransportStreamSegmenter.Status
}

extension SegmenterRun {
    /// The segments and warnings of a run's `events`, in order.
    init(events: [TransportStreamSegmenter.Event], status: TransportStreamSegmenter.Status) {
        self.init(status: status)
        var open: (TransportStreamSegmenter.SegmentStart, [UInt8])?
        for event in events {
            switch event {
            case .started(let start): open = (start, [])
            case .bytes(let bytes): open?.1 += bytes
            case .ended(let end):
                if let (start, bytes) = open { segments.append(CutSegment(start: start, bytes: bytes, end: end)) }
                open = nil
            case .keyframeWarning(let message): warnings.append(message)
            }
        }
    }
}

enum SegmenterFixture {
    /// 2000-01-01T00:00:00Z (the MSN grid's origin) in ms.
    static let gridOrigin: Int64 = 946_684_800_000
    /// An arrival time whose anchor (arrival - first PTS, rounded down to 500 ms) is `gridOrigin + 10^10 + 500`
    /// for the test source's first PTS (1.4 s): slot boundaries of 2 s then fall at PTS 1.5 s + k x 2 s.
    static let arrival: Int64 = gridOrigin + 10_000_000_000 + 1400 + 700

    /// `segments` of the 360p test source (25 fps, a keyframe every second, AAC), one after another: a continuous TS.
    static func stream(
        segments: Int, startPTS: Int64 = TestStreamGenerator.defaultStartPTS,
        restartAfter: Int? = nil, restartPTS: Int64 = 0
    ) throws -> [UInt8] {
        var generator = try TestStreamGenerator(
            profile: TestSourceProfile.named("360p")!, segmentDuration: 1, startPTS: startPTS)
        var bytes: [UInt8] = []
        for index in 0..<segments {
            if index == restartAfter { generator.restartTimestamps(startPTS: restartPTS) }
            bytes += generator.nextSegment().bytes
        }
        return bytes
    }

    /// Feeds `bytes` in pieces of the given lengths (whole when nil), then ends the stream.
    static func run(
        _ bytes: [UInt8], segmentMilliseconds: Int64 = 2000, pieces: [Int]? = nil, arrival: Int64 = arrival,
        discontinuity: Bool = false
    ) -> SegmenterRun {
        var segmenter = TransportStreamSegmenter(
            configuration: .init(segmentDurationMilliseconds: segmentMilliseconds), discontinuity: discontinuity)
        var events: [TransportStreamSegmenter.Event] = []
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            var lengths = (pieces ?? [buffer.count]).makeIterator()
            while offset < buffer.count {
                let length = max(1, lengths.next() ?? buffer.count)
                let end = min(buffer.count, offset + length)
                events += segmenter.consume(
                    UnsafeRawBufferPointer(rebasing: buffer[offset..<end]), arrivalMilliseconds: arrival)
                offset = end
            }
        }
        events += segmenter.finish()
        return SegmenterRun(events: events, status: segmenter.status)
    }

    /// What ffprobe decodes of `segment` (written as `name` in `directory`): `codec,frames` of the `streams` it
    /// selects, each line once (ffprobe prints a stream under its program and alone); it must decode without error.
    static func decodedFrames(
        _ segment: CutSegment, named name: String, streams: String, in directory: URL
    ) throws -> Set<Substring> {
        try Data(segment.bytes).write(to: directory.appendingPathComponent(name))
        let output = try ChildProcess.runBlocking(
            "ffprobe",
            ["-v", "error", "-count_frames", "-select_streams", streams, "-show_entries",
             "stream=codec_name,nb_read_frames", "-of", "csv=p=0", name], in: directory, timeout: .seconds(30))
        #expect(output.status == 0 && output.standardError.isEmpty, "\(name): \(output.standardError)")
        return Set(output.standardOutput.split(separator: "\n").filter { !$0.isEmpty })
    }

    static func probe(_ segment: CutSegment) throws -> SegmentInfo {
        try segment.bytes.withUnsafeBytes { try MediaProbe.probeSegment($0, initSection: nil) }
    }
}

@Suite(.offThePool) struct TransportStreamSegmenterTests {
    typealias Fixture = SegmenterFixture

    @Test func cutsAtTheFirstKeyframeAtOrAfterEachSlotBoundary() throws {
        // Keyframes at 1.4, 2.4, 3.4 ... s; 2 s slot boundaries at PTS 1.5, 3.5, 5.5 ... s. The first segment
        // starts on a boundary too (the keyframe at 1.4 s comes before the first one).
        let run = Fixture.run(try Fixture.stream(segments: 10))
        let starts = run.segments.map(\.start.decodeTime)
        #expect(starts == [216_000, 396_000, 576_000, 756_000, 936_000])
        #expect(run.segments.dropLast().allSatisfy { $0.end.durationTicks == 180_000 })
        #expect(run.status.bytesDropped > 0)
        for segment in run.segments {
            let info = try Fixture.probe(segment)
            #expect(info.startsWithKeyframe && info.startsWithPATAndPMT)
            #expect(info.startTime.ticks == segment.start.decodeTime)
        }
        #expect(!run.segments.contains { $0.start.discontinuity })
        #expect(run.status.demuxer.continuityErrors == 0)
    }

    @Test func anotherArrivalTimeMovesTheBoundaries() throws {
        // 800 ms later: anchor + 500 ms, boundaries at PTS 1.0, 3.0 ... s: cuts at the keyframes 3.4, 5.4 ... s.
        let run = Fixture.run(try Fixture.stream(segments: 8), arrival: Fixture.arrival + 800)
        #expect(run.segments.map(\.start.decodeTime) == [306_000, 486_000, 666_000])
    }

    @Test func twoOriginsJoiningAtDifferentMomentsCutAtTheSamePTS() throws {
        let stream = try Fixture.stream(segments: 12)
        let early = Fixture.run(stream)
        // The second origin receives the stream from its 3rd second (a whole test-source segment is 1 s) and
        // 2 s later on the wall clock, with 200 ms more delay: same anchor within the 500 ms grid.
        let offset = stream.count / 12 * 3
        let late = Fixture.run(Array(stream[offset...]), arrival: Fixture.arrival + 2000 + 200)
        let lateStarts = Set(late.segments.map(\.start.decodeTime))
        let earlyStarts = Set(early.segments.map(\.start.decodeTime))
        #expect(!lateStarts.isEmpty && lateStarts.isSubset(of: earlyStarts))
        let common = early.segments.filter { lateStarts.contains($0.start.decodeTime) && $0.end.index < 5 }
        for segment in common {
            #expect(late.segments.first { $0.start.decodeTime == segment.start.decodeTime }?.bytes == segment.bytes)
        }
    }

    @Test func anySplitOfTheBytesGivesTheSameSegments() throws {
        let stream = try Fixture.stream(segments: 7)
        let whole = Fixture.run(stream)
        var random = SplitMix64(seed: 31)
        for round in 0..<6 {
            let maximum = [1, 7, 188, 189, 1316, 5000][round]
            let pieces = (0..<(stream.count + 1)).map { _ in 1 + random.below(maximum) }
            let split = Fixture.run(stream, pieces: pieces)
            #expect(split.segments == whole.segments, "pieces of at most \(maximum) bytes")
        }
    }

    @Test func eachSegmentStartsWithItsOwnProgramTablesAndCountsOn() throws {
        let run = Fixture.run(try Fixture.stream(segments: 6))
        for segment in run.segments {
            let packets = try TransportStreamReader.packets(segment.bytes)
            #expect(packets[0].pid == 0 && packets[1].pid == 0x1000)
            // PAT/PMT counters start at 0 in every segment and follow on.
            for pid: UInt16 in [0, 0x1000] {
                let counters = packets.filter { $0.pid == pid }.map(\.continuityCounter)
                #expect(counters == counters.indices.map { UInt8($0 % 16) })
            }
        }
    }

    @Test func timestampsWrappingPast2To33KeepTheCutsEvenAndContinuous() throws {
        let start = MPEGTimestamp.modulus - 3 * 90_000  // wraps 3 s in
        let run = Fixture.run(try Fixture.stream(segments: 10, startPTS: start))
        #expect(run.segments.count >= 4)
        for (previous, next) in zip(run.segments, run.segments.dropFirst()) {
            #expect(previous.start.decodeTime + previous.end.durationTicks == next.start.decodeTime)
            #expect(!next.start.discontinuity)
        }
        #expect(run.segments.dropLast().allSatisfy { $0.end.durationTicks == 180_000 })
        #expect(run.segments.last!.start.decodeTime > MPEGTimestamp.modulus)
        #expect(run.status.demuxer.timestampJumps == 0)
    }

    @Test func aTimestampJumpEndsTheSegmentAndStartsADiscontinuityOnANewAnchor() throws {
        let jumped: Int64 = 50_000_000
        let run = Fixture.run(try Fixture.stream(segments: 10, restartAfter: 5, restartPTS: jumped))
        let index = try #require(run.segments.firstIndex { $0.start.decodeTime == jumped })
        #expect(run.segments[index].start.discontinuity)
        #expect(run.segments.filter(\.start.discontinuity).count == 1)
        // The segment before ends at the jump: its last frame, not the new timeline.
        let before = run.segments[index - 1]
        #expect(before.start.decodeTime + before.end.durationTicks <= 126_000 + 5 * 90_000)
        #expect(try Fixture.probe(before).duration.ticks == before.end.durationTicks)
        #expect(run.status.demuxer.timestampJumps == 1)
    }

    @Test func aNewSessionStartsWithADiscontinuity() throws {
        let run = Fixture.run(try Fixture.stream(segments: 4), discontinuity: true)
        #expect(run.segments.map(\.start.discontinuity) == [true] + Array(repeating: false, count: run.segments.count - 1))
    }

    @Test func aStreamEndingJustAfterAKeyframeEndsWithASegmentThatSaysItsAudioIsMissing() throws {
        // Five test source segments (PTS 1.4-6.4 s), then the tables and the first video access unit of the next:
        // the keyframe at 6.4 s starts a segment (the boundary after 4.4 s is 5.5 s) of one frame and no audio.
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 1)
        var whole: [UInt8] = []
        for _ in 0..<5 { whole += generator.nextSegment().bytes }
        let cut = whole + (try TransportStreamReader.tablesAndFirstVideoAccessUnit(of: generator.nextSegment().bytes))
        let run = Fixture.run(cut)
        let last = try #require(run.segments.last)
        #expect(last.start.decodeTime == 126_000 + 5 * 90_000)
        #expect(last.end.durationTicks == 3_600)
        #expect(last.end.missingStreams == [0x0101])
        #expect(last.end.dropped && !last.end.cutShortEntirely)
        // The segments before ended at cuts: nothing is said to be missing there.
        #expect(run.segments.dropLast().allSatisfy { $0.end.missingStreams.isEmpty && !$0.end.dropped })
        // Ended after whole PES of both streams: the last segment lacks nothing.
        let ended = Fixture.run(whole)
        #expect(ended.segments.count == run.segments.count - 1)
        #expect(ended.segments.allSatisfy { !$0.end.dropped })
        // A stream that never carried audio (the PMT lists it): a last segment without it lacks nothing.
        let silent = Fixture.run(SegmenterStreams.rewritingTables(cut, dropping: [0x0101]))
        #expect(silent.segments.count == run.segments.count)
        #expect(silent.segments.allSatisfy { !$0.end.dropped })
    }

    @Test func aProgramChangeMidStreamEndsTheSegmentAndFollowsTheNewPIDs() throws {
        let first = try Fixture.stream(segments: 4)
        let second = try SegmenterStreams.movingVideo(to: 0x0200, in: Fixture.stream(segments: 6, startPTS: 126_000 + 4 * 90_000))
        let run = Fixture.run(first + second)
        let index = try #require(run.segments.firstIndex { $0.start.discontinuity })
        let changed = run.segments[index]
        #expect(changed.start.decodeTime == 126_000 + 4 * 90_000)
        let info = try Fixture.probe(changed)
        #expect(info.tracks.contains { $0.kind == .video && $0.trackID == 0x0200 })
        #expect(info.startsWithKeyframe)
        #expect(try Fixture.probe(run.segments[index - 1]).tracks.contains { $0.trackID == 0x0100 })
        #expect(run.status.demuxer.programChanges == 1)
        #expect(run.segments.count > index + 1)
    }

    @Test func aPATMovingThePMTWithATimestampStepBackStartsADiscontinuityAndCutsContinue() throws {
        // An encoder restarts with a new PMT PID and its clock 20 s behind: a stream change and a new anchor, not an
        // open segment on the old anchor growing until the byte bound.
        let first = try Fixture.stream(segments: 30)
        let restart: Int64 = 126_000 + 10 * 90_000
        let second = SegmenterStreams.movingPMT(to: 0x1100, in: try Fixture.stream(segments: 10, startPTS: restart))
        let run = Fixture.run(first + second)
        let index = try #require(run.segments.firstIndex { $0.start.discontinuity })
        #expect(run.segments[index].start.decodeTime == restart)
        #expect(run.segments.count > index + 2)
        #expect(run.segments[index...].dropLast().allSatisfy { $0.end.durationTicks <= 180_000 })
        #expect(run.status.forcedCuts == 0)
        #expect(run.status.demuxer.programChanges == 1)
        #expect(try Fixture.probe(run.segments[index]).startsWithKeyframe)
    }

    @Test func aPMTVersionBumpListingTheSameStreamsCutsNothingAndTheNextSegmentCarriesIt() throws {
        // An encoder sends PMT version 1 (a descriptor changed) 4 s in: the same PIDs and types, no stream change.
        var bumped = ProgramSection.programMap(
            programNumber: 1, pcrPID: 0x0100, streams: [(0x1B, 0x0100), (0x0F, 0x0101)])
        bumped[5] = 0xC3  // version_number 1, current
        bumped.replaceSubrange((bumped.count - 4)..., with: withUnsafeBytes(
            of: ProgramSection.crc32(Array(bumped.dropLast(4))).bigEndian, Array.init))
        let first = try Fixture.stream(segments: 4)
        let second = SegmenterStreams.rewritingTables(
            try Fixture.stream(segments: 6, startPTS: TestStreamGenerator.defaultStartPTS + 4 * 90_000), pmt: bumped)
        let run = Fixture.run(first + second)
        #expect(run.status.demuxer.programChanges == 0 && run.status.demuxer.malformed == 0)
        #expect(!run.segments.contains { $0.start.discontinuity })
        #expect(run.segments.dropLast().allSatisfy { $0.end.durationTicks == 180_000 })
        #expect(run.segments.count == Fixture.run(try Fixture.stream(segments: 10)).segments.count)
        let last = try #require(run.segments.last)
        #expect(try TransportStreamReader.section(in: TransportStreamReader.packets(last.bytes)[1]) == bumped)
    }

    @Test func aDiscontinuityIndicatorExcusesCountersRestartingWhileTheTimestampsContinue() throws {
        // The encoder's muxer restarts 4 s in (counters from 0, discontinuity_indicator set) on the same clock.
        let stream = try Fixture.stream(
            segments: 8, restartAfter: 4, restartPTS: TestStreamGenerator.defaultStartPTS + 4 * 90_000)
        let run = Fixture.run(stream)
        #expect(run.status.demuxer.continuityErrors == 0 && run.status.demuxer.timestampJumps == 0)
        #expect(!run.segments.contains { $0.start.discontinuity })
        #expect(run.segments.dropLast().allSatisfy { $0.end.durationTicks == 180_000 })
        // The same restart without the indicator: every PID's counter jump is an error.
        var unflagged = stream
        for offset in stride(from: 0, to: unflagged.count, by: 188) where unflagged[offset + 3] & 0x20 != 0 {
            if unflagged[offset + 4] > 0 { unflagged[offset + 5] &= 0x7F }
        }
        #expect(Fixture.run(unflagged).status.demuxer.continuityErrors >= 2)
    }

    @Test func garbageAndLostPacketsAreCountedAndTheStreamResyncs() throws {
        var stream = try Fixture.stream(segments: 8)
        // 100 bytes of junk in the middle of the 3rd second and a packet dropped in the 6th.
        stream.insert(contentsOf: [UInt8](repeating: 0x47, count: 3) + [UInt8](repeating: 0xAB, count: 97),
            at: stream.count / 8 * 2 + 188 * 40)
        let lost = stream.count / 8 * 5 + 188 * 50 + 100
        stream.removeSubrange(lost..<(lost + 188))
        let run = Fixture.run(stream)
        #expect(run.status.demuxer.bytesSkipped >= 100)
        #expect(run.status.demuxer.syncLosses == 1)
        #expect(run.status.demuxer.continuityErrors >= 1)
        for segment in run.segments { #expect(try Fixture.probe(segment).startsWithKeyframe) }
        #expect(run.segments.count >= 3)
    }

    @Test func aPMTSpanningPacketsIsReassembledAndEachSegmentStartsWithIt() throws {
        let pmt = SegmenterStreams.longProgramMap(dataStreams: 40)
        #expect(pmt.count > 183)
        let plain = try Fixture.stream(segments: 8)
        let run = Fixture.run(SegmenterStreams.rewritingTables(plain, pmt: pmt))
        #expect(run.segments.count >= 3)
        #expect(run.segments.map(\.start.decodeTime) == Fixture.run(plain).segments.map(\.start.decodeTime))
        #expect(run.status.demuxer.malformed == 0 && run.status.demuxer.programChanges == 0)
        for segment in run.segments {
            // Written again over two packets, and read back by the segment probe the origin stores it with.
            let packets = try TransportStreamReader.packets(segment.bytes)
            #expect(packets.prefix(3).map(\.pid) == [0, 0x1000, 0x1000] && !packets[2].payloadUnitStart)
            let info = try Fixture.probe(segment)
            #expect(info.startsWithKeyframe && info.startsWithPATAndPMT)
            #expect(Set(info.tracks.map(\.kind)) == [.video, .audio, .data])
        }
    }

    @Test func lowLatencyPartsAreCutInASegmentWhosePMTSpansPackets() throws {
        // An LL channel's parts are cut as a segment's bytes arrive: the part cutter must read a PMT over two packets.
        let plain = try Fixture.stream(segments: 5)
        let long = Fixture.run(SegmenterStreams.rewritingTables(plain, pmt: SegmenterStreams.longProgramMap(dataStreams: 40)))
        let short = Fixture.run(plain)
        func parts(_ segment: CutSegment) throws -> [Int64] {
            var cutter = TransportStreamCutter(partTarget: MediaTime(ticks: 45_000, timescale: 90_000))
            return try segment.bytes.withUnsafeBytes { try cutter.consume($0) }.map(\.decodeTime)
        }
        let segment = try #require(long.segments.first)
        #expect(try parts(segment).count >= 4)
        #expect(try parts(segment) == parts(try #require(short.segments.first)))
    }

    @Test func aPATSplitOverPacketsIsReassembled() throws {
        // 1 + 16 bytes over three packets of at most 8.
        let pat = ProgramSection.programAssociation(programNumber: 1, pmtPID: 0x1000)
        let plain = try Fixture.stream(segments: 6)
        let run = Fixture.run(SegmenterStreams.rewritingTables(plain, pat: pat, chunk: 8))
        #expect(run.segments.count >= 2)
        #expect(run.segments.map(\.start.decodeTime) == Fixture.run(plain).segments.map(\.start.decodeTime))
        #expect(run.status.demuxer.malformed == 0)
    }

    @Test func programTablesWhoseCRCDoesNotMatchAreIgnoredAndCounted() throws {
        var pmt = ProgramSection.programMap(
            programNumber: 1, pcrPID: 0x0100, streams: [(0x1B, 0x0100), (0x0F, 0x0101)])
        pmt[pmt.count - 1] ^= 0xFF
        let run = Fixture.run(SegmenterStreams.rewritingTables(try Fixture.stream(segments: 4), pmt: pmt))
        #expect(run.segments.isEmpty)
        #expect(run.status.demuxer.malformed >= 4)
    }

    @Test func aKeyframeIntervalLongerThanTheSegmentsSaysWhichGOPToUse() throws {
        // 1 s GOP, 0.5 s segments: segments can only end every second.
        let run = Fixture.run(try Fixture.stream(segments: 4), segmentMilliseconds: 500)
        #expect(run.warnings.count == 1)
        let warning = try #require(run.warnings.first)
        #expect(warning.contains("every 1 s") && warning.contains("-g 12") && warning.contains("25 fps"))
        // A steady 4 s GOP with 1 s segments: the interval warning once, not a no-keyframe warning at every GOP.
        let longGOP = Fixture.run(SegmenterStreams.withoutIDR(try Fixture.stream(segments: 16), keepingEvery: 4),
            segmentMilliseconds: 1000)
        #expect(longGOP.warnings.count == 2 && longGOP.warnings.last?.hasPrefix("keyframes come every 4 s") == true,
            "\(longGOP.warnings)")
        #expect(run.status.keyframeWarning == warning)
        #expect(Fixture.run(try Fixture.stream(segments: 4)).warnings.isEmpty)
    }

    @Test func aStreamWithoutIDRPicturesSaysNoKeyframeCameAndWhichGOPToUse() throws {
        // An encoder with an open GOP (or intra refresh) sends I pictures that are not IDR: nothing can be cut.
        let withoutIDR = SegmenterStreams.withoutIDR(try Fixture.stream(segments: 6))
        let run = Fixture.run(withoutIDR)
        #expect(run.segments.isEmpty)
        #expect(run.warnings.count == 1)
        let warning = try #require(run.warnings.first)
        #expect(warning.hasPrefix("no keyframe (H.264 IDR, HEVC IRAP picture) in 4.04 s"), "\(warning)")
        #expect(warning.contains("none is cut") && warning.contains("-g 50 (25 fps x 2 s"))
        #expect(run.status.keyframeWarning == warning)
        // IDR pictures again: cut, and the warning is down.
        let healed = Fixture.run(
            withoutIDR + (try Fixture.stream(segments: 6, startPTS: TestStreamGenerator.defaultStartPTS + 6 * 90_000)))
        #expect(healed.segments.count >= 2)
        #expect(healed.status.keyframeWarning == nil)
    }

    @Test func anAudioOnlyStreamIsCutAtTheAACFrameNearestEachBoundaryAndDecodesAlone() throws {
        // The test source's PES carry 4 AAC frames (1920 ticks each at 48 kHz): boundaries fall inside them.
        let stream = SegmenterStreams.audioOnly(try Fixture.stream(segments: 9))
        let run = Fixture.run(stream)
        #expect(run.segments.count >= 4)
        let frames = try Self.audioFrameStarts(stream)
        for segment in run.segments.dropFirst() {
            // The boundary this segment follows: PTS 1.5 s + k x 2 s (ticks 135 000 + k x 180 000), the nearest.
            let k = (segment.start.decodeTime - 135_000 + 90_000) / 180_000
            let boundary = 135_000 + k * 180_000
            let nearest = frames.min { abs($0 - boundary) < abs($1 - boundary) }
            #expect(segment.start.decodeTime == nearest, "boundary \(boundary)")
        }
        #expect(run.status.audioSplits >= 1)
        var cut: [Int64] = []
        for segment in run.segments {
            let info = try Fixture.probe(segment)
            #expect(info.tracks.map(\.kind) == [.audio] && info.startsWithPATAndPMT)
            #expect(info.startTime.ticks == segment.start.decodeTime)
            // Whole frames, the audio PID's counters following on from the segment's start.
            cut += try Self.audioFrameStarts(segment.bytes)
            let counters = try TransportStreamReader.packets(segment.bytes).filter { $0.pid == 0x0101 && $0.hasPayload }
                .map(\.continuityCounter)
            #expect(counters == counters.indices.map { UInt8($0 % 16) })
        }
        // No frame lost or repeated from the first segment's start on.
        #expect(cut == frames.filter { $0 >= run.segments[0].start.decodeTime })
    }

    /// The PTS of every AAC frame on PID 0x101 (a PES's PTS, then 1024 samples at 48 kHz per frame).
    static func audioFrameStarts(_ bytes: [UInt8]) throws -> [Int64] {
        let units = try TransportStreamReader.pesUnits(TransportStreamReader.packets(bytes), pid: 0x0101)
        return try units.flatMap { unit in
            try TransportStreamReader.adtsFrameLengths(unit.payload).indices.map { unit.pts! + Int64($0) * 1920 }
        }
    }

    @Test(.tags(.endToEnd), .enabled(if: ChildProcess.ffmpegInstalled))
    func segmentsDecodeAloneWithFFprobe() throws {
        let run = Fixture.run(try Fixture.stream(segments: 7))
        let directory = try TemporaryDirectory.make("segmenter")
        defer { try? FileManager.default.removeItem(at: directory) }
        for segment in run.segments {
            let lines = try SegmenterFixture.decodedFrames(
                segment, named: "\(segment.start.index).ts", streams: "v:0", in: directory)
            #expect(lines == ["h264,\(segment.end.durationTicks / 3600)"], "\(segment.start.index).ts")
        }
        // Audio-only segments, PES split between frames: every AAC frame decodes, none lost or repeated.
        let audio = Fixture.run(SegmenterStreams.audioOnly(try Fixture.stream(segments: 9)))
        #expect(audio.status.audioSplits >= 1)
        for segment in audio.segments {
            let lines = try SegmenterFixture.decodedFrames(
                segment, named: "audio-\(segment.start.index).ts", streams: "a:0", in: directory)
            #expect(lines == ["aac,\(try Self.audioFrameStarts(segment.bytes).count)"], "audio-\(segment.start.index)")
        }
    }
}

/// Streams of real encoders: ffmpeg's MPEG-TS muxer over x265.
@Suite(.tags(.endToEnd), .enabled(if: ChildProcess.ffmpegInstalled), .offThePool)
struct EncodedStreamSegmenterTests {
    @Test func anHEVCStreamIsCutAtItsIRAPPicturesAndEachSegmentDecodes() throws {
        let directory = try TemporaryDirectory.make("segmenter-hevc")
        defer { try? FileManager.default.removeItem(at: directory) }
        // 7 s at 25 fps, an IRAP picture every second (CRA with x265's open GOP off: IDR), AAC beside it.
        let encode = try ChildProcess.runBlocking(
            "ffmpeg",
            [
                "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=320x180:rate=25", "-f",
                "lavfi", "-i", "sine=sample_rate=48000", "-t", "7", "-c:v", "libx265", "-preset", "ultrafast",
                "-x265-params", "keyint=25:min-keyint=25:scenecut=0:log-level=error", "-c:a", "aac", "-f", "mpegts",
                "hevc.ts",
            ], in: directory, timeout: .seconds(60))
        #expect(encode.status == 0, "\(encode.standardError)")
        let stream = try [UInt8](Data(contentsOf: directory.appendingPathComponent("hevc.ts")))
        let run = SegmenterFixture.run(stream)
        #expect(run.segments.count >= 2)
        for segment in run.segments {
            let info = try SegmenterFixture.probe(segment)
            #expect(info.startsWithKeyframe && info.tracks.first { $0.kind == .video }?.codec?.hasPrefix("hvc1") == true)
            let name = "cut-\(segment.start.index).ts"
            let lines = try SegmenterFixture.decodedFrames(segment, named: name, streams: "v:0", in: directory)
            if segment.end.index != run.segments.last?.end.index {
                #expect(lines == ["hevc,50"], "\(name): \(lines)")
            }
        }
        // The same HEVC after 4 s of the H.264 test source on the same PIDs (the PMT's stream_type 0x1B becomes
        // 0x24): a codec change, cut at the HEVC stream's first IRAP picture with a discontinuity.
        let switched = SegmenterFixture.run(try SegmenterFixture.stream(segments: 4) + stream)
        let change = try #require(switched.segments.firstIndex { $0.start.discontinuity })
        #expect(change > 0 && switched.status.demuxer.programChanges == 1)
        func videoCodec(_ segment: CutSegment) throws -> String? {
            try SegmenterFixture.probe(segment).tracks.first { $0.kind == .video }?.codec
        }
        #expect(try videoCodec(switched.segments[change - 1])?.hasPrefix("avc1") == true)
        #expect(try videoCodec(switched.segments[change])?.hasPrefix("hvc1") == true)
        #expect(try SegmenterFixture.probe(switched.segments[change]).startsWithKeyframe)
    }
}

/// Streams the test source does not make itself.
enum SegmenterStreams {
    /// `stream` with its video PID moved to `pid` and a PMT that says so (a stream change when it follows the
    /// original).
    static func movingVideo(to pid: UInt16, in stream: [UInt8]) -> [UInt8] {
        rewritingTables(
            stream,
            pmt: ProgramSection.programMap(programNumber: 1, pcrPID: pid, streams: [(0x1B, pid), (0x0F, 0x0101)]),
            moving: [0x0100: pid])
    }

    /// `stream` with its PMT moved to `pid` and a PAT that says so (a stream change when it follows the original).
    static func movingPMT(to pid: UInt16, in stream: [UInt8]) -> [UInt8] {
        rewritingTables(
            stream, pat: ProgramSection.programAssociation(programNumber: 1, pmtPID: pid), moving: [0x1000: pid])
    }

    /// The test source's audio alone (AAC, 48 kHz, 4 frames per PES): its video packets dropped, a PMT that lists
    /// the audio alone.
    static func audioOnly(_ stream: [UInt8]) -> [UInt8] {
        rewritingTables(
            stream, pmt: ProgramSection.programMap(programNumber: 1, pcrPID: 0x0101, streams: [(0x0F, 0x0101)]),
            dropping: [0x0100])
    }

    /// `stream` (the test source's layout: PAT, PMT on 0x1000) with each PAT and PMT packet replaced by `pat` /
    /// `pmt` (nil: the section it carries), written over as many packets as it takes with at most `chunk` bytes of
    /// pointer_field + section each (adaptation-field stuffing fills the rest), their continuity counters renumbered;
    /// the PIDs in `moving` moved, those in `dropping` left out.
    static func rewritingTables(
        _ stream: [UInt8], pat: [UInt8]? = nil, pmt: [UInt8]? = nil, chunk: Int = 184,
        moving: [UInt16: UInt16] = [:], dropping: Set<UInt16> = []
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        var counters: [UInt16: UInt8] = [:]
        for offset in stride(from: 0, to: stream.count, by: 188) {
            let original = UInt16(stream[offset + 1] & 0x1F) << 8 | UInt16(stream[offset + 2])
            if dropping.contains(original) { continue }
            let pid = moving[original] ?? original
            var packet = Array(stream[offset..<(offset + 188)])
            packet[1] = packet[1] & 0xE0 | UInt8(pid >> 8)
            packet[2] = UInt8(pid & 0xFF)
            guard original == 0 || original == 0x1000 else {
                bytes += packet
                continue
            }
            // The section the packet carries (the test source's fit one packet after pointer_field 0).
            let sectionStart = (packet[3] & 0x20 != 0 ? 5 + Int(packet[4]) : 4) + 1
            let carried = packet[sectionStart..<(sectionStart + 3 + (Int(packet[sectionStart + 1] & 0x0F) << 8
                | Int(packet[sectionStart + 2])))]
            let section = (original == 0 ? pat : pmt) ?? Array(carried)
            let payload = [0] + section
            for start in stride(from: 0, to: payload.count, by: chunk) {
                let piece = payload[start..<min(start + chunk, payload.count)]
                let counter = counters[pid, default: 0]
                counters[pid] = (counter + 1) & 0x0F
                var written: [UInt8] = [0x47, (start == 0 ? 0x40 : 0) | UInt8(pid >> 8), UInt8(pid & 0xFF)]
                if piece.count == 184 {
                    written += [0x10 | counter]
                } else {
                    // Adaptation field: its length byte, flags 0, then stuffing up to the payload.
                    let fieldLength = 184 - piece.count - 1
                    written += [0x30 | counter, UInt8(fieldLength)]
                    if fieldLength > 0 { written += [0x00] + [UInt8](repeating: 0xFF, count: fieldLength - 1) }
                }
                bytes += written + piece
            }
        }
        return bytes
    }

    /// `stream` with its H.264 IDR slices turned into non-IDR slices (nal_unit_type 5 to 1): I pictures an encoder
    /// with an open GOP sends, no random access point the segmenter may cut at.
    /// With `keepingEvery` n, every n-th IDR is kept (the test source has one a second: a GOP of n seconds).
    static func withoutIDR(_ stream: [UInt8], keepingEvery: Int? = nil) -> [UInt8] {
        var bytes = stream
        var idr = 0
        for offset in stride(from: 0, to: bytes.count, by: 188) {
            let pid = UInt16(bytes[offset + 1] & 0x1F) << 8 | UInt16(bytes[offset + 2])
            guard pid == 0x0100 else { continue }
            if bytes[offset + 1] & 0x40 != 0, bytes[offset + 3] & 0x20 != 0, bytes[offset + 5] & 0x40 != 0 {
                idr += 1  // random_access_indicator: the test source's IDR access units
            }
            if let keepingEvery, idr % keepingEvery == 1 { continue }
            for index in (offset + 4)..<(offset + 185) where bytes[index] == 0 && bytes[index + 1] == 0
                && bytes[index + 2] == 1 && bytes[index + 3] & 0x1F == 5
            {
                bytes[index + 3] = bytes[index + 3] & 0xE0 | 1
            }
        }
        return bytes
    }

    /// A PMT like the test source's (H.264 on 0x100 carrying the PCR, AAC on 0x101) listing `dataStreams` private
    /// data streams more (PIDs 0x300...): longer than one packet from 36 on.
    static func longProgramMap(dataStreams: Int) -> [UInt8] {
        let extra = (0..<dataStreams).map { (streamType: UInt8(0x06), pid: UInt16(0x0300 + $0)) }
        return ProgramSection.programMap(
            programNumber: 1, pcrPID: 0x0100, streams: [(0x1B, 0x0100), (0x0F, 0x0101)] + extra)
    }
}
