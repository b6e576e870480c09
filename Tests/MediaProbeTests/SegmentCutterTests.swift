import TestSupport
import Testing

@testable import MediaProbe

/// Cutting segments into Low-Latency HLS parts while their bytes arrive (`TransportStreamCutter`, `FragmentCutter`).
@Suite("Segment cutters", .offThePool)
struct SegmentCutterTests {

    static func seconds(_ value: Double) -> MediaTime { MediaTime(ticks: Int64(value * 1000), timescale: 1000) }

    /// Feeds `bytes` in pieces ending at `splits` and returns every cut; checks `settledOffset` never goes back
    /// and never passes a later cut.
    static func cut(
        _ bytes: [UInt8], with cutter: some SegmentCutter, splits: [Int] = []
    ) throws -> [CutPoint] {
        var cutter = cutter
        var cuts: [CutPoint] = []
        var settled: [Int] = []
        var start = 0
        for end in splits + [bytes.count] where end >= start {
            let found = try bytes.withUnsafeBytes { raw in
                try cutter.consume(UnsafeRawBufferPointer(rebasing: raw[start..<end]))
            }
            cuts += found
            settled.append(cutter.settledOffset)
            #expect(cutter.settledOffset <= end)
            start = end
        }
        #expect(settled == settled.sorted(), "settledOffset went back")
        // A cut is never before bytes already settled when it was found: checked by feeding whole vs split below.
        return cuts
    }

    static func randomSplits(count: Int, seed: UInt64) -> [Int] {
        var random = SplitMix64(seed: seed)
        var splits: [Int] = []
        var offset = 0
        while true {
            // Mostly small pieces (inside packets and headers), sometimes large ones.
            offset +=
                Bool.random(using: &random)
                ? Int.random(in: 1...40, using: &random) : Int.random(in: 1...3000, using: &random)
            guard offset < count else { return splits }
            splits.append(offset)
        }
    }

    /// The 90 kHz duration of each part but the last, from the cuts' decode times.
    static func durations(_ cuts: [CutPoint]) -> [Int64] {
        zip(cuts, cuts.dropFirst()).map { MPEGTimestamp.unwrap($1.decodeTime, near: $0.decodeTime) - $0.decodeTime }
    }

    /// Parts but the last are at most the target, and at least 85 % of it unless independent (HLS rule 38: a part
    /// closed early by a keyframe is no exception).
    static func expectSizes(_ cuts: [CutPoint], targetTicks: Int64, name: String) {
        for (index, duration) in durations(cuts).enumerated() {
            #expect(duration <= targetTicks, "\(name): part \(index) lasts \(duration) ticks")
            if !cuts[index].independent {
                #expect(duration * 100 >= targetTicks * 85, "\(name): part \(index) lasts only \(duration) ticks")
            }
        }
    }

    /// Where the access unit of a TS cut starts: the first packet at or after the cut that is not PAT, PMT or SDT.
    static func accessUnitStart(_ bytes: [UInt8], cut: Int, pmtPID: Int) -> Int {
        var offset = cut
        while offset + 188 <= bytes.count {
            let pid = Int(bytes[offset + 1] & 0x1F) << 8 | Int(bytes[offset + 2])
            if pid != 0, pid != 0x11, pid != pmtPID { return offset }
            offset += 188
        }
        return offset
    }

