import LiveTimeline
import MediaProbe
import MicroHTTPD
import OriginCore
import Persistence
import SharedBytes

/// `/vod/{id}/...`: a finished recording. `index.m3u8` is the channel's multivariant playlist as it was when the
/// recording finished; `{rendition}/index.m3u8` its VOD playlist (EXT-X-PLAYLIST-TYPE:VOD, EXT-X-ENDLIST, the copied
/// markers); `{rendition}/{msn}.{ext}` and `{rendition}/init-{v}.mp4` come from the channel's store. Before the
/// recording finished every path answers 404 `recording '{id}' finishes at {end}`.
extension OriginHTTPHandler {
    /// How long VOD playlists may be cached: they never change, but a recording can be deleted.
    static let vodPlaylistMaxAge = 3600

    /// The finished recording of `/vod/{id}/...` (looked up by the chain, `RouteNeeds.recording`) with its
    /// contents, or the 404 or 403 that answers instead.
    private func finishedRecording(
        _ context: RouteContext
    ) -> Result<(RecordingManifest, RecordingContents, Channel), EarlyResponse> {
        let id = context["id"]
        let recording: RecordingManifest
        let channel: Channel
        switch context.recording {
        case .success(let found): (recording, channel) = found
        case .failure(let error):
            var response = HTTPResponse.text(404, error.message + "\n")
            response.headers.append(name: "Cache-Control", value: "no-cache")
            return .failure(EarlyResponse(response: response))
        }
        if let refused = Self.protectedRecording(channel) { return .failure(EarlyResponse(response: refused)) }
        guard let contents = recording.contents, contents.firstMSN != nil else {
            return .failure(EarlyResponse(response: .text(404, "recording '\(id)' holds no media\n")))
        }
        return .success((recording, contents, channel))
    }

    /// `/vod/{id}/index.m3u8`: the channel's multivariant playlist as it was when the recording finished.
    func vodMultivariant(_ context: RouteContext) -> HTTPRequestAction {
        let id = context["id"]
        let contents: RecordingContents
        switch finishedRecording(context) {
        case .failure(let refusal): return .respond(refusal.response)
        case .success(let found): contents = found.1
        }
        guard context["file"] == "index.m3u8", let multivariant = contents.multivariantPlaylist else {
            return .respond(.text(404, "unknown path in recording '\(id)'\n"))
        }
        return .respond(
            vodPlaylist(
                context.request, text: multivariant,
                etag: "\"\(instanceTag)-vod-\(id)-\(contents.finishedMilliseconds)-m\"",
                modifiedMilliseconds: contents.finishedMilliseconds))
    }

    /// `/vod/{id}/{rendition}/{file}`: its VOD playlist, init sections and segments.
    func vodRenditionFile(_ context: RouteContext) -> HTTPRequestAction {
        let (request, id, file) = (context.request, context["id"], context["file"])
        let (recording, contents, channel): (RecordingManifest, RecordingContents, Channel)
        switch finishedRecording(context) {
        case .failure(let refusal): return .respond(refusal.response)
        case .success(let found): (recording, contents, channel) = found
        }
        let etagBase = "\(instanceTag)-vod-\(id)-\(contents.finishedMilliseconds)"
        guard let summary = contents.renditions.first(where: { $0.name == context["rendition"] }) else {
            return .respond(.text(404, "unknown rendition '\(context["rendition"])' of recording '\(id)'\n"))
        }
        if file == "index.m3u8" {
            guard let text = channel.vodMediaPlaylist(recording, rendition: summary.name, cache: timeShift.blocks)
            else {
                return .respond(.text(404, "rendition '\(summary.name)' of recording '\(id)' has no playlist\n"))
            }
            return .respond(
                vodPlaylist(
                    request, text: text, etag: "\"\(etagBase)-\(summary.name)\"",
                    modifiedMilliseconds: contents.finishedMilliseconds))
        }
        if file.hasPrefix("init-"), file.hasSuffix(".mp4"), let version = Int(file.dropFirst(5).dropLast(4)),
            file == "init-\(version).mp4", summary.initSectionVersions.contains(version),
            let section = channel.storedInitSection(rendition: summary.name, version: version)
        {
            return .respond(
                serveImmutable(
                    request, bytes: section, contentType: "video/mp4", etag: "\"\(etagBase)-init-\(version)\"",
                    modifiedMilliseconds: nil))
        }
        // Only the canonical name `{msn}.{ext}` of an MSN of the recording.
        guard let dot = file.lastIndex(of: "."), case let number = file[..<dot], !number.isEmpty, number.count <= 20,
            number.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            number.count == 1 || !number.hasPrefix("0"), let msn = UInt64(number),
            let first = contents.firstMSN, let last = contents.lastMSN, (first...last).contains(msn),
            file[file.index(after: dot)...]
                == (MediaContainer(rawValue: summary.container) ?? .mpegTS)
                .segmentFileExtension,
            let stored = channel.storedSegment(rendition: summary.name, msn: msn)
        else {
            return .respond(.text(404, "no segment '\(file)' in rendition '\(summary.name)' of recording '\(id)'\n"))
        }
        return .respond(storedSegmentResponse(request, stored, file: file, rendition: summary.name))
    }

    /// A VOD playlist: fixed text, validators, gzip when accepted (the gzip form is kept with the DVR playlists').
    private func vodPlaylist(
        _ request: HTTPRequestHead, text: String, etag: String, modifiedMilliseconds: Int64
    ) -> HTTPResponse {
        renderedPlaylist(
            request, text: text, maxAge: Self.vodPlaylistMaxAge, modifiedMilliseconds: modifiedMilliseconds
        ) { _ in etag }
    }
}
