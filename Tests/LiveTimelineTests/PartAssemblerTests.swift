import Foundation
import MediaProbe
import SharedBytes
import TestSource
import TestSupport
import Testing

@testable import LiveTimeline

/// A streamed push cut into parts (`PartAssembler`): the parts are exactly the segment's bytes, in any split.
@Suite("Part assembler", .offThePool)
struct PartAssemblerTests {
    /// What one push gave: the events of every piece, then `finish`.
    struct Pushed {
        var events: [PartEvent] = []
        var last: CutPart?
        var segment: SharedBytes
        var info: SegmentInfo

        var completed: [CutPart] {
            events.compactMap { if case .completed(let part) = $0 { part } else { nil } }
        }
        var parts: [CutPart] { completed + (last.map { [$0] } ?? []) }
        /// The `.bytes` events of one part, concatenated.
        func streamed(part index: Int) -> [UInt8] {
            var streamed: [UInt8] = []
            for case .bytes(let part, let bytes) in events where part == index {
                bytes.withUnsafeBytes { streamed.append(contentsOf: $0) }
            }
            return streamed
        }
    }

    static func seconds(_ value: Double) -> MediaTime { MediaTime(ticks: Int64(value * 1000), timescale: 1000) }

    static func push(
        _ bytes: [UInt8], target: Double, initSection: InitSectionInfo? = nil, seed: UInt64
    ) throws -> Pushed {
        var assembler = PartAssembler(partTarget: seconds(target), initSection: initSection, limit: 10 << 20)
        var random = SplitMix64(seed: seed)
        var events: [PartEvent] = []
        var offset = 0
        while offset < bytes.count {
            let size =
                Bool.random(using: &random)
                ? Int.random(in: 1...200, using: &random) : Int.random(in: 1...4000, using: &random)
            let end = min(bytes.count, offset + size)
            events += try bytes.withUnsafeBytes {
                try assembler.receive(UnsafeRawBufferPointer(rebasing: $0[offset..<end])).get()
            }
            offset = end
        }
        let (last, segment, info) = try assembler.finish().get()
        #expect(assembler.completedParts == events.filter { if case .completed = $0 { true } else { false } }.count)
        return Pushed(events: events, last: last, segment: segment, info: info)
    }

