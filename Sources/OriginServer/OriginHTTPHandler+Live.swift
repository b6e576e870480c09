import HLSPackaging
import HLSPlaylist
import LiveTimeline
import MediaProbe
import MicroHTTPD
import OriginCore
import SharedBytes

/// `/live/...`: multivariant and media playlists, segments and initialization sections from the latest snapshot.
extension OriginHTTPHandler {
    static let playlistType = "application/vnd.apple.mpegurl"
    static let immutable = "public, max-age=31536000, immutable"

    // Unconditional GETs of playlists and segments, the bulk of the traffic, are answered with a response prepared
    // once per playlist version or segment; requests with validators or ranges are answered from scratch, with the
    // same headers. The chain (`OriginRoutes`) has checked the method, the channel, the playback gate, the
    // time-shift query, catching up and the rendition before these run.

    /// `/live/{channel}/index.m3u8`: the multivariant playlist.
    func multivariant(_ context: RouteContext) -> HTTPRequestAction {
        let (channel, snapshot) = (context.channel, context.snapshot)
        // With Content Steering, the form that lists every pathway (docs/content-steering.md).
        guard let playlist = snapshot.steeredMultivariant ?? snapshot.multivariantPlaylist else {
            return .respond(.text(404, "channel '\(channel.name)' has no media yet\n"))
        }
        let modified = snapshot.multivariantModifiedMilliseconds
        return servePlaylist(
            context.request, responses: live.prepared.multivariant(of: snapshot, bytes: playlist),
            modifiedMilliseconds: modified, maxAge: configuration.multivariantMaxAge, cmsd: context.cmsd
        ) { "\"\(instanceTag)-m\(modified)\"" }
    }

    /// `/live/{channel}/{rendition}/index.m3u8`: the media playlist, with delivery directives (blocking reloads,
    /// delta updates) on a Low-Latency rendition; ignored otherwise.
    func mediaPlaylist(_ context: RouteContext) -> HTTPRequestAction {
        let (request, channel, rendition) = (context.request, context.channel, context.rendition)
        if rendition.lowLatency != nil, !request.query.isEmpty,
            let answer = lowLatencyPlaylist(request, channel: channel, rendition: rendition, cmsd: context.cmsd)
        {
            return answer
        }
        guard let playlist = rendition.playlist else {
            return .respond(.text(404, "rendition '\(rendition.name)' has no media yet\n"))
        }
        return servePlaylist(
            request, responses: live.prepared.playlist(channel: channel.name, of: rendition, bytes: playlist),
            modifiedMilliseconds: rendition.modifiedMilliseconds, maxAge: rendition.targetDuration / 2,
            cmsd: context.cmsd
        ) { "\"\(instanceTag)-\(rendition.version)\"" }
    }

    /// `/live/{channel}/{rendition}/init-{version}.mp4`; nil for a name that is not canonical (`init-00.mp4` or
    /// `init-+0.mp4` must not alias `init-0.mp4`) or a version the rendition does not have.
    func initSection(_ context: RouteContext) -> HTTPRequestAction? {
        let file = context.captures.file ?? ""
        guard file.hasSuffix(".mp4"), let version = Int(file.dropFirst(5).dropLast(4)),
            file == "init-\(version).mp4", let section = context.rendition.initSections[version]
        else { return nil }
        return .respond(
            serveImmutable(
                context.request, bytes: section.bytes, contentType: "video/mp4",
                etag: "\"\(instanceTag)-init-\(version)\"", modifiedMilliseconds: nil))
    }

