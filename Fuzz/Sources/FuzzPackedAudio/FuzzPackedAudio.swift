import MediaProbe

/// Packed audio (ADTS AAC, MPEG audio, optional ID3 tag in front) and WebVTT: any bytes pushed as a segment.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    _ = try? MediaProbe.probeSegment(bytes)
    return 0
}
