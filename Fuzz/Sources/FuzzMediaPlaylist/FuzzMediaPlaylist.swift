import HLSPlaylist

/// The encoder-playlist hint parser (`PUT /ingest/.../index.m3u8` goes through `MediaPlaylist.parse`). A playlist
/// that parses must render to text that parses again.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let playlist = try? MediaPlaylist.parse(text) else { return 0 }
    let rendered = playlist.render()
    do {
        _ = try MediaPlaylist.parse(rendered)
    } catch {
        fatalError("a parsed playlist rendered to text that does not parse: \(error)\n--- rendered:\n\(rendered)")
    }
    return 0
}
