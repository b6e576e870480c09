import Foundation
import GapFiller
import MPEGTSWriter
import MediaProbe
import TestSource
import TestSupport
import Testing

/// What a filler segment looks like when read back.
struct SegmentFacts {
    let info: SegmentInfo
    let contents: TransportStreamContents
    let videoPTS: [Int64]
    let audioPTS: [Int64]
    /// Continuity counter of the first payload-carrying packet of each PID.
    let firstCounters: [Int: UInt8]
    let firstPIDs: [Int]

    init(_ bytes: [UInt8]) throws {
        info = try MediaProbe.probeSegment(bytes)
        contents = try TransportStreamContents(bytes)
        videoPTS = (contents.pesPackets[0x100] ?? []).compactMap(\.pts)
        audioPTS = (contents.pesPackets[0x101] ?? []).compactMap(\.pts)
        var counters: [Int: UInt8] = [:]
        var pids: [Int] = []
        for packet in try TransportStreamReader.packets(bytes) {
            let pid = Int(packet.pid)
            if pids.count < 3 { pids.append(pid) }
            if packet.hasPayload, counters[pid] == nil { counters[pid] = packet.continuityCounter }
        }
        firstCounters = counters
        firstPIDs = pids
    }

    var codecs: [String] { info.tracks.compactMap(\.codec) }

    /// Where the next audio frame is due after this segment's last one.
    var audioEnd: Int64? {
        guard let last = contents.pesPackets[0x101]?.last, let pts = last.pts else { return nil }
        let scan = last.payload.withUnsafeBytes { bytes in
            Result { () throws(ProbeError) in try ADTSHeader.scan(bytes) }
        }
        guard case .success(let result) = scan else { return nil }
        return pts + Int64(result.samples) * 90_000 / Int64(result.first.sampleRate)
    }
}

