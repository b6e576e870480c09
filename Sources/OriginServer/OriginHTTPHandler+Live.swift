import Foundation
import HLSPlaylist
import MicroHTTPD
import OriginCore
import SharedBytes

/// `/live/...`: multivariant and media playlists, segments and initialization sections from the latest snapshot.
extension OriginHTTPHandler {
    static let playlistType = "application/vnd.apple.mpegurl"
    static let immutable = "public, max-age=31536000, immutable"

    /// A GET or HEAD under `/live` (the caller answers other methods). Unconditional GETs of playlists and segments,
    /// the bulk of the traffic, are answered with a response prepared once per playlist version or segment; requests
    /// with validators or ranges are answered from scratch, with the same headers.
    func live(_ request: HTTPRequestHead, _ path: ArraySlice<String>) -> HTTPRequestAction {
        guard path.count == 2 || path.count == 3, let channel = origin.channel(named: path[path.startIndex]) else {
            return respond(.text(404, "unknown channel or path\n"))
        }
        let snapshot = channel.snapshot
        let second = path[path.startIndex + 1]
        if path.count == 2 {
            guard second == "index.m3u8" else {
                return respond(.text(404, "unknown path in channel '\(channel.name)'\n"))
            }
            guard let playlist = snapshot.multivariantPlaylist else {
                return respond(.text(404, "channel '\(channel.name)' has no media yet\n"))
            }
            let modified = snapshot.multivariantModifiedMilliseconds
            return servePlaylist(
                request, bytes: playlist, derived: snapshot.derived, prepared: snapshot.derivedObject,
                modifiedMilliseconds: modified, maxAge: configuration.multivariantMaxAge
            ) { "\"\(instanceTag)-m\(modified)\"" }
        }
        guard let rendition = snapshot.renditions[second] else {
            return respond(.text(404, "unknown rendition '\(second)' of channel '\(channel.name)'\n"))
        }
        let file = path[path.startIndex + 2]
        if file == "index.m3u8" {
            guard let playlist = rendition.playlist else {
                return respond(.text(404, "rendition '\(rendition.name)' has no media yet\n"))
            }
            return servePlaylist(
                request, bytes: playlist, derived: rendition.derived, prepared: rendition.derivedObject,
                modifiedMilliseconds: rendition.modifiedMilliseconds, maxAge: rendition.targetDuration / 2
            ) { "\"\(instanceTag)-\(rendition.version)\"" }
        }
        // Only the canonical name: `init-00.mp4` or `init-+0.mp4` must not alias `init-0.mp4`.
        if file.hasPrefix("init-"), file.hasSuffix(".mp4"), let version = Int(file.dropFirst(5).dropLast(4)),
            file == "init-\(version).mp4", let section = rendition.initSections[version]
        {
            return respond(
                serveImmutable(
                    request, bytes: section.bytes, contentType: "video/mp4", etag: "\"\(instanceTag)-init-\(version)\"",
                    modifiedMilliseconds: nil))
        }
        // Only the canonical name `{msn}.{ext}`: no leading zeros, the rendition's extension.
        guard let dot = file.utf8.lastIndex(of: UInt8(ascii: ".")), case let number = file.utf8[..<dot],
            !number.isEmpty, number.count <= 20,
            number.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            number.count == 1 || number.first != UInt8(ascii: "0"), let msn = UInt64(Substring(number)),
            let entry = rendition.entry(msn: msn),
            Substring(file.utf8[file.utf8.index(after: dot)...]) == entry.container.segmentFileExtension
        else {
            var response = HTTPResponse.text(404, "no segment '\(file)' in rendition '\(rendition.name)'\n")
            // A future segment appears soon: let nothing cache the miss.
            response.headers.append(name: "Cache-Control", value: "no-cache")
            return respond(response)
        }
        if let bytes = entry.bytes, !Self.isConditionalOrRange(request) {
            let prepared = entry.derivedObject.value {
                PreparedResponse(
                    Self.completed(
                        serveImmutable(
                            Self.plainGet, bytes: bytes, contentType: entry.container.contentType,
                            etag: "\"\(instanceTag)-\(msn)\"", modifiedMilliseconds: entry.endMilliseconds)))
            }
            return respond(prepared)
        }
        // A GAP entry with filler answers like a segment (clients that ignore EXT-X-GAP play through it).
        guard let bytes = entry.bytes ?? entry.filler else {
            var response = HTTPResponse.text(
                404, "msn \(msn) is an EXT-X-GAP entry: the encoder delivered no media for it\n")
            response.headers.append(name: "Cache-Control", value: "public, max-age=\(rendition.targetDuration)")
            return respond(response)
        }
        return respond(
            serveImmutable(
                request, bytes: bytes, contentType: entry.container.contentType, etag: "\"\(instanceTag)-\(msn)\"",
                modifiedMilliseconds: entry.endMilliseconds))
    }

