import FuzzSupport

/// MPEG-TS probe with the channel state behind it: a sequence of segments pushed whole (`Origin.ingest`) into a
/// channel whose first segment fixes the target duration, and into one on a shared timeline, the clock moving and
/// the ingest loop ticking between them. Input: a byte of clock steps, then segments separated by `SEG|`.
/// Every published playlist must parse and keep the target-duration rules.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let input = UnsafeBufferPointer(start: data, count: size)
    let origin = OriginUnderFuzz(renditions: ["v"])
    for (index, segment) in FuzzInput.records(input, skip: 1).enumerated() {
        origin.advance(seconds: FuzzInput.step(data[0], record: index))
        for channel in ["a", "b"] { origin.push(channel: channel, rendition: "v", file: "\(index).ts", segment) }
        origin.check()
    }
    origin.advance(seconds: 6)
    origin.check()
    return 0
}
