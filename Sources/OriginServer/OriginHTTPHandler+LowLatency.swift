import HLSPackaging
import HLSPlaylist
import LiveTimeline
import MediaProbe
import MicroHTTPD
import OriginCore
import SharedBytes
import Synchronization

/// Low-Latency HLS on `/live/{channel}/{rendition}/...`: media playlists asked with delivery directives (`_HLS_msn`,
/// `_HLS_part`, `_HLS_skip`; blocking reloads and delta updates) and parts (`{msn}.{part}.{ext}`), the
/// preload-hinted one streamed as it is cut.
///
/// Waiting costs no thread: the request is suspended (`HTTPRequestAction.suspend`) and answered by the publish
/// that lists what it waits for (`Channel.waitForPart`), or streamed as the part's bytes arrive
/// (`Channel.watchPart`, `HTTPBody.stream`). Parts of encrypted channels are not offered (Low-Latency with AES-128
/// is out of scope): their URLs answer 404.
extension OriginHTTPHandler {
    /// A media playlist request with delivery directives on a Low-Latency rendition; nil when the query has none
    /// (the regular answer). Directives on a regular rendition are ignored by the caller (not asked here).
    func lowLatencyPlaylist(
        _ request: HTTPRequestHead, channel: Channel, rendition: RenditionSnapshot, cmsd: String?
    ) -> HTTPRequestAction? {
        let directives: DeliveryDirectives
        do throws(DirectiveError) {
            guard let parsed = try DeliveryDirectives(query: request.query) else { return nil }
            directives = parsed
        } catch {
            return .respond(Self.refusedDirective(error.message))
        }
        // A request naming an MSN has one possible answer (B Appendix B): cacheable for 6 target durations.
        let blocking = directives.msn != nil
        switch directives.decide(against: rendition) {
        case .refuse(let reason):
            return .respond(Self.refusedDirective(reason))
        case .answerNow(let skip):
            guard let form = lowLatencyForm(channel: channel.name, rendition: rendition, skip: skip, blocking: blocking)
            else { return .respond(.text(404, "rendition '\(rendition.name)' has no media yet\n")) }
            return servePlaylist(
                request, responses: form.responses, modifiedMilliseconds: rendition.modifiedMilliseconds,
                maxAge: form.maxAge, cmsd: cmsd
            ) { form.etag }
        case .wait(let position, let wholeSegment, let skip):
            let targetMilliseconds = Int64(rendition.targetDuration) * 1000
            let deadline = origin.clock.nowMilliseconds() + 3 * targetMilliseconds
            let name = rendition.name
            let arrival = origin.clock.nowMilliseconds()
            return .suspend { [self] responder in
                channel.waitForPart(
                    rendition: name, until: position, wholeSegment: wholeSegment, deadlineMilliseconds: deadline
                ) { [self] released in
                    if let released,
                        let answer = lowLatencyRelease(
                            request, channel: channel.name, rendition: released, skip: skip, cmsd: cmsd,
                            heldMilliseconds: origin.clock.nowMilliseconds() - arrival)
                    {
                        metrics.count(status: answer.status)
                        responder.respond(answer)
                    } else {
                        responder.respond(
                            finish(
                                Self.withCMSD(
                                    Self.blockingTimeout(position, wholeSegment: wholeSegment, rendition: name), cmsd)))
                    }
                }
            }
        }
    }

