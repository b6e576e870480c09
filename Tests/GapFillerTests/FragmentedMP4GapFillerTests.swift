import Foundation
import GapFiller
import MediaProbe
import TestSupport
import Testing

/// fMP4 filler built from MediaProbe's committed encoder fixtures (H.264/AAC and HEVC), read back with MediaProbe.
@Suite("fMP4 filler", .offThePool)
struct FragmentedMP4GapFillerTests {
    static func fixture(_ name: String) throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("MediaProbeTests/Fixtures/\(name)")
        return [UInt8](try Data(contentsOf: url))
    }

    /// Where each track of `segment` ends (decode time of its last sample plus its duration), by track ID.
    static func trackEnds(_ segment: [UInt8], initSection: InitSectionInfo) throws -> [Int: Int64] {
        var ends: [Int: Int64] = [:]
        for sample in try MediaProbe.fragmentedMP4Samples(segment, initSection: initSection) {
            ends[sample.trackID] = max(ends[sample.trackID] ?? 0, sample.decodeTime + sample.duration)
        }
        return ends
    }

    @Test(arguments: [("fmp4-h264-aac-init.mp4", "fmp4-h264-aac-1.m4s"), ("fmp4-hevc-init.mp4", "fmp4-hevc-0.m4s")])
    func fillerContinuesEveryTrackAndDecodesWithTheInitSection(initName: String, segmentName: String) throws {
        let initBytes = try Self.fixture(initName)
        let segment = try Self.fixture(segmentName)
        let initInfo = try MediaProbe.probeInitSection(initBytes)
        let ends = try Self.trackEnds(segment, initSection: initInfo)
        var filler = try FragmentedMP4GapFiller(initSection: initBytes, after: segment)
        #expect(filler.codecs == initInfo.tracks.filter { $0.kind == .video || $0.kind == .audio }.compactMap(\.codec))

        let first = filler.segment(elapsedMilliseconds: 0, durationMilliseconds: 2000, sequenceNumber: 7)
        let second = filler.segment(elapsedMilliseconds: 2000, durationMilliseconds: 2000, sequenceNumber: 8)
        let firstSamples = try MediaProbe.fragmentedMP4Samples(first, initSection: initInfo)
        let secondSamples = try MediaProbe.fragmentedMP4Samples(second, initSection: initInfo)
        for track in initInfo.tracks where track.kind == .video || track.kind == .audio {
            let a = firstSamples.filter { $0.trackID == track.trackID }
            let b = secondSamples.filter { $0.trackID == track.trackID }
            #expect(!a.isEmpty && !b.isEmpty)
            // The first filler starts where the real segment ended; the second where the first ended.
            #expect(a.first?.decodeTime == ends[track.trackID])
            #expect(b.first?.decodeTime == a.last.map { $0.decodeTime + $0.duration })
            #expect(a.allSatisfy { $0.isSync })
            let total = a.reduce(0) { $0 + $1.duration }
            // 2 s of the track's timescale (audio: whole AAC frames, so up to one frame more).
            #expect(abs(total - 2 * track.timescale) <= (track.kind == .audio ? 1024 * track.timescale / 44_100 : 0))
        }
        let info = try MediaProbe.probeSegment(first, initSection: initInfo)
        #expect(info.startsWithKeyframe)
        #expect(abs(info.duration.seconds - 2) < 0.03)
    }

    @Test func fillerWithAGapStartsWhereThePDTSays() throws {
        let initBytes = try Self.fixture("fmp4-h264-aac-init.mp4")
        let segment = try Self.fixture("fmp4-h264-aac-1.m4s")
        let initInfo = try MediaProbe.probeInitSection(initBytes)
        let video = try #require(initInfo.tracks.first { $0.kind == .video })
        let end = try #require(try Self.trackEnds(segment, initSection: initInfo)[video.trackID])
        var filler = try FragmentedMP4GapFiller(initSection: initBytes, after: segment)
        let later = filler.segment(elapsedMilliseconds: 6000, durationMilliseconds: 1500, sequenceNumber: 1)
        let samples = try MediaProbe.fragmentedMP4Samples(later, initSection: initInfo).filter {
            $0.trackID == video.trackID
        }
        #expect(samples.first?.decodeTime == end + 6 * video.timescale)
        #expect(samples.reduce(0) { $0 + $1.duration } == 3 * video.timescale / 2)
    }

    @Test func aSlotFarAlongTheTimelineWrapsItsDecodeTimesAndAnAbsurdEXTINFIsCappedAtTenMinutes() throws {
        let initBytes = try Self.fixture("fmp4-h264-aac-init.mp4")
        let segment = try Self.fixture("fmp4-h264-aac-1.m4s")
        let initInfo = try MediaProbe.probeInitSection(initBytes)
        let video = try #require(initInfo.tracks.first { $0.kind == .video })
        var filler = try FragmentedMP4GapFiller(initSection: initBytes, after: segment)
        // 2^52 ms at 90 kHz is past 2^63 ticks: the decode time wraps instead of trapping, durations stay exact.
        let far = filler.segment(elapsedMilliseconds: 1 << 52, durationMilliseconds: 2000, sequenceNumber: 1)
        let farVideo = try MediaProbe.fragmentedMP4Samples(far, initSection: initInfo).filter {
            $0.trackID == video.trackID
        }
        #expect(farVideo.reduce(0) { $0 + $1.duration } == 2 * video.timescale)
        let endless = filler.segment(elapsedMilliseconds: 0, durationMilliseconds: .max, sequenceNumber: 2)
        let endlessVideo = try MediaProbe.fragmentedMP4Samples(endless, initSection: initInfo).filter {
            $0.trackID == video.trackID
        }
        #expect(endlessVideo.count == 600)
        #expect(endlessVideo.reduce(0) { $0 + $1.duration } == 600 * video.timescale)
    }

    @Test func anInitSectionWithoutFillableCodecsIsRefused() throws {
        let initBytes = try Self.fixture("fmp4-ac3-init.mp4")
        let segment = try Self.fixture("fmp4-ac3-0.m4s")
        #expect(throws: GapFillerError.self) { try FragmentedMP4GapFiller(initSection: initBytes, after: segment) }
        #expect(throws: GapFillerError.self) { try FragmentedMP4GapFiller(initSection: [1, 2, 3], after: segment) }
    }
}
