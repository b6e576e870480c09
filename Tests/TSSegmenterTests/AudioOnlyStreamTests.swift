import MediaProbe
import TSSegmenter
import TestSupport
import Testing

@testable import MPEGTSWriter

/// Audio-only streams an SRT caller could send, written packet by packet: AAC in PES packets of any length, with or
/// without PES_packet_length, a PCR on the audio PID.
enum AudioOnlyStreams {
    static let pid: UInt16 = 0x0101
    /// 1024 samples at 48 kHz.
    static let frameTicks: Int64 = 1920

    /// One ADTS frame (AAC LC, 48 kHz, stereo, no CRC) of `length` bytes, header included.
    static func adtsFrame(length: Int) -> [UInt8] {
        [0xFF, 0xF1, 0x4C, 0x80 | UInt8(length >> 11 & 3), UInt8(length >> 3 & 0xFF), UInt8(length & 7) << 5 | 0x1F,
         0xFC] + [UInt8](repeating: 0x21, count: length - 7)
    }

    /// A PES of `frames` frames of `frameLength` bytes, PTS `pts`; PES_packet_length 0 unless `bounded`.
    static func pes(
        frames: Int, frameLength: Int, pts: Int64, dts: Int64? = nil, streamID: UInt8 = 0xC0, bounded: Bool = false
    ) -> [UInt8] {
        let payload = (0..<frames).flatMap { _ in adtsFrame(length: frameLength) }
        func timestamp(_ value: Int64, prefix: UInt8) -> [UInt8] {
            [prefix << 4 | UInt8(value >> 29 & 0x0E) | 1, UInt8(value >> 22 & 0xFF), UInt8(value >> 14 & 0xFE) | 1,
             UInt8(value >> 7 & 0xFF), UInt8(value << 1 & 0xFE) | 1]
        }
        let optional = dts.map { timestamp(pts, prefix: 3) + timestamp($0, prefix: 1) } ?? timestamp(pts, prefix: 2)
        let length = bounded ? 3 + optional.count + payload.count : 0
        return [0, 0, 1, streamID, UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), 0x84, dts == nil ? 0x80 : 0xC0,
                UInt8(optional.count)] + optional + payload
    }

    /// `pes` in transport packets on `pid`; the first carries `pcr` (a 90 kHz base) when given, and
    /// `adaptationOnly` packets without payload (a PCR each) follow it, their counter repeating the previous one's.
    static func packets(
        _ pes: [UInt8], pid: UInt16 = pid, counter: inout UInt8, pcr: Int64? = nil, adaptationOnly: Int = 0
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        var offset = 0
        while offset < pes.count {
            let first = offset == 0
            var field: [UInt8] = []
            if first, let pcr { field = [0x10] + pcrBytes(pcr) }
            let room = 184 - (field.isEmpty ? 0 : 1 + field.count)
            let taken = min(room, pes.count - offset)
            if taken < room {
                if field.isEmpty {
                    field = room - taken > 1 ? [0x00] + [UInt8](repeating: 0xFF, count: room - taken - 2) : []
                } else {
                    field += [UInt8](repeating: 0xFF, count: room - taken)
                }
            }
            let hasField = !field.isEmpty || 184 - taken == 1
            bytes += [0x47, (first ? 0x40 : 0) | UInt8(pid >> 8), UInt8(pid & 0xFF), (hasField ? 0x30 : 0x10) | counter]
            if hasField { bytes += [UInt8(field.count)] + field }
            bytes += pes[offset..<(offset + taken)]
            offset += taken
            counter = (counter + 1) & 0x0F
            if first {
                for _ in 0..<adaptationOnly {
                    bytes += [0x47, UInt8(pid >> 8), UInt8(pid & 0xFF), 0x20 | (counter + 15) & 0x0F, 183, 0x10]
                        + pcrBytes(pcr ?? 0) + [UInt8](repeating: 0xFF, count: 176)
                }
            }
        }
        return bytes
    }

    static func pcrBytes(_ base: Int64) -> [UInt8] {
        [UInt8(base >> 25 & 0xFF), UInt8(base >> 17 & 0xFF), UInt8(base >> 9 & 0xFF), UInt8(base >> 1 & 0xFF),
         UInt8(base & 1) << 7 | 0x7E, 0]
    }

    /// PAT (program 1, PMT on 0x1000) and a PMT listing the AAC stream alone, carrying the PCR.
    static func tables() -> [UInt8] {
        section(ProgramSection.programAssociation(programNumber: 1, pmtPID: 0x1000), pid: 0)
            + section(ProgramSection.programMap(programNumber: 1, pcrPID: pid, streams: [(0x0F, pid)]), pid: 0x1000)
    }

    static func section(_ section: [UInt8], pid: UInt16, counter: UInt8 = 0) -> [UInt8] {
        let packet = [0x47, 0x40 | UInt8(pid >> 8), UInt8(pid & 0xFF), 0x10 | counter, 0] + section
        return packet + [UInt8](repeating: 0xFF, count: 188 - packet.count)
    }
}

