import GapFiller
import MediaProbe

/// fMP4 probes. Input: a 2-byte little-endian length N, then N bytes of initialization section, then a media
/// segment. The init section is probed on its own; the segment is probed with the init section's facts (when they
/// parsed) and without them (a segment that carries its own moov, or none); its samples are listed, and a gap filler
/// made from the pair writes a segment.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let initLength = min(Int(data[0]) | Int(data[1]) << 8, size - 2)
    let initBytes = UnsafeRawBufferPointer(start: data + 2, count: initLength)
    let segmentBytes = UnsafeRawBufferPointer(start: data + 2 + initLength, count: size - 2 - initLength)
    let initSection = try? MediaProbe.probeInitSection(initBytes)
    if let initSection {
        _ = try? MediaProbe.probeSegment(segmentBytes, initSection: initSection)
        _ = try? MediaProbe.fragmentedMP4Samples(segmentBytes, initSection: initSection)
    }
    if var filler = try? FragmentedMP4GapFiller(initSection: initBytes, after: segmentBytes) {
        _ = filler.segment(elapsedMilliseconds: 0, durationMilliseconds: 2000, sequenceNumber: 1)
        // A slot far along the timeline: decode times wrap there.
        _ = filler.segment(elapsedMilliseconds: 1 << 52, durationMilliseconds: 6000, sequenceNumber: 2)
    }
    _ = try? MediaProbe.probeSegment(segmentBytes)
    return 0
}
