import MediaProbe
import TSSegmenter
import TestSupport
import Testing

@testable import MPEGTSWriter

@Suite(.offThePool) struct MultiProgramStreamTests {
    typealias Fixture = SegmenterFixture

    @Test func aSecondProgramSharingThePMTPIDIsNoProgramChange() throws {
        // A PAT listing programs 1 and 2, both with their PMT on 0x1000; program 2's PMT (H.264 on 0x200) follows
        // each of program 1's: the segmenter reads program 1 only, cuts as for the stream alone.
        var pat: [UInt8] = [0x00, 0xB0, 17, 0x00, 0x01, 0xC1, 0, 0, 0x00, 0x01, 0xF0, 0x00, 0x00, 0x02, 0xF0, 0x00]
        pat += withUnsafeBytes(of: ProgramSection.crc32(pat).bigEndian, Array.init)
        let other = AudioOnlyStreams.section(
            ProgramSection.programMap(programNumber: 2, pcrPID: 0x0200, streams: [(0x1B, 0x0200)]), pid: 0x1000)
        let plain = try Fixture.stream(segments: 10)
        let tables = SegmenterStreams.rewritingTables(plain, pat: pat)
        var stream: [UInt8] = []
        var counter: UInt8 = 0
        for offset in stride(from: 0, to: tables.count, by: 188) {
            let pid = UInt16(tables[offset + 1] & 0x1F) << 8 | UInt16(tables[offset + 2])
            let packets = pid == 0x1000 ? [Array(tables[offset..<(offset + 188)]), other] : [Array(tables[offset..<(offset + 188)])]
            for var packet in packets {
                if pid == 0x1000 {
                    packet[3] = packet[3] & 0xF0 | counter
                    counter = (counter + 1) & 0x0F
                }
                stream += packet
            }
        }
        let run = Fixture.run(stream)
        #expect(run.status.demuxer.programChanges == 0 && run.status.demuxer.malformed == 0)
        #expect(!run.segments.contains { $0.start.discontinuity })
        #expect(run.segments.map(\.start.decodeTime) == Fixture.run(plain).segments.map(\.start.decodeTime))
        for segment in run.segments {
            #expect(try Fixture.probe(segment).tracks.map(\.trackID).sorted() == [0x0100, 0x0101])
        }
    }

    @Test func aPATWithoutSectionSyntaxIndicatorIsMalformedNotRead() throws {
        // A short-form PAT (section_syntax_indicator 0, its CRC wrong) 2 s in moving the PMT to 0x1100: ignored.
        var pat = ProgramSection.programAssociation(programNumber: 1, pmtPID: 0x1100)
        pat[1] &= 0x7F
        pat[pat.count - 1] ^= 0xFF
        let plain = try Fixture.stream(segments: 10)
        let offset = plain.count / 10 * 2
        let stream = Array(plain[..<offset]) + AudioOnlyStreams.section(pat, pid: 0, counter: 15) + plain[offset...]
        let run = Fixture.run(stream)
        #expect(run.status.demuxer.programChanges == 0 && run.status.demuxer.malformed >= 1)
        #expect(run.segments.map(\.start.decodeTime) == Fixture.run(plain).segments.map(\.start.decodeTime))
    }
}