    /// `/live/{channel}/{rendition}/{file}`: a part `{msn}.{part}.{ext}` or a segment `{msn}.{ext}` (from memory, or
    /// from the durable store once out of the window); 404 for anything else.
    func liveMedia(_ context: RouteContext) -> HTTPRequestAction {
        let (request, channel, snapshot, rendition) = (
            context.request, context.channel, context.snapshot, context.rendition
        )
        let file = context.captures.file ?? ""
        if let (position, fileExtension) = Self.partName(file) {
            return livePart(
                request, channel: channel, snapshot: snapshot, rendition: rendition, file: file, position: position,
                fileExtension: fileExtension, cmsd: context.cmsd)
        }
        // Only the canonical name `{msn}.{ext}`: no leading zeros, the rendition's extension.
        guard let (msn, fileExtension) = Self.segmentName(file) else {
            return .respond(Self.noSegment(file, rendition: rendition.name))
        }
        guard let entry = rendition.entry(msn: msn) else {
            // Not in memory: the durable store may still have it (time-shift, or just past retention).
            guard let stored = channel.storedSegment(rendition: rendition.name, msn: msn),
                fileExtension == stored.record.container.segmentFileExtension
            else {
                return .respond(Self.noSegment(file, rendition: rendition.name))
            }
            if snapshot.encryption != nil {
                return .respond(storedEncryptedResponse(request, stored, channel: channel, rendition: rendition.name))
            }
            return .respond(storedSegmentResponse(request, stored, file: file, rendition: rendition.name))
        }
        guard fileExtension == entry.container.segmentFileExtension else {
            return .respond(Self.noSegment(file, rendition: rendition.name))
        }
        // Encrypted channels serve the ciphertext of segments and fillers (nil: a clear MSN, served as it is).
        func served(_ plaintext: SharedBytes) -> SharedBytes {
            guard snapshot.encryption != nil else { return plaintext }
            return channel.ciphertext(rendition: rendition.name, msn: msn, plaintext: plaintext) ?? plaintext
        }
        if let bytes = entry.bytes, !entry.isSlate,
            StaticRepresentation.answersAsPlainGet(request, delivery: .byteRanges)
        {
            // Keyed by the plaintext's identity; an encrypted channel's answer carries the ciphertext.
            let prepared = live.prepared.segment(channel: channel.name, of: rendition, msn: msn, bytes: bytes) {
                preparedImmutable(
                    served(bytes), contentType: Self.segmentContentType(entry, of: rendition),
                    etag: "\"\(instanceTag)-\(msn)\"", modifiedMilliseconds: entry.endMilliseconds,
                    cmsd: context.cmsd)
            }
            return .respondPrepared(prepared)
        }
        // A GAP entry with filler answers like a segment (clients that ignore EXT-X-GAP play through it).
        guard let bytes = entry.bytes ?? entry.filler else {
            var response = HTTPResponse.text(
                404, "msn \(msn) is an EXT-X-GAP entry: the encoder delivered no media for it\n")
            response.headers.append(name: "Cache-Control", value: "public, max-age=\(rendition.targetDuration)")
            return .respond(response)
        }
        var response = serveImmutable(
            request, bytes: served(bytes), contentType: Self.segmentContentType(entry, of: rendition),
            etag: "\"\(instanceTag)-\(msn)\"",
            modifiedMilliseconds: entry.endMilliseconds)
        // Peers of a redundancy group must not take a slate for the encoder's media (PeerRepairer).
        if entry.isSlate { response.headers.append(name: "X-HLSOrigin-Slate", value: "1") }
        return .respond(response)
    }

    /// A segment's Content-Type: its container's, except IMSC1 subtitles in fMP4 (`application/mp4`, rule 45).
    static func segmentContentType(_ entry: WindowEntry, of rendition: RenditionSnapshot) -> String {
        if entry.container == .fragmentedMP4Segment, let version = entry.initSectionVersion,
            let tracks = rendition.initSections[version]?.info.tracks, !tracks.isEmpty,
            tracks.allSatisfy({ $0.kind == .subtitles })
        {
            return "application/mp4"
        }
        return entry.container.contentType
    }

    /// The 404 of a segment URL that names nothing.
    static func noSegment(_ file: String, rendition: String) -> HTTPResponse {
        var response = HTTPResponse.text(404, "no segment '\(file)' in rendition '\(rendition)'\n")
        // A future segment appears soon: let nothing cache the miss.
        response.headers.append(name: "Cache-Control", value: "no-cache")
        return response
    }

