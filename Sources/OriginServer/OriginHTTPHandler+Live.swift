import Foundation
import HLSPlaylist
import MicroHTTPD
import OriginCore
import SharedBytes

/// `/live/...`: multivariant and media playlists, segments and initialization sections from the latest snapshot.
extension OriginHTTPHandler {
    static let playlistType = "application/vnd.apple.mpegurl"
    static let immutable = "public, max-age=31536000, immutable"

    func live(_ request: HTTPRequestHead, _ path: [String]) -> HTTPResponse {
        if let refused = onlyReading(request) { return refused }
        guard path.count == 2 || path.count == 3, let channel = origin.channel(named: path[0]) else {
            return .text(404, "unknown channel or path\n")
        }
        let snapshot = channel.snapshot
        if path.count == 2 {
            guard path[1] == "index.m3u8" else { return .text(404, "unknown path in channel '\(channel.name)'\n") }
            guard let playlist = snapshot.multivariantPlaylist else {
                return .text(404, "channel '\(channel.name)' has no media yet\n")
            }
            return servePlaylist(
                request, bytes: playlist, derived: snapshot.derived,
                etag: "\"\(instanceTag)-m\(snapshot.multivariantModifiedMilliseconds)\"",
                modifiedMilliseconds: snapshot.multivariantModifiedMilliseconds,
                maxAge: configuration.multivariantMaxAge)
        }
        guard let rendition = snapshot.renditions[path[1]] else {
            return .text(404, "unknown rendition '\(path[1])' of channel '\(channel.name)'\n")
        }
        let file = path[2]
        if file == "index.m3u8" {
            guard let playlist = rendition.playlist else {
                return .text(404, "rendition '\(rendition.name)' has no media yet\n")
            }
            return servePlaylist(
                request, bytes: playlist, derived: rendition.derived,
                etag: "\"\(instanceTag)-\(rendition.version)\"", modifiedMilliseconds: rendition.modifiedMilliseconds,
                maxAge: rendition.targetDuration / 2)
        }
        // Only the canonical name: `init-00.mp4` or `init-+0.mp4` must not alias `init-0.mp4`.
        if file.hasPrefix("init-"), file.hasSuffix(".mp4"), let version = Int(file.dropFirst(5).dropLast(4)),
            file == "init-\(version).mp4", let section = rendition.initSections[version]
        {
            return serveImmutable(
                request, bytes: section.bytes, contentType: "video/mp4", etag: "\"\(instanceTag)-init-\(version)\"",
                modifiedMilliseconds: nil)
        }
        guard let dot = file.lastIndex(of: "."), case let number = file[..<dot], !number.isEmpty, number.count <= 20,
            number.allSatisfy({ $0.isASCII && $0.isNumber }), let msn = UInt64(number),
            let entry = rendition.entry(msn: msn), entry.uri == file
        else {
            var response = HTTPResponse.text(404, "no segment '\(file)' in rendition '\(rendition.name)'\n")
            // A future segment appears soon: let nothing cache the miss.
            response.headers.append(name: "Cache-Control", value: "no-cache")
            return response
        }
        // A GAP entry with filler answers like a segment (clients that ignore EXT-X-GAP play through it).
        guard let bytes = entry.bytes ?? entry.filler else {
            var response = HTTPResponse.text(
                404, "msn \(msn) is an EXT-X-GAP entry: the encoder delivered no media for it\n")
            response.headers.append(name: "Cache-Control", value: "public, max-age=\(rendition.targetDuration)")
            return response
        }
        return serveImmutable(
            request, bytes: bytes, contentType: entry.container.contentType, etag: "\"\(instanceTag)-\(msn)\"",
            modifiedMilliseconds: entry.endMilliseconds)
    }

    /// A playlist: short-lived caching, ETag validation, gzip when accepted.
    func servePlaylist(
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

    static func acceptsGzip(_ request: HTTPRequestHead) -> Bool {
        guard let header = request.headers["Accept-Encoding"] else { return false }
        for item in header.split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let coding = parts.first?.lowercased(), coding == "gzip" || coding == "*" else { continue }
            let refused = parts.dropFirst().contains { $0.replacingOccurrences(of: " ", with: "").hasPrefix("q=0") && !$0.contains(where: { "123456789".contains($0) }) }
            return !refused
        }
        return false
    }
}
