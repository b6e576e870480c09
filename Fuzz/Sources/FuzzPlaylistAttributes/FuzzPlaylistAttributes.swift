import HLSPlaylist

/// Attribute lists (`NAME=value,...`) and EXT-X-PROGRAM-DATE-TIME values. The input is split at its first newline:
/// the first line is parsed as an attribute list, the rest as an ISO 8601 date; the whole input as both, too.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    _ = try? AttributeList.parse(text)
    _ = ProgramDateTime(iso8601: text)
    if let newline = text.firstIndex(of: "\n") {
        _ = try? AttributeList.parse(String(text[..<newline]))
        let date = String(text[text.index(after: newline)...])
        if let parsed = ProgramDateTime(iso8601: date) {
            // What we print we must read back.
            guard ProgramDateTime(iso8601: parsed.formatted) == parsed else {
                fatalError("ProgramDateTime round trip failed for \(date.debugDescription) -> \(parsed.formatted)")
            }
        }
    }
    return 0
}