    /// A request without the headers that change a segment's answer (validators, ranges).
    static func isConditionalOrRange(_ request: HTTPRequestHead) -> Bool {
        request.headers.contains("If-None-Match") || request.headers.contains("If-Modified-Since")
            || request.headers.contains("Range")
    }

    /// What a prepared response answers: a GET without conditions, with or without gzip.
    static let plainGet = HTTPRequestHead(method: "GET", path: "/")
    static let gzipGet = HTTPRequestHead(method: "GET", path: "/", headers: ["Accept-Encoding": "gzip"])

    /// The prepared plain and gzip answers of one playlist version, each built on first use.
    final class PreparedPlaylist: Sendable {
        let plain = DerivedObject()
        let gzip = DerivedObject()
    }

    /// A playlist: the prepared answer of its version for a GET without If-None-Match, else built here.
    func servePlaylist(
        _ request: HTTPRequestHead, bytes: SharedBytes, derived: DerivedBytes, prepared: DerivedObject,
        modifiedMilliseconds: Int64, maxAge: Int, etag: () -> String
    ) -> HTTPRequestAction {
        guard request.headers.contains("If-None-Match") else {
            let gzip = Self.acceptsGzip(request)
            let forms = prepared.value { PreparedPlaylist() }
            let form = (gzip ? forms.gzip : forms.plain).value {
                PreparedResponse(
                    Self.completed(
                        playlistResponse(
                            gzip ? Self.gzipGet : Self.plainGet, bytes: bytes, derived: derived, etag: etag(),
                            modifiedMilliseconds: modifiedMilliseconds, maxAge: maxAge)))
            }
            return respond(form)
        }
        return respond(
            playlistResponse(
                request, bytes: bytes, derived: derived, etag: etag(), modifiedMilliseconds: modifiedMilliseconds,
                maxAge: maxAge))
    }

    /// A playlist: short-lived caching, ETag validation, gzip when accepted.
    func playlistResponse(
        _ request: HTTPRequestHead, bytes: SharedBytes, derived: DerivedBytes, etag: String,
        modifiedMilliseconds: Int64, maxAge: Int
    ) -> HTTPResponse {
        var headers: HTTPHeaders = [
            "Content-Type": Self.playlistType, "Cache-Control": "public, max-age=\(max(maxAge, 0))", "ETag": etag,
            "Last-Modified": HTTPDate.format(secondsSince1970: modifiedMilliseconds / 1000),
            "Vary": "Accept-Encoding",
        ]
        if Self.noneMatch(request, etag: etag) { return HTTPResponse(status: 304, headers: headers) }
        if Self.acceptsGzip(request) {
            let compressed = derived.value("gzip") { Gzip.compress(bytes) ?? bytes }
            if compressed !== bytes {
                headers.append(name: "Content-Encoding", value: "gzip")
                return HTTPResponse(status: 200, headers: headers, body: .bytes(compressed))
            }
        }
        return HTTPResponse(status: 200, headers: headers, body: .bytes(bytes))
    }

