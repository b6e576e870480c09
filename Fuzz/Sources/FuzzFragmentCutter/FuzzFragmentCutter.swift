import FuzzSupport
import MediaProbe

/// The fMP4 part cutter of Low-Latency pushes (`FragmentCutter`). Input: a PART-TARGET byte (0.1 to 2.65 s), a seed
/// for how the body is split, a 2-byte little-endian length N, N bytes of initialization section, then the body.
/// An init section that does not probe is replaced by one video track 1 of timescale 90000 (so the fuzzer reaches
/// the moof reader without a valid moov). Cut whole and in pieces: the same cuts.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 4 else { return 0 }
    let partTarget = MediaTime(ticks: 100 + Int64(data[0]) * 10, timescale: 1000)
    let initLength = min(Int(data[2]) | Int(data[3]) << 8, size - 4)
    let initBytes = UnsafeRawBufferPointer(start: data + 4, count: initLength)
    let body = UnsafeRawBufferPointer(start: data + 4 + initLength, count: size - 4 - initLength)
    let initSection =
        (try? MediaProbe.probeInitSection(initBytes))
        ?? InitSectionInfo(tracks: [TrackInfo(kind: .video, codec: "avc1.64001f", trackID: 1, timescale: 90_000)])
    checkCutter({ FragmentCutter(initSection: initSection, partTarget: partTarget) }, body: body, pieces: data[1])
    return 0
}
