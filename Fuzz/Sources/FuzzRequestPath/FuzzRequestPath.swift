@testable import MicroHTTPD

/// Request path and query decoding. The input is taken as the request target as a client sends it
/// (`/path?query`): the path goes through the same non-printable escaping the server applies to what
/// libmicrohttpd hands over, then the strict segment decoder; each `&`-separated query argument through the
/// lenient decoder the server applies to libmicrohttpd's (already "+"-unescaped) arguments.
/// Debug builds of the package are built with testability, which is what lets this reach the internal decoders.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let raw = UnsafeBufferPointer(start: data, count: size)
    let question = raw.firstIndex(of: UInt8(ascii: "?")) ?? size
    let path = PercentDecoding.encodingNonPrintable(UnsafeBufferPointer(rebasing: raw[0..<question]))
    if let segments = HTTPRequestHead(method: "GET", path: path).decodedPathSegments() {
        for segment in segments {
            // What the decoder lets through must be safe to use as a file or channel name.
            guard segment != ".", segment != "..", !segment.contains("/"), !segment.contains("\\"),
                !segment.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
            else {
                fatalError("decodedPathSegments let through \(segment.debugDescription) from \(path.debugDescription)")
            }
        }
    }
    if question < size {
        let query = String(decoding: UnsafeBufferPointer(rebasing: raw[(question + 1)...]), as: UTF8.self)
        for argument in query.split(separator: "&", omittingEmptySubsequences: false) {
            let parts = argument.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            _ = PercentDecoding.lenient(String(parts[0]))
            if parts.count == 2 { _ = PercentDecoding.lenient(String(parts[1])) }
        }
    }
    return 0
}
