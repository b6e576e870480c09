import FuzzSupport
import TestSource

/// WebVTT probe with the channel state behind it: each record is pushed as the next segment of subtitle rendition
/// `v-vtt`, after a real 2-second MPEG-TS segment of its parent `v` (the follower's X-TIMESTAMP-MAP, PTS and slot
/// arithmetic against its parent's timeline), in a channel whose first segment fixes the target duration and in one
/// on a shared timeline; the clock moves and the ingest loop ticks between segments. Input: a byte of clock steps,
/// then WebVTT segments separated by `SEG|`. Every published playlist must parse and keep the target-duration rules.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let input = UnsafeBufferPointer(start: data, count: size)
    let origin = OriginUnderFuzz(renditions: ["v", "v-vtt"])
    for (index, cues) in FuzzInput.records(input, skip: 1).enumerated() {
        origin.advance(seconds: FuzzInput.step(data[0], record: index))
        for channel in ["a", "b"] {
            origin.push(channel: channel, rendition: "v", file: "\(index).ts", Parent.segments[index])
            origin.push(channel: channel, rendition: "v-vtt", file: "\(index).vtt", cues)
        }
        origin.check()
    }
    origin.advance(seconds: 6)
    origin.check()
    return 0
}

/// The parent's segments, generated once.
private enum Parent {
    static let segments: [[UInt8]] = {
        guard let profile = TestSourceProfile.named("180p"),
            var generator = try? TestStreamGenerator(profile: profile, segmentDuration: 2)
        else { fatalError("test source set-up failed") }
        return (0..<6).map { _ in generator.nextSegment().bytes }
    }()
}