    /// The answer of a released blocking reload: for a GET without validators the prepared form, one libmicrohttpd
    /// response queued for every waiter it releases (a publish may release thousands at once); else built for the
    /// request (headers complete). With CMSD the answer says how long it was held (`ht`, `rd`), rounded down to two
    /// significant digits so that the waiters one publish releases share a few dozen prepared answers.
    private func lowLatencyRelease(
        _ request: HTTPRequestHead, channel: String, rendition: RenditionSnapshot, skip: SkipRequest?,
        cmsd staticValue: String?, heldMilliseconds: Int64
    ) -> HTTPResponder.Answer? {
        guard let form = lowLatencyForm(channel: channel, rendition: rendition, skip: skip, blocking: true) else {
            return nil
        }
        let modified = rendition.modifiedMilliseconds
        let held = CMSDHeaders.roundedHeldTime(heldMilliseconds)
        func withHeldTime(_ response: HTTPResponse) -> HTTPResponse {
            guard let cmsd else { return response }
            var response = response
            response.headers.append(
                name: CMSDHeaders.staticName, value: cmsd.heldStaticValue(.live, heldMilliseconds: held))
            response.headers.append(
                name: CMSDHeaders.dynamicName, value: cmsd.heldDynamicValue(heldMilliseconds: held))
            return response
        }
        guard StaticRepresentation.answersAsPlainGet(request, delivery: .compressible) else {
            return .response(
                Self.completed(
                    withHeldTime(
                        playlistResponse(
                            request, responses: form.responses, etag: form.etag, modifiedMilliseconds: modified,
                            maxAge: form.maxAge))))
        }
        let gzip = ContentCoding.acceptsGzip(request)
        if cmsd != nil,
            let prepared = form.responses.preparedHeld(
                gzip: gzip, heldMilliseconds: held,
                make: {
                    PreparedResponse(
                        Self.completed(
                            withHeldTime(
                                playlistResponse(
                                    gzip ? Self.gzipGet : Self.plainGet, responses: form.responses, etag: form.etag,
                                    modifiedMilliseconds: modified, maxAge: form.maxAge))))
                })
        {
            return .prepared(prepared)
        }
        return .prepared(
            form.responses.prepared(gzip: gzip) {
                PreparedResponse(
                    Self.completed(
                        Self.withCMSD(
                            playlistResponse(
                                gzip ? Self.gzipGet : Self.plainGet, responses: form.responses, etag: form.etag,
                                modifiedMilliseconds: modified, maxAge: form.maxAge), staticValue)))
            })
    }

    /// The playlist text a directive answer sends (the delta update when asked and offered, else the full
    /// playlist), its ETag (the full one's plus `-s1`/`-s2` for a delta) and max-age; nil before the rendition has
    /// a playlist.
    private func lowLatencyForm(
        channel: String, rendition: RenditionSnapshot, skip: SkipRequest?, blocking: Bool
    ) -> (responses: PlaylistResponses, etag: String, maxAge: Int)? {
        guard let full = rendition.playlist else { return nil }
        let delta: (bytes: SharedBytes, suffix: String)? =
            switch skip {
            case .segments: rendition.lowLatency?.skipPlaylist.map { ($0, "-s1") }
            case .segmentsAndDateRanges: rendition.lowLatency?.skipPlaylistV2.map { ($0, "-s2") }
            case nil: nil
            }
        let maxAge = blocking ? 6 * rendition.targetDuration : rendition.targetDuration / 2
        let etag = "\"\(instanceTag)-\(rendition.version)\(delta?.suffix ?? "")\""
        let responses =
            delta == nil && !blocking
            ? live.prepared.playlist(channel: channel, of: rendition, bytes: full)
            : live.lowLatency.playlist(
                channel: channel, of: rendition, bytes: delta?.bytes ?? full,
                form: LowLatencyAnswerStore.Form(skip: delta == nil ? nil : skip, blocking: blocking))
        return (responses, etag, maxAge)
    }

    /// 400 for a malformed or impossible directive: never stored.
    static func refusedDirective(_ reason: String) -> HTTPResponse {
        var response = HTTPResponse.text(400, "delivery directive refused: \(reason)\n")
        response.headers.append(name: "Cache-Control", value: "no-store")
        return response
    }