@Suite(.offThePool) struct AudioOnlyStreamTests {
    typealias Fixture = SegmenterFixture

    @Test func aHugeUnboundedAudioPESAcrossABoundaryIsNotSplitIntoPESTooLongToWrite() throws {
        // PES_packet_length 0 and 160 kB of ADTS frames: the frame nearest the 3.5 s boundary leaves more than a
        // PES packet can hold (64 kB) on one side.
        var counter: UInt8 = 0
        var stream = AudioOnlyStreams.tables()
        var pts: Int64 = 126_000
        while pts < 290_000 {
            stream += AudioOnlyStreams.packets(
                AudioOnlyStreams.pes(frames: 4, frameLength: 200, pts: pts), counter: &counter)
            pts += 4 * AudioOnlyStreams.frameTicks
        }
        let huge = pts
        stream += AudioOnlyStreams.packets(
            AudioOnlyStreams.pes(frames: 40, frameLength: 4000, pts: pts), counter: &counter)
        pts += 40 * AudioOnlyStreams.frameTicks
        while pts < 600_000 {
            stream += AudioOnlyStreams.packets(
                AudioOnlyStreams.pes(frames: 4, frameLength: 200, pts: pts), counter: &counter)
            pts += 4 * AudioOnlyStreams.frameTicks
        }
        let run = Fixture.run(stream)
        #expect(run.status.audioSplits == 0)
        // Cut at the huge PES's start, nearer the boundary than its end; each segment reads whole.
        #expect(run.segments.map(\.start.decodeTime).contains(huge))
        #expect(run.segments.count >= 2)
        for segment in run.segments { #expect(try Fixture.probe(segment).tracks.map(\.kind) == [.audio]) }
    }

    @Test func packetsWithoutPayloadRepeatTheRenumberedCounterOfThePacketBefore() throws {
        // A PCR on the audio PID in adaptation-only packets after each PES's first packet; the caller's counters
        // start at 7, the segments' run from 0.
        var counter: UInt8 = 7
        var stream = AudioOnlyStreams.tables()
        var pts: Int64 = 126_000
        while pts < 700_000 {
            stream += AudioOnlyStreams.packets(
                AudioOnlyStreams.pes(frames: 4, frameLength: 300, pts: pts, bounded: true), counter: &counter,
                pcr: pts - 9000, adaptationOnly: 2)
            pts += 4 * AudioOnlyStreams.frameTicks
        }
        let run = Fixture.run(stream)
        #expect(run.segments.count >= 3 && run.status.audioSplits >= 1)
        for segment in run.segments {
            let packets = try TransportStreamReader.packets(segment.bytes).filter { $0.pid == AudioOnlyStreams.pid }
            #expect(packets.contains { !$0.hasPayload })
            for (previous, packet) in zip(packets, packets.dropFirst()) {
                let expected = packet.hasPayload ? (previous.continuityCounter + 1) & 0x0F : previous.continuityCounter
                #expect(packet.continuityCounter == expected, "packet \(packet.index)")
            }
        }
    }

    /// An audio-only rendition renumbers its audio PID's counters within each segment, from 0, as a video rendition
    /// renumbers its PAT/PMT (whose media counters the encoder's, passed through, keep the same across origins): two
    /// origins joining the stream at different moments, so at different counters, cut the same segments to the byte.
    @Test func twoOriginsJoiningAnAudioOnlyStreamAtDifferentCountersCutTheSameBytes() throws {
        var counter: UInt8 = 5
        var stream: [UInt8] = []
        var joins: [(offset: Int, pts: Int64)] = []
        var pts: Int64 = 126_000
        while pts < 900_000 {
            joins.append((stream.count, pts))
            stream += AudioOnlyStreams.tables()
            stream += AudioOnlyStreams.packets(
                AudioOnlyStreams.pes(frames: 4, frameLength: 300, pts: pts, bounded: true), counter: &counter,
                pcr: pts - 9000)
            pts += 4 * AudioOnlyStreams.frameTicks
        }
        let early = Fixture.run(stream)
        // The second origin receives the stream from a later PES, whose first counter is not the first one's, and as
        // much later on the wall clock: the same anchor.
        let join = joins[joins.count / 3 + 1]
        let delay = (join.pts - joins[0].pts) / 90
        let late = Fixture.run(Array(stream[join.offset...]), arrival: Fixture.arrival + delay)
        let common = late.segments.dropFirst().filter { segment in
            early.segments.contains { $0.start.decodeTime == segment.start.decodeTime }
        }
        #expect(common.count >= 2)
        for segment in common {
            let same = try #require(early.segments.first { $0.start.decodeTime == segment.start.decodeTime })
            #expect(segment.bytes == same.bytes, "segment at \(segment.start.decodeTime)")
            let counters = try TransportStreamReader.packets(segment.bytes)
                .filter { $0.pid == AudioOnlyStreams.pid }.map(\.continuityCounter)
            #expect(counters == counters.indices.map { UInt8($0 % 16) })
        }
    }

    /// AAC PES with stream_id 0xC1, a DTS 3000 ticks before the PTS and a PCR in the first packet.
    static func streamWithDTSAndAnotherStreamID() -> (stream: [UInt8], pesStarts: [Int64]) {
        var counter: UInt8 = 0
        var stream = AudioOnlyStreams.tables()
        var pts: Int64 = 126_000
        var starts: [Int64] = []
        while pts < 700_000 {
            starts.append(pts)
            stream += AudioOnlyStreams.packets(
                AudioOnlyStreams.pes(frames: 4, frameLength: 300, pts: pts, dts: pts - 3000, streamID: 0xC1,
                                     bounded: true),
                counter: &counter, pcr: pts - 9000)
            pts += 4 * AudioOnlyStreams.frameTicks
        }
        return (stream, starts)
    }

    @Test func aSplitPESKeepsItsStreamIDAndTakesTheFramesPTS() throws {
        let (stream, starts) = Self.streamWithDTSAndAnotherStreamID()
        let frames = Set(starts.flatMap { start in (0..<4).map { start + Int64($0) * AudioOnlyStreams.frameTicks } })
        let run = Fixture.run(stream)
        #expect(run.segments.count >= 3 && run.status.audioSplits >= 1)
        for segment in run.segments {
            let units = try TransportStreamReader.pesUnits(
                TransportStreamReader.packets(segment.bytes), pid: AudioOnlyStreams.pid)
            #expect(units.allSatisfy { $0.streamID == 0xC1 })
            #expect(units.allSatisfy { frames.contains($0.pts ?? -1) })
        }
    }

    @Test func theSplitPESStartingASegmentIsARandomAccessPointCarryingThePCR() throws {
        let (stream, starts) = Self.streamWithDTSAndAnotherStreamID()
        let run = Fixture.run(stream)
        var splits = 0
        for segment in run.segments.dropFirst() {
            let units = try TransportStreamReader.pesUnits(
                TransportStreamReader.packets(segment.bytes), pid: AudioOnlyStreams.pid)
            let first = try #require(units.first)
            guard !starts.contains(first.pts ?? -1) else { continue }
            splits += 1
            #expect(first.firstPacket.adaptation?.randomAccess == true)
            // The PCR of the PES split: 9000 ticks before its PTS, in 27 MHz units.
            let split = try #require(starts.last { $0 < first.pts ?? 0 })
            #expect(first.firstPacket.adaptation?.pcr == (split - 9000) * 300)
        }
        #expect(splits >= 1)
    }

    @Test func theMuxerRefusesAnAudioPESLongerThanPESPacketLengthHoldsAndWritesNothing() {
        var muxer = TransportStreamMuxer()
        var output: [UInt8] = []
        let frames = (0..<10).map { _ in AudioOnlyStreams.adtsFrame(length: 7000) }
        #expect(!muxer.writeAudio(frames, pts: 0, into: &output))
        #expect(output.isEmpty)
        #expect(muxer.writeAudio(frames.prefix(9), pts: 0, into: &output) && !output.isEmpty)
    }
}