    @Test(
        "MPEG-TS in 200 random splits cuts as whole: parts 85-100 % of target, independent exactly at keyframes",
        arguments: [
            ("ts-h264-aac-0.ts", 0.5), ("ts-h264-two-gops-0.ts", 0.4), ("ts-h264-25fps-cut.ts", 0.4),
            ("ts-h264-50fps-cut.ts", 0.333), ("ts-h264-bframes.ts", 0.5), ("ts-hevc-aac.ts", 0.5),
            ("ts-aac-only.ts", 0.5),
        ])
    func transportStreamCuts(name: String, target: Double) throws {
        let bytes = try Fixture.bytes(name)
        let info = try MediaProbe.probeSegment(bytes)
        let contents = try TransportStreamContents(bytes)
        let cutter = TransportStreamCutter(partTarget: Self.seconds(target))
        let whole = try Self.cut(bytes, with: cutter)
        let targetTicks = Int64(target * 1000) * 90
        #expect(whole.first?.offset == 0)
        #expect(whole.map(\.offset) == whole.map(\.offset).sorted() && Set(whole.map(\.offset)).count == whole.count)
        #expect(whole.count >= Int((info.duration.seconds / target).rounded(.down)), "\(name): \(whole.count) parts")
        Self.expectSizes(whole, targetTicks: targetTicks, name: name)
        // The last part is not longer than the target either (the segment's duration is whole parts and a rest).
        let lastDuration = info.duration.ticks - (whole.last!.decodeTime - whole.first!.decodeTime)
        #expect(lastDuration <= targetTicks + 1, "\(name): last part \(lastDuration)")
        if info.tracks.contains(where: { $0.kind == .video }) {
            let keyframes = Set(info.keyframes.map(\.start))
            let starts = whole.map { Self.accessUnitStart(bytes, cut: $0.offset, pmtPID: contents.pmtPID) }
            #expect(whole.map(\.independent) == starts.map { keyframes.contains($0) }, "\(name)")
            // A keyframe starts a part unless the part it would close is under 85 % of the target (expectSizes).
            #expect(whole[0].independent)
            // A part that starts with a keyframe begins with the program tables before it, as the segment does.
            for (cut, start) in zip(whole, starts) where cut.independent && cut.offset > 0 {
                #expect(start > cut.offset, "\(name): keyframe part at \(cut.offset) without its tables")
            }
        } else {
            // Audio-only: every access unit is independent, so no part is cut early; each is as long as the PES
            // packets allow: one more would pass the target.
            #expect(whole.allSatisfy { $0.independent })
            let audioPID = try #require(contents.streams.first?.pid)
            let times = (contents.pesPackets[audioPID] ?? []).compactMap(\.pts)
            let spacing = try #require(zip(times, times.dropFirst()).map { $1 - $0 }.max())
            for duration in Self.durations(whole) {
                #expect(duration + spacing > targetTicks && duration <= targetTicks, "\(name): \(duration)")
            }
        }
        for seed in UInt64(1)...200 {
            let split = try Self.cut(bytes, with: cutter, splits: Self.randomSplits(count: bytes.count, seed: seed))
            #expect(split == whole, "\(name), seed \(seed)")
            if split != whole { break }
        }
    }

    @Test("Bytes before a pending access unit and the tables before it stay unsettled until it is decided")
    func settledOffsetWaitsForTheCut() throws {
        let bytes = try Fixture.bytes("ts-h264-two-gops-0.ts")
        var cutter = TransportStreamCutter(partTarget: Self.seconds(0.4))
        // Packets 0-2 are SDT, PAT, PMT: a cut at the first access unit would move back over them.
        _ = try bytes.withUnsafeBytes { try cutter.consume(UnsafeRawBufferPointer(rebasing: $0[0..<(3 * 188)])) }
        #expect(cutter.settledOffset == 0)
        let cuts = try bytes.withUnsafeBytes { try cutter.consume(UnsafeRawBufferPointer(rebasing: $0[(3 * 188)...])) }
        #expect(cuts.first == CutPoint(offset: 0, decodeTime: cuts[0].decodeTime, independent: true))
        #expect(cutter.settledOffset == bytes.count)
    }

    /// A transport packet: `adaptation` stuffing bytes (with the random access flag) and as much payload as fits.
    static func packet(
        pid: Int, unitStart: Bool, randomAccess: Bool = false, stuffing: Int = 0, _ payload: [UInt8]
    )
        -> [UInt8]
    {
        let adaptationLength = 184 - payload.count - 1
        var bytes: [UInt8] = [0x47, UInt8(pid >> 8) | (unitStart ? 0x40 : 0), UInt8(pid & 0xFF)]
        if adaptationLength >= 0 {
            bytes.append(0x30)
            bytes.append(UInt8(adaptationLength))
            if adaptationLength > 0 {
                bytes += [randomAccess ? 0x40 : 0] + [UInt8](repeating: 0xFF, count: adaptationLength - 1)
            }
        } else {
            bytes.append(0x10)
        }
        return bytes + payload.prefix(188 - bytes.count)
    }

    static func pesHeader(dts: Int64) -> [UInt8] {
        func stamp(_ prefix: UInt8, _ value: Int64) -> [UInt8] {
            [
                prefix << 4 | UInt8(value >> 29 & 0x0E) | 1, UInt8(value >> 22 & 0xFF), UInt8(value >> 14 & 0xFE) | 1,
                UInt8(value >> 7 & 0xFF), UInt8(value << 1 & 0xFE) | 1,
            ]
        }
        return [0, 0, 1, 0xE0, 0, 0, 0x80, 0xC0, 10] + stamp(3, dts + 3000) + stamp(1, dts)
    }

