@testable import OriginServer

/// The JSON bodies of the date range admin API (`POST /admin/channels/{ch}/dateranges`, `PATCH .../{id}`): any
/// bytes, read as a new marker and as a cue-in patch. Errors (400 with a field) are fine, crashes are not.
/// Debug builds of the package are built with testability, which is what lets this reach the internal reader.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? DateRangeRequestBody.marker(body)
    _ = try? DateRangeRequestBody.patch(body)
    return 0
}
