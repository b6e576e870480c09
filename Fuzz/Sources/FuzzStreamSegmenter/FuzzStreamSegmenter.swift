import FuzzSupport
import MediaProbe
import TSSegmenter

/// The continuous MPEG-TS segmenter (`TransportStreamSegmenter`, over `TransportStreamDemuxer`). Input: a segment
/// duration byte (0.1 to 25.6 s), a seed for how the stream is split, then the stream. Fed whole and in pieces: the
/// same segments, each starting with a PAT and made of whole packets; garbage never traps. The stream is also read
/// as one PES by `AudioPESFrames` (what the segmenter splits an audio PES with): frames back to back inside it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let pes = Array(UnsafeBufferPointer(start: data + 2, count: size - 2))
    if let audio = AudioPESFrames(pes: pes) {
        for (frame, next) in zip(audio.frames, audio.frames.dropFirst())
        where frame.range.upperBound != next.range.lowerBound {
            fatalError("ADTS frames of a PES not back to back")
        }
        let inside = audio.frames.allSatisfy { $0.range.upperBound <= pes.count && $0.samples > 0 }
        guard audio.sampleRate > 0, inside else { fatalError("an ADTS frame past the PES end or with no samples") }
    }
    let configuration = TransportStreamSegmenter.Configuration(
        segmentDurationMilliseconds: 100 * (Int64(data[0]) + 1), toleranceMilliseconds: 500,
        maximumSegmentBytes: 1 << 20)
    let body = UnsafeRawBufferPointer(start: data + 2, count: size - 2)
    let arrival: Int64 = 1_767_225_600_000
    var whole = TransportStreamSegmenter(configuration: configuration)
    let wholeSegments = segments(whole.consume(body, arrivalMilliseconds: arrival) + whole.finish())
    var split = TransportStreamSegmenter(configuration: configuration)
    var pieces = Pieces(seed: data[1])
    var events: [TransportStreamSegmenter.Event] = []
    var fed = 0
    while fed < body.count {
        let end = min(body.count, fed + pieces.next(maximum: 400))
        events += split.consume(UnsafeRawBufferPointer(rebasing: body[fed..<end]), arrivalMilliseconds: arrival)
        fed = end
    }
    let splitSegments = segments(events + split.finish())
    guard wholeSegments == splitSegments else {
        fatalError("segments differ by split: \(wholeSegments.count) whole, \(splitSegments.count) in pieces")
    }
    for segment in wholeSegments {
        guard segment.count % 188 == 0, segment.count >= 376, segment[0] == 0x47, segment[1] & 0x1F == 0,
            segment[2] == 0
        else { fatalError("a segment of \(segment.count) bytes does not start with a PAT or has a partial packet") }
    }
    return 0
}

/// The bytes of each segment, checking the events come in order (started, bytes..., ended).
func segments(_ events: [TransportStreamSegmenter.Event]) -> [[UInt8]] {
    var result: [[UInt8]] = []
    var open: [UInt8]?
    for event in events {
        switch event {
        case .started:
            guard open == nil else { fatalError("a segment started inside another") }
            open = []
        case .bytes(let bytes):
            guard open != nil else { fatalError("bytes outside a segment") }
            open!.append(contentsOf: bytes)
        case .ended(let end):
            guard let bytes = open, bytes.count == end.byteCount else {
                fatalError("a segment ended that was not open, or its byte count is wrong")
            }
            result.append(bytes)
            open = nil
        case .keyframeWarning: break
        }
    }
    return result
}
