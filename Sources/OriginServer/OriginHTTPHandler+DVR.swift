import HLSPackaging
import LiveTimeline
import MicroHTTPD
import OriginCore
import SharedBytes

/// `?start=T[&end=E]` on `/live/{channel}/index.m3u8` and `/live/{channel}/{rendition}/index.m3u8`: start-over and
/// catch-up playlists from the channel's store.
extension OriginHTTPHandler {
    /// The DVR answer to a playlist GET or HEAD with `start` or `end` (`RouteNeeds.timeShift`: the multivariant,
    /// `rendition` nil, or a media playlist); nil when the request is not one (no such argument, unknown rendition:
    /// the live route answers). `query` is the request's `start`/`end` as the chain read them.
    func dvr(
        _ request: HTTPRequestHead, query: Result<DVRQuery?, DVRQueryError>, channel: Channel, rendition: String?
    ) -> HTTPRequestAction? {
        do throws(DVRQueryError) {
            guard let query = try query.get() else { return nil }
            guard let rendition else {
                let text = try channel.dvrMultivariantPlaylist(query)
                // `import` form: the viewer's token goes into the template (authorized by `playbackGate`).
                if channel.configuration.playback?.form == .importVariable {
                    return .respond(viewerMultivariant(SharedBytes(string: text), request: request))
                }
                return .respond(
                    dvrPlaylist(
                        request, text: text, maxAge: configuration.multivariantMaxAge,
                        modifiedMilliseconds: channel.snapshot.multivariantModifiedMilliseconds))
            }
            guard channel.snapshot.renditions[rendition] != nil else { return nil }
            let answer = try channel.dvrMediaPlaylist(query, rendition: rendition, cache: timeShift.blocks)
            return .respond(
                dvrPlaylist(
                    request, text: answer.text, maxAge: answer.maxAge, modifiedMilliseconds: answer.modifiedMilliseconds
                ))
        } catch {
            var response = HTTPResponse.text(error.kind == .malformed ? 400 : 404, error.message + "\n")
            response.headers.append(name: "Cache-Control", value: "no-cache")
            return .respond(response)
        }
    }

    /// A DVR playlist: validators from its text, gzip when accepted.
    private func dvrPlaylist(
        _ request: HTTPRequestHead, text: String, maxAge: Int, modifiedMilliseconds: Int64
    ) -> HTTPResponse {
        renderedPlaylist(request, text: text, maxAge: maxAge, modifiedMilliseconds: modifiedMilliseconds) {
            "\"\(instanceTag)-dvr-\(String($0, radix: 36))\""
        }
    }

    /// A playlist rendered for this request (DVR, VOD): Cache-Control, ETag (from the text's hash unless the caller
    /// knows a better one), conditional GET, and its gzip form kept by hash.
    func renderedPlaylist(
        _ request: HTTPRequestHead, text: String, maxAge: Int, modifiedMilliseconds: Int64,
        etag: (_ hash: UInt64) -> String
    ) -> HTTPResponse {
        let bytes = SharedBytes(string: text)
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325  // FNV-1a
        for byte in text.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0100_0000_01B3
        }
        return StaticRepresentation(
            bytes: bytes, contentType: Self.playlistType, cacheControl: "public, max-age=\(max(maxAge, 0))",
            etag: etag(hash), lastModifiedSeconds: modifiedMilliseconds / 1000, delivery: .compressible
        ).response(to: request) { timeShift.gzip.gzipped(bytes, hash: hash) }
    }
}