    @Test("A PES header split over two packets (a large adaptation field first) is read across them")
    func pesHeaderAcrossPackets() throws {
        let pat = Self.packet(
            pid: 0, unitStart: true, [0, 0x00, 0xB0, 13, 0, 1, 0xC1, 0, 0, 0, 1, 0xF0, 0x00, 0, 0, 0, 0])
        let pmt = Self.packet(
            pid: 0x1000, unitStart: true,
            [0, 0x02, 0xB0, 18, 0, 1, 0xC1, 0, 0, 0xE1, 0x00, 0xF0, 0x00, 0x1B, 0xE1, 0x00, 0xF0, 0x00, 0, 0, 0, 0])
        var stream = pat + pmt
        let slice: [UInt8] = [0, 0, 0, 1, 0x09, 0xF0, 0, 0, 0, 1, 0x41, 0x9A]  // AUD, non-IDR slice
        for frame in 0..<30 {
            let header = Self.pesHeader(dts: 900_000 + Int64(frame) * 3000)
            // Frame 25: only 4 header bytes in its first packet, the DTS in the next.
            let split = frame == 25 ? 4 : header.count
            // Frame 0 is flagged random access in the adaptation field; frame 15 is an IDR by its NAL unit only,
            // in its third packet, its start code split between the second and the third.
            stream += Self.packet(pid: 0x100, unitStart: true, randomAccess: frame == 0, Array(header[..<split]))
            if frame == 15 {
                let sei: [UInt8] = [0, 0, 0, 1, 0x09, 0xF0, 0, 0, 0, 1, 0x06] + [UInt8](repeating: 0x55, count: 171)
                stream += Self.packet(pid: 0x100, unitStart: false, sei + [0, 0])
                stream += Self.packet(pid: 0x100, unitStart: false, [1, 0x65, 0x88, 0x80])
            } else {
                stream += Self.packet(pid: 0x100, unitStart: false, Array(header[split...]) + slice)
            }
        }
        let frameOffset = { (frame: Int) in frame == 0 ? 0 : 2 * 188 + frame * 2 * 188 + (frame > 15 ? 188 : 0) }
        let cutter = TransportStreamCutter(partTarget: Self.seconds(0.27))
        let cuts = try Self.cut(stream, with: cutter)
        // 0.27 s = 8.1 frames of 3000 ticks: parts of 8; the keyframe at 15 starts a part early, the one it closes
        // (7 frames) being at least 85 % of the target.
        let frames = [0, 8, 15, 23]
        #expect(cuts.map(\.offset) == frames.map(frameOffset))
        #expect(cuts.map(\.decodeTime) == frames.map { 900_000 + Int64($0) * 3000 })
        #expect(cuts.map(\.independent) == [true, false, true, false])
        let withTarget = TransportStreamCutter(partTarget: Self.seconds(0.17))
        // 0.17 s holds 5 frames: 0-4, 5-9, 10-14, 15-19 (the keyframe), 20-24; frame 25, whose header is split (and
        // fed split too), starts the sixth part.
        let shorter = try Self.cut(stream, with: withTarget, splits: [frameOffset(25) + 190])
        #expect(shorter.map(\.offset) == [0, 5, 10, 15, 20, 25].map(frameOffset))
        #expect(shorter.map(\.independent) == [true, false, false, true, false, false])
        // At 0.2 s (6 frames) the keyframe would close a 3-frame part: it stays inside it (HLS rule 38).
        let six = try Self.cut(stream, with: TransportStreamCutter(partTarget: Self.seconds(0.2)))
        #expect(six.map(\.offset) == [0, 6, 12, 18, 24].map(frameOffset))
        #expect(six.map(\.independent) == [true, false, false, false, false])
    }