    /// A segment or initialization section: cached for a year, validators, byte ranges.
    func serveImmutable(
        _ request: HTTPRequestHead, bytes: SharedBytes, contentType: String, etag: String,
        modifiedMilliseconds: Int64?
    ) -> HTTPResponse {
        var headers: HTTPHeaders = [
            "Content-Type": contentType, "Cache-Control": Self.immutable, "ETag": etag, "Accept-Ranges": "bytes",
        ]
        if let modifiedMilliseconds {
            headers.append(name: "Last-Modified", value: HTTPDate.format(secondsSince1970: modifiedMilliseconds / 1000))
        }
        if Self.noneMatch(request, etag: etag) { return HTTPResponse(status: 304, headers: headers) }
        if request.headers["If-None-Match"] == nil, let since = request.headers["If-Modified-Since"].flatMap(HTTPDate.parse),
            let modifiedMilliseconds, modifiedMilliseconds / 1000 <= since
        {
            return HTTPResponse(status: 304, headers: headers)
        }
        // If-Range with another validator: send the whole representation.
        let rangeHeader = request.headers["If-Range"].map { $0 == etag } ?? true ? request.headers["Range"] : nil
        switch ByteRangeRequest.resolve(rangeHeader, length: bytes.count) {
        case .whole:
            return HTTPResponse(status: 200, headers: headers, body: .bytes(bytes))
        case .partial(let range):
            headers.append(name: "Content-Range", value: "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(bytes.count)")
            return HTTPResponse(status: 206, headers: headers, body: .slice(bytes, range))
        case .unsatisfiable:
            var response = HTTPResponse.text(416, "range not satisfiable: the resource has \(bytes.count) bytes\n")
            response.headers.append(name: "Content-Range", value: "bytes */\(bytes.count)")
            return response
        }
    }

    static func noneMatch(_ request: HTTPRequestHead, etag: String) -> Bool {
        guard let header = request.headers["If-None-Match"] else { return false }
        return header == "*"
            || header.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "W/", with: "") == etag }
    }

    /// Whether Accept-Encoding allows gzip: the first item naming `gzip` or `*` decides, refused only by a q-value
    /// of zero (`q=0`, `q=0.0`...).
    static func acceptsGzip(_ request: HTTPRequestHead) -> Bool {
        guard var header = request.headers["Accept-Encoding"] else { return false }
        return header.withUTF8 { acceptsGzip(value: UnsafeRawBufferPointer($0)) }
    }

    /// `acceptsGzip(_:)` on the bytes of an Accept-Encoding value, without building strings.
    static func acceptsGzip(value: UnsafeRawBufferPointer) -> Bool {
        let comma = UInt8(ascii: ","), semicolon = UInt8(ascii: ";")
        var itemStart = 0
        while itemStart <= value.count {
            var itemEnd = itemStart
            while itemEnd < value.count && value[itemEnd] != comma { itemEnd += 1 }
            var codingEnd = itemStart
            while codingEnd < itemEnd && value[codingEnd] != semicolon { codingEnd += 1 }
            if isGzipOrAny(trimmed(value[itemStart..<codingEnd])) {
                var parameterStart = codingEnd + 1
                while parameterStart < itemEnd {
                    var parameterEnd = parameterStart
                    while parameterEnd < itemEnd && value[parameterEnd] != semicolon { parameterEnd += 1 }
                    let parameter = value[parameterStart..<parameterEnd].filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }
                    if parameter.starts(with: "q=0".utf8),
                        !parameter.contains(where: { $0 >= UInt8(ascii: "1") && $0 <= UInt8(ascii: "9") })
                    {
                        return false
                    }
                    parameterStart = parameterEnd + 1
                }
                return true
            }
            itemStart = itemEnd + 1
        }
        return false
    }

    private static func trimmed(_ bytes: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
        var bytes = bytes
        while let first = bytes.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") { bytes.removeFirst() }
        while let last = bytes.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { bytes.removeLast() }
        return bytes
    }

    private static func isGzipOrAny(_ coding: Slice<UnsafeRawBufferPointer>) -> Bool {
        if coding.elementsEqual("*".utf8) { return true }
        return coding.count == 4 && zip(coding, "gzip".utf8).allSatisfy { $0 | 0x20 == $1 }
    }
}