    /// 503 of a blocking reload whose part was not listed within 3 target durations: never stored.
    static func blockingTimeout(_ position: PartPosition, wholeSegment: Bool, rendition: String) -> HTTPResponse {
        let what = wholeSegment ? "segment \(position.msn)" : "part \(position)"
        var response = HTTPResponse.text(
            503, "rendition '\(rendition)' did not list \(what) within 3 target durations; reload the playlist\n")
        response.headers.append(name: "Cache-Control", value: "no-store")
        return response
    }

    // MARK: - Parts

    /// `{msn}.{part}.{ext}` in its canonical form (decimal numbers without leading zeros); nil for other names.
    static func partName(_ name: String) -> (position: PartPosition, fileExtension: Substring)? {
        let pieces = name.split(separator: ".", omittingEmptySubsequences: false)
        guard pieces.count == 3, let msn = canonicalNumber(pieces[0]).flatMap({ UInt64($0) }),
            let part = canonicalNumber(pieces[1]).flatMap({ Int($0) }), !pieces[2].isEmpty
        else { return nil }
        return (PartPosition(msn: msn, part: part), pieces[2])
    }

    /// A decimal number as URLs name MSNs and parts: digits only, no leading zeros, at most 20 digits.
    static func canonicalNumber(_ text: Substring) -> Substring? {
        guard !text.isEmpty, text.count <= 20,
            text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            text.count == 1 || !text.hasPrefix("0")
        else { return nil }
        return text
    }

    /// A part URL: a listed or retained part's bytes (immutable, validators and ranges as segments); the
    /// preload-hinted part (or the one after it) answered as it is cut; 404 for anything else.
    func livePart(
        _ request: HTTPRequestHead, channel: Channel, snapshot: ChannelSnapshot, rendition: RenditionSnapshot,
        file: String, position: PartPosition, fileExtension: Substring, cmsd: String?
    ) -> HTTPRequestAction {
        let container =
            rendition.entries.last?.container
            ?? (rendition.currentInitVersion == nil ? .mpegTS : .fragmentedMP4Segment)
        guard let lowLatency = rendition.lowLatency, snapshot.encryption == nil,
            fileExtension == container.segmentFileExtension
        else {
            return .respond(Self.noPart(file, rendition: rendition.name))
        }
        let etag = "\"\(instanceTag)-\(position.msn).\(position.part)\""
        if let part = lowLatency.part(position) {
            guard let bytes = part.bytes else {
                var response = HTTPResponse.text(
                    404, "part \(position) is a GAP part: the encoder delivered no media for it\n")
                response.headers.append(name: "Cache-Control", value: "public, max-age=\(rendition.targetDuration)")
                return .respond(response)
            }
            guard StaticRepresentation.answersAsPlainGet(request, delivery: .byteRanges) else {
                return .respond(
                    serveImmutable(
                        request, bytes: bytes, contentType: container.contentType, etag: etag,
                        modifiedMilliseconds: nil))
            }
            // A plain GET: one prepared answer per part, kept while the part answers (and per thread after it).
            let prepared = live.prepared.part(channel: channel.name, of: rendition, position: position, bytes: bytes) {
                preparedImmutable(
                    bytes, contentType: container.contentType, etag: etag, modifiedMilliseconds: nil, cmsd: cmsd)
            }
            return .respondPrepared(prepared)
        }
        guard let hint = lowLatency.preloadHint, Channel.isHintedOrNext(position, hint: hint) else {
            return .respond(Self.noPart(file, rendition: rendition.name))
        }
        let deadline = origin.clock.nowMilliseconds() + 3 * Int64(rendition.targetDuration) * 1000
        let name = rendition.name
        // Streamed only to a plain GET; HEAD, ranges and validators are answered once the part is complete.
        let streams =
            request.method == "GET" && StaticRepresentation.answersAsPlainGet(request, delivery: .byteRanges)
        return .suspend { [self] responder in
            let answer = HintedPartAnswer(
                handler: self, request: request, responder: responder, channel: channel, rendition: name,
                position: position, file: file, contentType: container.contentType, etag: etag,
                deadlineMilliseconds: deadline, streams: streams, cmsd: cmsd)
            if !channel.watchPart(
                rendition: name, position: position, deadlineMilliseconds: deadline, observer: answer.hear)
            {
                responder.respond(finish(Self.withCMSD(Self.noPart(file, rendition: name), cmsd)))
            }
        }
    }

