import MediaProbe
import TSSegmenter
import TestSource
import TestSupport
import Testing

private typealias Fixture = SegmenterFixture

/// One stream carrying several renditions (several programs, several audio tracks): each segmenter keeps the program
/// or stream its selector picks, under a PAT and PMT of its own, on one anchor.
@Suite(.offThePool) struct StreamSelectionTests {
    @Test func aLanguageSelectsOneAudioStreamAndItsSegmentsCarryItAloneUnderTheirOwnTables() throws {
        let stream = try Self.twoLanguages()
        for (language, pid) in [("fra", UInt16(0x0102)), ("eng", UInt16(0x0101))] {
            let run = Self.run(stream, selectors: [TransportStreamSelector(language: language)])[0]
            #expect(run.segments.count >= 3, "\(language)")
            for segment in run.segments {
                let packets = try TransportStreamReader.packets(segment.bytes)
                #expect(Set(packets.map(\.pid)) == [0, 0x1000, pid], "\(language)")
                let pmt = try TransportStreamReader.section(in: packets[1])
                let map = try TransportStreamReader.programMap(pmt)
                #expect(map.streams.map(\.1) == [pid] && map.pcrPID == pid)
                // The stream's language descriptor goes with it (players name the rendition from it).
                #expect(pmt.starts(with: [0x0A, 0x04] + Array(language.utf8), at: 17))
                let info = try Fixture.probe(segment)
                #expect(info.tracks.map(\.kind) == [.audio] && info.startsWithPATAndPMT)
            }
        }
        // A language the stream does not carry: nothing is cut.
        #expect(Self.run(stream, selectors: [TransportStreamSelector(language: "spa")])[0].segments.isEmpty)
    }

    @Test func theVideoOfAStreamWithTwoAudioTracksIsCutAloneAtTheSameKeyframes() throws {
        let stream = try Self.twoLanguages()
        let whole = Fixture.run(stream)
        let video = Self.run(stream, selectors: [TransportStreamSelector(kind: .video)])[0]
        #expect(video.segments.map(\.start.decodeTime) == whole.segments.map(\.start.decodeTime))
        for segment in video.segments {
            let packets = try TransportStreamReader.packets(segment.bytes)
            #expect(Set(packets.map(\.pid)) == [0, 0x1000, 0x0100])
            #expect(try Fixture.probe(segment).tracks.map(\.kind) == [.video])
        }
    }

    @Test func aProgramNumberSelectsThatProgramOfTwoWithAPATListingItAlone() throws {
        let stream = try Self.twoPrograms()
        let runs = Self.run(
            stream, selectors: [TransportStreamSelector(program: 2), TransportStreamSelector(program: 1)])
        let (second, first) = (runs[0], runs[1])
        #expect(second.segments.count >= 3)
        #expect(second.segments.map(\.start.decodeTime) == first.segments.map(\.start.decodeTime))
        for segment in second.segments {
            let packets = try TransportStreamReader.packets(segment.bytes)
            #expect(Set(packets.map(\.pid)) == [0, 0x1100, 0x0200, 0x0201])
            let pat = try TransportStreamReader.section(in: packets[0])
            #expect(Array(pat[8..<12]) == [0x00, 0x02, 0xE0 | 0x11, 0x00] && pat.count == 16)
            let map = try TransportStreamReader.programMap(try TransportStreamReader.section(in: packets[1]))
            #expect(map.streams.map(\.1) == [0x0200, 0x0201])
            #expect(try Fixture.probe(segment).tracks.map(\.kind) == [.video, .audio])
        }
        for segment in first.segments {
            #expect(Set(try TransportStreamReader.packets(segment.bytes).map(\.pid)) == [0, 0x1000, 0x0100, 0x0101])
        }
    }

    @Test func renditionsCutFromOneStreamShareTheAnchorOfTheFirstToAnchor() throws {
        // The video's first second is missing: the audio anchors on its first frame (PTS 1.4 s), the video only on its
        // first keyframe (2.4 s), arriving at the same moment. Alone, each rounds its own anchor: 1 s apart, so the
        // video would cut on another grid (keyframes after 0.5 s + 2k) than the audio (1.5 s + 2k).
        let stream = try Self.videoJoiningLate()
        let selectors = [TransportStreamSelector(kind: .audio), TransportStreamSelector(kind: .video)]
        let alone = Self.run(stream, selectors: selectors, sharing: false)
        #expect(alone[1].segments.dropFirst().allSatisfy { ($0.start.decodeTime - 45_000) % 180_000 < 90_000 })
        let shared = Self.run(stream, selectors: selectors, sharing: true)
        let (audio, video) = (shared[0], shared[1])
        #expect(audio.segments.count >= 3 && video.segments.count >= 3)
        // Boundaries at PTS 1.5 s + k x 2 s (ticks 135 000 + k x 180 000) for both: the audio cut at the frame
        // nearest each, the video at the first keyframe at or after it (a second later: keyframes at 1.4 s + n).
        for segment in audio.segments.dropFirst() {
            let offset = (segment.start.decodeTime - 135_000 + 90_000) % 180_000 - 90_000
            #expect(abs(offset) <= 1920, "audio starts \(segment.start.decodeTime)")
        }
        for segment in video.segments {
            #expect((segment.start.decodeTime - 135_000) % 180_000 < 90_000, "video starts \(segment.start.decodeTime)")
        }
    }

    // MARK: - Streams