    /// What every push must give: parts that are the segment's bytes, streamed bytes that are the parts' bytes, parts
    /// within the target whose durations add up to the segment's, and each part but an independent one and the last
    /// at least 85 % of the target (HLS rule 38).
    static func expectConsistent(_ pushed: Pushed, body: [UInt8], target: Double, timescale: Int64, name: String) {
        let segmentIsBody = pushed.segment.array == body
        #expect(segmentIsBody, "\(name): the segment is not the body")
        let partsAreBody = pushed.parts.flatMap(\.bytes.array) == body
        #expect(partsAreBody, "\(name): the parts are not the segment")
        #expect(pushed.parts.map(\.index) == Array(0..<pushed.parts.count))
        for part in pushed.completed {
            let streamedIsPart = pushed.streamed(part: part.index) == part.bytes.array
            #expect(streamedIsPart, "\(name): part \(part.index) streamed")
        }
        if let last = pushed.last {
            let streamedStartsLast = last.bytes.array.starts(with: pushed.streamed(part: last.index))
            #expect(streamedStartsLast, "\(name): last part streamed")
        }
        let target = Int64(target * 1000) * timescale / 1000
        for part in pushed.parts {
            #expect(
                part.durationTicks > 0 && part.durationTicks <= target,
                "\(name): part \(part.index) \(part.durationTicks)")
            #expect(part.decodeTime.timescale == timescale)
            if !part.independent, part.index < pushed.parts.count - 1 {
                #expect(
                    part.durationTicks * 100 >= target * 85,
                    "\(name): part \(part.index) of \(pushed.parts.map(\.durationTicks)) is under 85 % of the target")
            }
        }
        let total = pushed.info.duration.ticks * timescale / pushed.info.duration.timescale
        #expect(pushed.parts.reduce(0) { $0 + $1.durationTicks } == total, "\(name): durations do not add up")
        #expect(pushed.parts.first?.independent == true)
    }

    @Test("Test-source segments (25 fps, a keyframe each second) in random splits: parts are the segment's bytes")
    func testSourceSegments() throws {
        var generator = try TestStreamGenerator(
            profile: try #require(TestSourceProfile.named("360p")), segmentDuration: 2)
        for index in 0..<3 {
            let body = generator.nextSegment().bytes
            let whole = try Self.push(body, target: 0.4, seed: 0)
            Self.expectConsistent(whole, body: body, target: 0.4, timescale: 90_000, name: "segment \(index)")
            // 25 fps, 0.4 s: 10 frames; the keyframe at 1 s would close a 5-frame part, under 85 % of the target, so
            // it stays inside that part, which goes on to 10 frames.
            #expect(whole.parts.map(\.durationTicks) == [36000, 36000, 36000, 36000, 36000])
            #expect(whole.parts.map(\.independent) == [true, false, false, false, false])
            for seed in UInt64(1)...8 {
                let split = try Self.push(body, target: 0.4, seed: seed)
                let sameBytes = split.parts.map(\.bytes) == whole.parts.map(\.bytes)
                #expect(sameBytes, "segment \(index), seed \(seed)")
                #expect(split.parts.map(\.durationTicks) == whole.parts.map(\.durationTicks))
                Self.expectConsistent(split, body: body, target: 0.4, timescale: 90_000, name: "segment \(index)")
            }
        }
    }

    static func fixture(_ name: String) throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../MediaProbeTests/Fixtures/\(name)")
        return [UInt8](try Data(contentsOf: url))
    }

    @Test("ffmpeg's segment-muxer TS and dash-muxer fMP4 chunks give parts that are the segment's bytes")
    func ffmpegSegments() throws {
        for (name, target) in [("ts-h264-25fps-cut.ts", 0.4), ("ts-h264-50fps-cut.ts", 0.333), ("ts-aac-only.ts", 0.5)]
        {
            let body = try Self.fixture(name)
            for seed in UInt64(1)...10 {
                let pushed = try Self.push(body, target: target, seed: seed)
                Self.expectConsistent(pushed, body: body, target: target, timescale: 90_000, name: name)
            }
        }
        for kind in ["duration", "every_frame"] {
            let initSection = try MediaProbe.probeInitSection(Self.fixture("fmp4-dash-\(kind)-init.mp4"))
            let body = try Self.fixture("fmp4-dash-\(kind)-0.m4s")
            for seed in UInt64(1)...10 {
                let pushed = try Self.push(body, target: 0.4, initSection: initSection, seed: seed)
                Self.expectConsistent(pushed, body: body, target: 0.4, timescale: 15360, name: kind)
                #expect(pushed.parts.count == 5, "\(kind): \(pushed.parts.count) parts")
            }
        }
    }

    @Test("fMP4 fragments of one frame with a keyframe each second: no part under 85 % of the target but the last")
    func fragmentsWithAKeyframeMidSegment() throws {
        // ffmpeg -f lavfi -i testsrc2=size=64x36:rate=25 -t 2 -c:v libx264 -g 25 -bf 0 -f dash -seg_duration 2
        // -frag_type every_frame: keyframes at 0 and 1 s.
        let initSection = try MediaProbe.probeInitSection(Self.fixture("fmp4-dash-gop1s-init.mp4"))
        let body = try Self.fixture("fmp4-dash-gop1s-0.m4s")
        let timescale = try #require(initSection.tracks.first?.timescale)
        let frame = timescale / 25
        for seed in UInt64(1)...6 {
            let pushed = try Self.push(body, target: 0.5, initSection: initSection, seed: seed)
            Self.expectConsistent(pushed, body: body, target: 0.5, timescale: timescale, name: "gop1s")
            // 12 frames a part; the keyframe at 1 s (25th frame) would close a 1-frame part, so it stays inside it.
            #expect(pushed.parts.map(\.durationTicks) == [12, 12, 12, 12, 2].map { $0 * frame })
            #expect(pushed.parts.map(\.independent) == [true, false, false, false, false])
        }
    }

    static func refusal(_ pieces: [[UInt8]], initSection: InitSectionInfo? = nil, limit: Int = 1 << 20) -> IngestError?
    {
        var assembler = PartAssembler(partTarget: seconds(0.5), initSection: initSection, limit: limit)
        for piece in pieces {
            if case .failure(let error) = piece.withUnsafeBytes({ assembler.receive($0) }) {
                // Nothing more is accepted.
                guard case .failure = [0x47].withUnsafeBytes({ assembler.receive($0) }) else { return nil }
                return error
            }
        }
        if case .failure(let error) = assembler.finish() { return error }
        return nil
    }

    @Test("Bodies that are not media, fMP4 without an init section, garbage mid-stream and too many bytes are refused")
    func refusals() throws {
        let text = Self.refusal([Array("#EXTM3U\n#EXT-X-VERSION:3\n".utf8)])
        #expect(text?.reason == .notMedia)
        #expect(text?.message.contains("MPEG-TS") == true)
        let fragment = try Self.fixture("fmp4-dash-duration-0.m4s")
        #expect(Self.refusal([fragment])?.reason == .unprocessable)
        #expect(Self.refusal([])?.reason == .notMedia)
        let ts = try Self.fixture("ts-h264-25fps-cut.ts")
        let garbage = Self.refusal([Array(ts[..<20_000]), Array(repeating: 0x00, count: 400), Array(ts[20_000...])])
        #expect(garbage?.reason == .unprocessable)
        #expect(garbage?.message.contains("sync byte") == true)
        #expect(Self.refusal([Array(ts[..<30_000]), Array(ts[30_000...])], limit: 35_000)?.reason == .tooLarge)
        // A truncated last packet is found by the segment's probe at the end.
        #expect(Self.refusal([Array(ts.dropLast(100))])?.reason == .unprocessable)
    }
}