    /// The 404 of a part URL that names nothing (yet): nothing caches it.
    static func noPart(_ file: String, rendition: String) -> HTTPResponse {
        var response = HTTPResponse.text(404, "no part '\(file)' in rendition '\(rendition)'\n")
        response.headers.append(name: "Cache-Control", value: "no-cache")
        return response
    }
}

/// The answer of one preload-hinted part request: 200 with a chunked body fed as the part is cut (a plain GET),
/// or, for HEAD, ranges and validators, the complete part once it is listed; 404 when the part will not come,
/// 503 when it did not come within 3 target durations.
final class HintedPartAnswer: Sendable {
    private let handler: OriginHTTPHandler
    private let request: HTTPRequestHead
    private let responder: HTTPResponder
    private let channel: Channel
    private let rendition: String
    private let position: PartPosition
    private let file: String
    private let contentType: String
    private let etag: String
    private let deadline: Int64
    private let streams: Bool
    /// The answer's CMSD-Static value (nil: CMSD off).
    private let cmsd: String?
    /// The body being streamed, once the first bytes came.
    private let stream = Mutex<HTTPBodyStream?>(nil)

    init(
        handler: OriginHTTPHandler, request: HTTPRequestHead, responder: HTTPResponder, channel: Channel,
        rendition: String, position: PartPosition, file: String, contentType: String, etag: String,
        deadlineMilliseconds: Int64, streams: Bool, cmsd: String?
    ) {
        self.cmsd = cmsd
        self.handler = handler
        self.request = request
        self.responder = responder
        self.channel = channel
        self.rendition = rendition
        self.position = position
        self.file = file
        self.contentType = contentType
        self.etag = etag
        self.deadline = deadlineMilliseconds
        self.streams = streams
    }

    /// The handler's `finish` with this answer's CMSD.
    private func finish(_ response: HTTPResponse) -> HTTPResponse {
        handler.finish(OriginHTTPHandler.withCMSD(response, cmsd))
    }

    /// The observer given to `Channel.watchPart` (called in order, one call at a time).
    @Sendable func hear(_ progress: PartProgress) {
        switch progress {
        case .bytes(let bytes):
            guard streams else { return }
            let (stream, started) = self.stream.withLock { stream in
                if let stream { return (stream, false) }
                let made = HTTPBodyStream()
                stream = made
                return (made, true)
            }
            if started {
                let headers: HTTPHeaders = [
                    "Content-Type": contentType, "Cache-Control": OriginHTTPHandler.immutable, "ETag": etag,
                ]
                responder.respond(finish(HTTPResponse(status: 200, headers: headers, body: .stream(stream))))
            }
            stream.append(bytes)
        case .complete:
            if let stream = stream.withLock({ $0 }) {
                stream.finish()
                return
            }
            let part = channel.snapshot.renditions[rendition]?.lowLatency?.part(position)?.bytes
            responder.respond(
                finish(
                    part.map {
                        handler.serveImmutable(
                            request, bytes: $0, contentType: contentType, etag: etag, modifiedMilliseconds: nil)
                    } ?? OriginHTTPHandler.noPart(file, rendition: rendition)))
        case .failed:
            if let stream = stream.withLock({ $0 }) {
                stream.fail()
                return
            }
            if handler.origin.clock.nowMilliseconds() >= deadline {
                var response = HTTPResponse.text(
                    503, "part \(position) of rendition '\(rendition)' did not come within 3 target durations\n")
                response.headers.append(name: "Cache-Control", value: "no-store")
                responder.respond(finish(response))
            } else {
                responder.respond(finish(OriginHTTPHandler.noPart(file, rendition: rendition)))
            }
        }
    }
}