    /// The test source with its audio twice: PID 0x101 tagged `eng`, a copy on 0x102 tagged `fra` (ISO 639
    /// descriptors in the PMT, as ffmpeg writes them for `-metadata:s:a:N language=`).
    static func twoLanguages() throws -> [UInt8] {
        let source = try Fixture.stream(segments: 7)
        var bytes: [UInt8] = []
        for offset in stride(from: 0, to: source.count, by: 188) {
            let packet = source[offset..<(offset + 188)]
            bytes += packet
            if UInt16(packet[offset + 1] & 0x1F) << 8 | UInt16(packet[offset + 2]) == 0x0101 {
                bytes += [0x47, packet[offset + 1] & 0xE0 | 0x01, 0x02] + packet[(offset + 3)...]
            }
        }
        func language(_ code: String) -> [UInt8] { [0x0A, 0x04] + Array(code.utf8) + [0x00] }
        let pmt = section(
            tableID: 0x02, extension: 1,
            body: [0xE1, 0x00, 0xF0, 0x00]
                + [0x1B, 0xE1, 0x00, 0xF0, 0x00]
                + [0x0F, 0xE1, 0x01, 0xF0, 0x06] + language("eng")
                + [0x0F, 0xE1, 0x02, 0xF0, 0x06] + language("fra"))
        return SegmenterStreams.rewritingTables(bytes, pmt: pmt)
    }

    /// Two programs (an MPTS): program 1 the test source (PMT 0x1000, PIDs 0x100/0x101), program 2 the same media on
    /// PMT 0x1100, PIDs 0x200/0x201; one PAT lists both.
    static func twoPrograms() throws -> [UInt8] {
        let source = try Fixture.stream(segments: 7)
        let pat = section(tableID: 0x00, extension: 1, body: [0x00, 0x01, 0xF0, 0x00, 0x00, 0x02, 0xE0 | 0x11, 0x00])
        let first = SegmenterStreams.rewritingTables(source, pat: pat)
        let pmt = section(
            tableID: 0x02, extension: 2,
            body: [0xE2, 0x00, 0xF0, 0x00] + [0x1B, 0xE2, 0x00, 0xF0, 0x00] + [0x0F, 0xE2, 0x01, 0xF0, 0x00])
        let second = SegmenterStreams.rewritingTables(
            source, pat: pat, pmt: pmt, moving: [0x1000: 0x1100, 0x0100: 0x0200, 0x0101: 0x0201])
        var bytes: [UInt8] = []
        for offset in stride(from: 0, to: first.count, by: 188) {
            bytes += first[offset..<(offset + 188)]
            // The PAT once (its copy in the second stream would repeat the counter: a duplicate).
            if second[offset + 1] & 0x1F != 0 || second[offset + 2] != 0 { bytes += second[offset..<(offset + 188)] }
        }
        return bytes
    }

    /// The test source (1 s segments, a keyframe each) with the video of its first second left out.
    static func videoJoiningLate() throws -> [UInt8] {
        var generator = try TestStreamGenerator(
            profile: TestSourceProfile.named("360p")!, segmentDuration: 1, startPTS: TestStreamGenerator.defaultStartPTS
        )
        let first = generator.nextSegment().bytes
        var bytes: [UInt8] = []
        for offset in stride(from: 0, to: first.count, by: 188)
        where UInt16(first[offset + 1] & 0x1F) << 8 | UInt16(first[offset + 2]) != 0x0100 {
            bytes += first[offset..<(offset + 188)]
        }
        for _ in 0..<8 { bytes += generator.nextSegment().bytes }
        return bytes
    }

    /// A long-form PSI section (version 0, current) around `body`, its length and CRC set.
    static func section(tableID: UInt8, extension id: UInt16, body: [UInt8]) -> [UInt8] {
        let length = 5 + body.count + 4
        var bytes: [UInt8] = [
            tableID, 0xB0 | UInt8(length >> 8), UInt8(length & 0xFF), UInt8(id >> 8), UInt8(id & 0xFF),
        ]
        bytes += [0xC1, 0x00, 0x00] + body
        let crc = TransportStreamReader.crc(bytes)
        return bytes + [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)]
    }

    /// Feeds `bytes` to one segmenter per selector, 1316 bytes (an SRT payload) to each in turn as the input does, all
    /// arriving at `Fixture.arrival`; `sharing`: on one anchor.
    static func run(
        _ bytes: [UInt8], selectors: [TransportStreamSelector], sharing: Bool = true
    ) -> [SegmenterRun] {
        let anchor = sharing ? SharedStreamAnchor() : nil
        var segmenters = selectors.map {
            TransportStreamSegmenter(
                configuration: .init(segmentDurationMilliseconds: 2000, selector: $0), sharedAnchor: anchor)
        }
        var events = [[TransportStreamSegmenter.Event]](repeating: [], count: selectors.count)
        bytes.withUnsafeBytes { buffer in
            for start in stride(from: 0, to: buffer.count, by: 1316) {
                let piece = UnsafeRawBufferPointer(rebasing: buffer[start..<min(start + 1316, buffer.count)])
                for index in segmenters.indices {
                    events[index] += segmenters[index].consume(piece, arrivalMilliseconds: Fixture.arrival)
                }
            }
        }
        return segmenters.indices.map { index in
            var segmenter = segmenters[index]
            let all = events[index] + segmenter.finish()
            return SegmenterRun(events: all, status: segmenter.status)
        }
    }
}

extension Array where Element == UInt8 {
    fileprivate func starts(with prefix: [UInt8], at offset: Int) -> Bool {
        offset + prefix.count <= count && Array(self[offset..<(offset + prefix.count)]) == prefix
    }
}