@Suite("MPEG-TS filler continuing a segment", .offThePool)
struct TransportStreamGapFillerTests {
    static func sourceSegment(_ profile: String = "360p") throws -> GeneratedSegment {
        var generator = try TestStreamGenerator(profile: #require(TestSourceProfile.named(profile)), segmentDuration: 2)
        return generator.nextSegment()
    }

    @Test func firstFillerContinuesTheSegment() throws {
        let source = try Self.sourceSegment()
        let sourceFacts = try SegmentFacts(source.bytes)
        var filler = try TransportStreamGapFiller(after: source.bytes)
        let start = source.startPTS + source.durationTicks
        #expect(start == 306_000)
        let facts = try SegmentFacts(filler.segment(startPTS: start, durationMilliseconds: 2000))

        #expect(facts.info.startTime == MediaTime(ticks: 306_000, timescale: 90_000))
        #expect(facts.info.duration == MediaTime(ticks: 180_000, timescale: 90_000))
        #expect(facts.info.startsWithKeyframe)
        #expect(facts.info.startsWithPATAndPMT)
        #expect(facts.firstPIDs == [0x0000, 0x1000, 0x0100])
        #expect(facts.codecs == ["avc1.4d401e", "mp4a.40.2"])
        #expect(facts.codecs == sourceFacts.codecs)
        #expect(filler.codecs == sourceFacts.codecs)
        #expect(facts.contents.patSection == sourceFacts.contents.patSection)
        #expect(facts.contents.pmtSection == sourceFacts.contents.pmtSection)
        // One IDR a second, each with SPS and PPS, nothing else but the AUD.
        #expect(facts.videoPTS == [306_000, 396_000])
        for packet in facts.contents.pesPackets[0x100] ?? [] {
            let units = TransportStreamContents.annexBNALUnits(in: packet.payload)
            let types = units.map { packet.payload[$0.lowerBound] & 0x1F }
            #expect(types == [9, 7, 8, 5])
        }
        // Audio continues on the segment's frame grid: 94 frames of 1920 ticks after 126 000.
        #expect(sourceFacts.audioEnd == 306_480)
        #expect(facts.audioPTS.first == 306_480)
        let expectedEnd: Int64 = 306_480 + 94 * 1920
        #expect(facts.audioEnd == expectedEnd)
        // Continuity counters run on from the segment's last packets.
        for (pid, counter) in facts.firstCounters {
            let last = try #require(sourceFacts.contents.lastContinuityCounters[pid])
            #expect(counter == (last + 1) & 0x0F, "PID \(pid)")
        }
    }

    @Test func consecutiveFillersContinueEachOther() throws {
        let source = try Self.sourceSegment("180p")
        var filler = try TransportStreamGapFiller(after: source.bytes)
        let start = source.startPTS + source.durationTicks
        let first = try SegmentFacts(filler.segment(startPTS: start, durationMilliseconds: 2000))
        let second = try SegmentFacts(filler.segment(startPTS: start + 180_000, durationMilliseconds: 2000))
        #expect(second.info.startTime.ticks == start + 180_000)
        #expect(second.info.duration.ticks == 180_000)
        #expect(second.videoPTS == [start + 180_000, start + 270_000])
        #expect(second.audioPTS.first == first.audioEnd)
        for (pid, counter) in second.firstCounters {
            let last = try #require(first.contents.lastContinuityCounters[pid])
            #expect(counter == (last + 1) & 0x0F, "PID \(pid)")
        }
    }

    @Test(arguments: [1001, 1500, 2002, 2500, 6000, 4004])
    func durationIsExactForAnyEXTINF(milliseconds: Int64) throws {
        let source = try Self.sourceSegment()
        var filler = try TransportStreamGapFiller(after: source.bytes)
        let facts = try SegmentFacts(filler.segment(startPTS: 1_000_000, durationMilliseconds: milliseconds))
        #expect(facts.info.startTime.ticks == 1_000_000)
        #expect(facts.info.duration.ticks == milliseconds * 90)
        #expect(facts.videoPTS.count == Int((milliseconds + 999) / 1000))
        let lastAudio = try #require(facts.audioPTS.last)
        #expect(lastAudio < 1_000_000 + milliseconds * 90)
    }

    @Test func timestampsWrapAt2To33() throws {
        let source = try Self.sourceSegment()
        var filler = try TransportStreamGapFiller(after: source.bytes)
        let start: Int64 = (1 << 33) - 90_000
        let facts = try SegmentFacts(filler.segment(startPTS: start, durationMilliseconds: 2000))
        #expect(facts.info.startTime.ticks == start)
        #expect(facts.info.duration.ticks == 180_000)
        #expect(facts.videoPTS == [start, 0])
        // A start given unwrapped means the same.
        let again = try SegmentFacts(filler.segment(startPTS: (1 << 33) + 90_000, durationMilliseconds: 2000))
        #expect(again.info.startTime.ticks == 90_000)
    }

    @Test func slateLoopsTheTestSourceSlate() throws {
        let profile = try #require(TestSourceProfile.named("360p"))
        var generator = try TestStreamGenerator(profile: profile, segmentDuration: 2)
        let source = generator.nextSegment()
        let slate = SlateGapFillerSource(
            accessUnits: generator.slateAccessUnits, frameDurationTicks: profile.frameDurationTicks)
        var filler = try source.bytes.withUnsafeBytes { bytes throws(GapFillerError) in
            try slate.makeFiller(after: bytes)
        }
        let facts = try SegmentFacts(filler.segment(startPTS: 306_000, durationMilliseconds: 2000))
        #expect(facts.info.startTime.ticks == 306_000)
        #expect(facts.info.duration.ticks == 180_000)
        #expect(facts.info.startsWithKeyframe)
        #expect(facts.videoPTS == (0..<50).map { 306_000 + Int64($0) * 3600 })
        #expect(facts.contents.pesPackets[0x100]?.first?.payload == generator.slateAccessUnits[0])
        #expect(facts.codecs == ["avc1.4d401e", "mp4a.40.2"])
    }

    @Test func mediaThatCannotBeContinuedThrows() throws {
        #expect(throws: GapFillerError.self) { try TransportStreamGapFiller(after: [UInt8](repeating: 0, count: 376)) }
        // A segment whose only video frame is a P-frame: no keyframe to repeat.
        let profile = try #require(TestSourceProfile.named("180p"))
        let generator = try TestStreamGenerator(profile: profile, segmentDuration: 2)
        var muxer = TransportStreamMuxer()
        var bytes: [UInt8] = []
        muxer.writeProgramTables(into: &bytes)
        muxer.writeVideo(generator.slateAccessUnits[1], pts: 126_000, pcr: 117_000, randomAccess: false, into: &bytes)
        let silence = try SilentAACFrame(audioObjectType: 2, samplingFrequencyIndex: 3, channelConfiguration: 2)
        muxer.writeAudio([silence.bytes], pts: 126_000, into: &bytes)
        let error = #expect(throws: GapFillerError.self) { try TransportStreamGapFiller(after: bytes) }
        #expect(error?.message == "no H.264 IDR access unit in the segment")
        // The slate needs no keyframe from the segment.
        #expect(throws: Never.self) {
            try TransportStreamGapFiller(
                after: bytes, picture: .loop(accessUnits: generator.slateAccessUnits, frameDurationTicks: 3600))
        }
    }
}
