import HLSPackaging
import LiveTimeline
import MicroHTTPD
import OriginCore
import SharedBytes

/// AES-128 on the way out: `/live/{ch}/key-{period}.key`, `{r}/iframe-{msn}.{ext}`, and the ciphertext of the
/// segments, GAP fillers and stored segments of encrypted channels (init sections and playlists stay clear).
extension OriginHTTPHandler {
    /// `key-{period}.key` (canonical decimal only): the 16 key bytes, never cached; 404 with the reason for a clear
    /// channel, a channel whose keys are served elsewhere, or a period no published segment uses yet.
    func keyFile(_: HTTPRequestHead, channel: Channel, file: String) -> HTTPRequestAction {
        guard file.hasPrefix("key-"), file.hasSuffix(".key"), case let number = file.dropFirst(4).dropLast(4),
            let period = UInt64(number), file == "key-\(period).key"
        else {
            return .respond(Self.notFound("unknown path in channel '\(channel.name)'"))
        }
        guard let encryption = channel.snapshot.encryption else {
            return .respond(Self.notFound("channel '\(channel.name)' is not encrypted: it has no keys"))
        }
        if encryption.keyURITemplate != nil {
            return .respond(
                Self.notFound("channel '\(channel.name)' keys are served by its keyURI, not by this origin"))
        }
        guard let key = channel.periodKey(period) else {
            return .respond(Self.notFound("key period \(period) is not yet in use"))
        }
        // libmicrohttpd leaves the body out of a HEAD answer itself.
        return .respond(
            HTTPResponse(
                status: 200,
                headers: ["Content-Type": "application/octet-stream", "Cache-Control": "private, no-store"],
                body: .bytes(SharedBytes(key))))
    }

    /// `iframe-{msn}.{ext}` of an encrypted channel: the segment's first keyframe range encrypted on its own (a clear
    /// MSN of a channel that encrypted before is served clear). Nil for every other file and for clear channels,
    /// which the caller serves (segments and fillers of encrypted channels get their ciphertext there).
    func encryptedIFrame(
        _ request: HTTPRequestHead, _ snapshot: ChannelSnapshot, _ channel: Channel, _ rendition: RenditionSnapshot,
        _ file: String
    ) -> HTTPRequestAction? {
        guard let encryption = snapshot.encryption, file.hasPrefix("iframe-") else { return nil }
        guard let (msn, fileExtension) = Self.segmentName(String(file.dropFirst(7))),
            let container = rendition.entry(msn: msn)?.container ?? rendition.entries.last?.container,
            fileExtension == container.segmentFileExtension,
            let bytes = encryption.period(of: msn) == nil
                ? channel.iFrameBytes(rendition: rendition.name, msn: msn)
                : channel.iFrameCiphertext(rendition: rendition.name, msn: msn)
        else {
            return .respond(Self.noSegment(file, rendition: rendition.name))
        }
        return .respond(
            serveImmutable(
                request, bytes: bytes, contentType: Self.iFrameContentType(fileExtension),
                etag: "\"\(instanceTag)-i\(msn)\"", modifiedMilliseconds: rendition.entry(msn: msn)?.endMilliseconds))
    }

    /// A stored segment of an encrypted channel: read (not sent from the file: sendfile cannot encrypt) and
    /// encrypted through the channel's ciphertext cache.
    func storedEncryptedResponse(
        _ request: HTTPRequestHead, _ stored: StoredSegmentAnswer, channel: Channel, rendition: String
    ) -> HTTPResponse {
        let record = stored.record
        let plaintext: SharedBytes?
        switch stored.body {
        case .bytes(let bytes): plaintext = bytes
        case .file: plaintext = channel.storedSegmentBytes(rendition: rendition, msn: record.msn)
        }
        guard let plaintext else { return Self.noSegment("\(record.msn)", rendition: rendition) }
        let served = channel.ciphertext(rendition: rendition, msn: record.msn, plaintext: plaintext) ?? plaintext
        return StaticRepresentation(
            bytes: served, contentType: record.container.contentType, cacheControl: Self.immutable,
            etag: "\"\(instanceTag)-\(record.msn)\"", lastModifiedSeconds: record.endMilliseconds / 1000,
            delivery: .byteRanges
        ).response(to: request)
    }

    /// `{msn}.{ext}` with the canonical decimal MSN (no leading zeros); nil otherwise.
    static func segmentName(_ name: String) -> (msn: UInt64, fileExtension: Substring)? {
        guard let dot = name.lastIndex(of: "."), let number = canonicalNumber(name[..<dot]), let msn = UInt64(number)
        else { return nil }
        return (msn, name[name.index(after: dot)...])
    }

    /// The Content-Type of an I-frame resource: its segment container's.
    static func iFrameContentType(_ fileExtension: Substring) -> String {
        fileExtension == "ts" ? "video/mp2t" : "video/mp4"
    }

    /// A 404 that nothing caches, with its reason.
    static func notFound(_ reason: String) -> HTTPResponse {
        var response = HTTPResponse.text(404, reason + "\n")
        response.headers.append(name: "Cache-Control", value: "no-cache")
        return response
    }

    /// `GET /admin/channels/{ch}/keys/{period}`: the period's key as hex, for an external key server (`keyURI`).
    func adminPeriodKey(channel name: String, period text: String) -> HTTPResponse {
        guard let channel = origin.channel(named: name) else {
            return json(404, ["error": "unknown channel '\(name)'"])
        }
        guard channel.snapshot.encryption != nil else {
            return json(404, ["error": "channel '\(name)' is not encrypted: it has no keys"])
        }
        guard let period = UInt64(text), text == String(period) else {
            return json(404, ["error": "key period '\(text)' is not a decimal number"])
        }
        guard let key = channel.periodKey(period) else {
            return json(404, ["error": "key period \(period) is not yet in use"])
        }
        let hex = key.map { String($0 >> 4, radix: 16) + String($0 & 0xF, radix: 16) }.joined()
        return json(200, ["channel": name, "period": String(period), "key": hex])
    }

    /// `/vod` of a recording of an encrypted or authorized channel: refused until recordings carry the keys.
    static func protectedRecording(_ channel: Channel) -> HTTPResponse? {
        guard
            channel.configuration.encryption != nil || channel.configuration.playback != nil
                || channel.snapshot.encryption != nil
        else { return nil }
        var response = HTTPResponse.text(403, "recordings of protected channels are not served yet\n")
        response.headers.append(name: "Cache-Control", value: "no-store")
        return response
    }
}