    @Test("Garbage after a few parts of MPEG-TS is an error, not a crash")
    func transportStreamGarbage() throws {
        var bytes = try Fixture.bytes("ts-h264-aac-0.ts")
        bytes =
            Array(bytes[..<(bytes.count / 2)]) + Array("this is not a transport stream".utf8)
            + Array(bytes[(bytes.count / 2)...])
        var cutter = TransportStreamCutter(partTarget: Self.seconds(0.5))
        var parts = 0
        #expect(throws: ProbeError.self) {
            for start in stride(from: 0, to: bytes.count, by: 1000) {
                parts += try bytes.withUnsafeBytes {
                    try cutter.consume(UnsafeRawBufferPointer(rebasing: $0[start..<min(start + 1000, bytes.count)]))
                }.count
            }
        }
        #expect(parts >= 2)
    }

    static func fragmentFixture(_ name: String) throws -> (init: InitSectionInfo, segment: [UInt8]) {
        (try Fixture.initSection("fmp4-dash-\(name)-init.mp4"), try Fixture.bytes("fmp4-dash-\(name)-0.m4s"))
    }

    /// The top-level boxes of an fMP4 segment: (type, start).
    static func boxes(_ bytes: [UInt8]) throws -> [(String, Int)] {
        try bytes.withUnsafeBytes { raw in
            try MP4Box.children(of: 0..<raw.count, in: raw, context: "test", topLevel: true).map { ($0.type, $0.start) }
        }
    }

    @Test(
        "fMP4 fragments as the dash muxer streams them are grouped to the part target, in any split",
        arguments: [("duration", 0.4), ("duration", 0.6), ("every_frame", 0.5), ("every_frame", 0.334)])
    func fragmentGrouping(kind: String, target: Double) throws {
        let (initSection, bytes) = try Self.fragmentFixture(kind)
        let cutter = FragmentCutter(initSection: initSection, partTarget: Self.seconds(target))
        let timescale = cutter.timescale
        let whole = try Self.cut(bytes, with: cutter)
        let info = try MediaProbe.probeSegment(bytes, initSection: initSection)
        let targetTicks = Int64(target * 1000) * timescale / 1000
        let top = try Self.boxes(bytes)
        let moofs = top.filter { $0.0 == "moof" }.map(\.1)
        #expect(moofs.count >= (kind == "duration" ? 10 : 60), "\(top.map(\.0))")
        #expect(whole.first?.offset == 0)
        #expect(whole.first?.decodeTime == info.startTime.ticks || info.startTime.ticks > whole.first!.decodeTime)
        // Each cut is at a fragment's first box (a moof, or a styp before it).
        for cut in whole.dropFirst() {
            let index = try #require(top.firstIndex { $0.1 == cut.offset })
            #expect(["moof", "styp", "prft", "emsg", "sidx"].contains(top[index].0))
        }
        let durations = zip(whole, whole.dropFirst()).map { $1.decodeTime - $0.decodeTime }
        for (index, duration) in durations.enumerated() {
            #expect(duration <= targetTicks, "part \(index): \(duration) of \(targetTicks)")
            if !whole[index + 1].independent {
                // Fragments of 0.2 s fill a 0.4 s or 0.6 s target exactly; single frames within one frame.
                #expect(duration * 100 >= targetTicks * 85, "part \(index): \(duration) of \(targetTicks)")
            }
        }
        #expect(whole[0].independent)
        #expect(whole.dropFirst().filter(\.independent).count == info.keyframes.count - 1)
        for seed in UInt64(1)...200 {
            let split = try Self.cut(bytes, with: cutter, splits: Self.randomSplits(count: bytes.count, seed: seed))
            #expect(split == whole, "seed \(seed)")
            if split != whole { break }
        }
    }

    @Test("fMP4 boxes with 64-bit sizes, their headers split anywhere, cut where 32-bit ones do")
    func fragmentLargeSizes() throws {
        let (initSection, bytes) = try Self.fragmentFixture("every_frame")
        // Every mdat rewritten with a 16-byte header (size 1, then a 64-bit largesize): 8 more bytes each.
        var large: [UInt8] = []
        var shift: [Int: Int] = [:]
        let boxes = try Self.boxes(bytes)
        for (index, (type, start)) in boxes.enumerated() {
            let end = index + 1 < boxes.count ? boxes[index + 1].1 : bytes.count
            shift[start] = large.count - start
            if type == "mdat" {
                let size = UInt64(end - start + 8)
                large +=
                    [0, 0, 0, 1] + Array("mdat".utf8) + (0..<8).map { UInt8(truncatingIfNeeded: size >> (56 - 8 * $0)) }
                large += bytes[(start + 8)..<end]
            } else {
                large += bytes[start..<end]
            }
        }
        let cutter = FragmentCutter(initSection: initSection, partTarget: Self.seconds(0.334))
        let plain = try Self.cut(bytes, with: cutter)
        let expected = plain.map {
            CutPoint(offset: $0.offset + shift[$0.offset]!, decodeTime: $0.decodeTime, independent: $0.independent)
        }
        #expect(plain.count == 6)
        for seed in UInt64(1)...50 {
            let cuts = try Self.cut(large, with: cutter, splits: Self.randomSplits(count: large.count, seed: seed))
            #expect(cuts == expected, "seed \(seed)")
            if cuts != expected { break }
        }
    }

    @Test("Garbage after a few fMP4 fragments is an error, not a crash")
    func fragmentGarbage() throws {
        let (initSection, bytes) = try Self.fragmentFixture("every_frame")
        let top = try Self.boxes(bytes)
        let cutAt = top.filter { $0.0 == "moof" }[10].1
        let broken = Array(bytes[..<cutAt]) + Array("garbage, not a box at all".utf8) + Array(bytes[cutAt...])
        var cutter = FragmentCutter(initSection: initSection, partTarget: Self.seconds(0.1))
        var parts = 0
        let error = #expect(throws: ProbeError.self) {
            for start in stride(from: 0, to: broken.count, by: 700) {
                parts += try broken.withUnsafeBytes {
                    try cutter.consume(UnsafeRawBufferPointer(rebasing: $0[start..<min(start + 700, broken.count)]))
                }.count
            }
        }
        #expect(parts >= 2)
        #expect(error?.message.contains("unexpected top-level box") == true)
    }
}