    /// A segment from the durable store: from the chunk file with sendfile once its bytes were checked, else the
    /// bytes just read and checked. Same headers as a segment in memory.
    func storedSegmentResponse(
        _ request: HTTPRequestHead, _ stored: StoredSegmentAnswer, file: String, rendition: String
    ) -> HTTPResponse {
        let record = stored.record
        let body: HTTPBody
        switch stored.body {
        case .bytes(let bytes): body = .bytes(bytes)
        case .file(let path, let range):
            // The chunk can be evicted between the lookup and here.
            guard let region = try? FileRegion(path: path, range: range) else {
                return Self.noSegment(file, rendition: rendition)
            }
            body = .file(region)
        }
        return StaticRepresentation(
            body: body, contentType: record.container.contentType, cacheControl: Self.immutable,
            etag: "\"\(instanceTag)-\(record.msn)\"", lastModifiedSeconds: record.endMilliseconds / 1000,
            delivery: .byteRanges
        ).response(to: request)
    }

    /// The prepared answer of an immutable resource (a segment, a part) to a plain GET.
    func preparedImmutable(
        _ bytes: SharedBytes, contentType: String, etag: String, modifiedMilliseconds: Int64?, cmsd: String?
    ) -> PreparedResponse {
        PreparedResponse(
            Self.completed(
                Self.withCMSD(
                    serveImmutable(
                        Self.plainGet, bytes: bytes, contentType: contentType, etag: etag,
                        modifiedMilliseconds: modifiedMilliseconds), cmsd)))
    }

    /// What a prepared response answers: a GET without conditions, with or without gzip.
    static let plainGet = HTTPRequestHead(method: "GET", path: "/")
    static let gzipGet = HTTPRequestHead(method: "GET", path: "/", headers: ["Accept-Encoding": "gzip"])

    /// A playlist: the prepared answer of its version for a GET without If-None-Match, else built here.
    func servePlaylist(
        _ request: HTTPRequestHead, responses: PlaylistResponses, modifiedMilliseconds: Int64, maxAge: Int,
        cmsd: String?, etag: () -> String
    ) -> HTTPRequestAction {
        guard StaticRepresentation.answersAsPlainGet(request, delivery: .compressible) else {
            return .respond(
                playlistResponse(
                    request, responses: responses, etag: etag(), modifiedMilliseconds: modifiedMilliseconds,
                    maxAge: maxAge))
        }
        let gzip = ContentCoding.acceptsGzip(request)
        let form = responses.prepared(gzip: gzip) {
            PreparedResponse(
                Self.completed(
                    Self.withCMSD(
                        playlistResponse(
                            gzip ? Self.gzipGet : Self.plainGet, responses: responses, etag: etag(),
                            modifiedMilliseconds: modifiedMilliseconds, maxAge: maxAge), cmsd)))
        }
        return .respondPrepared(form)
    }

    /// A playlist: short-lived caching, ETag validation, gzip when accepted.
    func playlistResponse(
        _ request: HTTPRequestHead, responses: PlaylistResponses, etag: String, modifiedMilliseconds: Int64,
        maxAge: Int
    ) -> HTTPResponse {
        let representation = StaticRepresentation(
            bytes: responses.bytes, contentType: Self.playlistType, cacheControl: "public, max-age=\(max(maxAge, 0))",
            etag: etag, lastModifiedSeconds: modifiedMilliseconds / 1000, delivery: .compressible)
        return representation.response(to: request) { responses.gzipped }
    }

    /// A segment or initialization section: cached for a year, validators, byte ranges.
    func serveImmutable(
        _ request: HTTPRequestHead, bytes: SharedBytes, contentType: String, etag: String,
        modifiedMilliseconds: Int64?
    ) -> HTTPResponse {
        StaticRepresentation(
            bytes: bytes, contentType: contentType, cacheControl: Self.immutable, etag: etag,
            lastModifiedSeconds: modifiedMilliseconds.map { $0 / 1000 }, delivery: .byteRanges
        ).response(to: request)
    }
}
