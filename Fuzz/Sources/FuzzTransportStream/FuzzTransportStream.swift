import MediaProbe

/// MPEG-TS probe: any bytes, pushed as a segment (`PUT /ingest/.../N.ts`). Detection runs first, so inputs that
/// lose the 0x47 sync fall through to the other probes or the "not a media segment" answer; none may crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    _ = MediaProbe.detectContainer(bytes)
    _ = try? MediaProbe.probeSegment(bytes)
    return 0
}
