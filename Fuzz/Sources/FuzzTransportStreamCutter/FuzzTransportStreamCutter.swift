import FuzzSupport
import MediaProbe

/// The MPEG-TS part cutter of Low-Latency pushes (`TransportStreamCutter`). Input: a PART-TARGET byte (0.1 to
/// 2.65 s), a seed for how the body is split, then the body. Cut whole and in pieces: the same cuts.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let partTarget = MediaTime(ticks: 100 + Int64(data[0]) * 10, timescale: 1000)
    checkCutter(
        { TransportStreamCutter(partTarget: partTarget) },
        body: UnsafeRawBufferPointer(start: data + 2, count: size - 2), pieces: data[1])
    return 0
}
