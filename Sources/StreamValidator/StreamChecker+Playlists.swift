import Foundation
import HLSPlaylist

/// Loading a playlist answer: status, text, headers, syntax and version (rules 1-6, 45, 47, 48), for multivariant and
/// media playlists alike.
extension StreamChecker {
    /// The playlist media types of RFC 8216 section 4.
    static let playlistTypes: Set<String> = ["application/vnd.apple.mpegurl", "audio/mpegurl"]

    /// The text of a playlist answer, or nil (and a syntax failure) when it did not load or is not UTF-8.
    mutating func loadText(_ fetch: HTTPFetch, kind: String) -> String? {
        checked(.syntax)
        guard let status = fetch.status else {
            fail(.syntax, "\(kind) \(fetch.url): \(fetch.outcome) at \(Self.time(fetch.sent))")
            return nil
        }
        guard status == 200 else {
            fail(.syntax, "\(kind) \(fetch.url): status \(status) at \(Self.time(fetch.sent))")
            return nil
        }
        guard let text = String(validating: fetch.body, as: UTF8.self) else {
            fail(.syntax, "\(kind) \(fetch.url): not UTF-8")
            return nil
        }
        checkPlaylistHeaders(fetch, kind: kind)
        return text
    }

    /// Content-Type (rules 2, 45) and CORS (rule 48) of a playlist answer.
    mutating func checkPlaylistHeaders(_ fetch: HTTPFetch, kind: String) {
        checked(.contentTypes)
        let type = fetch.mediaType
        if type.map({ !Self.playlistTypes.contains($0) }) ?? true {
            fail(
                .contentTypes,
                "\(kind) \(fetch.url): Content-Type \(fetch.header("content-type") ?? "missing") "
                    + "(expected application/vnd.apple.mpegurl)")
        }
        checkCORS(fetch, kind: kind)
    }

    /// `Access-Control-Allow-Origin` on an answer (rule 48).
    mutating func checkCORS(_ fetch: HTTPFetch, kind: String) {
        checked(.cors)
        if fetch.header("access-control-allow-origin") == nil {
            fail(.cors, "\(kind) \(fetch.url): no Access-Control-Allow-Origin (browser players cannot read it)")
        }
    }

    /// Rules 4 and 5: EXT-X-VERSION present when needed, and at least `needed`.
    mutating func checkVersion(declared: Int?, needed: Int, needs: String, kind: String, url: String) {
        checked(.version)
        if let declared {
            if declared < needed {
                fail(.version, "\(kind) \(url): EXT-X-VERSION \(declared), but \(needs) needs version \(needed)")
            }
        } else if needed > 1 {
            fail(.version, "\(kind) \(url): no EXT-X-VERSION, but \(needs) needs version \(needed)")
        }
    }

    /// The version a media playlist needs and the feature that needs it: ``MediaPlaylist/minimumVersion``, except
    /// that whole-number EXTINFs need no version 3 (the renderer always writes decimals; a playlist read here may not).
    static func neededVersion(_ playlist: MediaPlaylist) -> (version: Int, feature: String) {
        let version = playlist.minimumVersion
        let decimal = playlist.segments.contains { $0.duration != $0.duration.rounded() }
        if version == 3, !playlist.iFramesOnly, !decimal {
            let iv = playlist.segments.contains {
                if case .aes128(_, let iv?) = $0.key { return !iv.isEmpty }
                return false
            }
            return iv ? (2, "EXT-X-KEY with IV") : (1, "nothing")
        }
        if version == 3 { return (3, playlist.iFramesOnly ? "EXT-X-I-FRAMES-ONLY" : "a decimal EXTINF") }
        return (version, "its tags (EXT-X-MAP, BYTERANGE, DEFINE or SKIP)")
    }

    /// Rule 21: every EXT-X-PROGRAM-DATE-TIME value of `text` is `YYYY-MM-DDThh:mm:ss.sss` and a zone.
    mutating func checkProgramDateTimeText(_ text: String, name: String) {
        let prefix = "#EXT-X-PROGRAM-DATE-TIME:"
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) where line.hasPrefix(prefix) {
            let value = String(line.dropFirst(prefix.count)).trimmingCharacters(in: .whitespaces)
            checked(.programDateTimeFormat)
            if !Self.isRecommendedDateTime(value) {
                fail(
                    .programDateTimeFormat,
                    "\(name): EXT-X-PROGRAM-DATE-TIME:\(value) is not YYYY-MM-DDThh:mm:ss.sss with a time zone "
                        + "(Z or +hh:mm)")
            }
        }
    }

    /// `YYYY-MM-DDThh:mm:ss.sss[s...]` followed by `Z`, `±hh:mm` or `±hhmm`, and a valid date.
    static func isRecommendedDateTime(_ value: String) -> Bool {
        guard ProgramDateTime(iso8601: value) != nil else { return false }
        let bytes = Array(value.utf8)
        // 19 characters of date and time, then '.', at least three digits.
        guard bytes.count >= 24, bytes[19] == UInt8(ascii: ".") else { return false }
        var index = 20
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
        guard index - 20 >= 3 else { return false }
        let zone = bytes[index...]
        return zone == [UInt8(ascii: "Z")] || zone.first == UInt8(ascii: "+") || zone.first == UInt8(ascii: "-")
    }

    // MARK: - Multivariant

    /// The VIDEO-RANGE and HDCP-LEVEL values of the stream tags that RFC 8216bis does not define (`VIDEO-RANGE=HDR
    /// not defined; clients skip the variant`): the parser reads them as unset, since a newer packager's value is not
    /// malformed, but a client SHOULD NOT select such a variant.
    static func unknownVideoAttributes(in text: String) -> [String] {
        var found: [String] = []
        for line in text.split(whereSeparator: \.isNewline) {
            guard let colon = line.firstIndex(of: ":"),
                ["#EXT-X-STREAM-INF", "#EXT-X-I-FRAME-STREAM-INF"].contains(String(line[..<colon])),
                let attributes = try? AttributeList.parse(String(line[line.index(after: colon)...]))
            else { continue }
            for (name, value) in attributes {
                let unknown =
                    name == "VIDEO-RANGE" ? HLSVideoRange(rawValue: value) == nil
                    : name == "HDCP-LEVEL" ? HDCPLevel(rawValue: value) == nil : false
                let text = "\(name)=\(value) not defined; clients skip the variant"
                if unknown, !found.contains(text) { found.append(text) }
            }
        }
        return found
    }

    /// Reads the multivariant playlist at the URL given; returns the media playlists to follow (every variant and
    /// every EXT-X-MEDIA with a URI, closed captions aside), absolute, in playlist order. I-frame playlists are not
    /// followed. Called again at the end of the watch: BANDWIDTH is checked against the last version (an origin may
    /// raise it as it measures), and a change is noted.
    public mutating func observeMultivariant(_ fetch: HTTPFetch) -> [String] {
        reloads += 1
        multivariantURL = fetch.url
        let kind = "multivariant playlist"
        guard let text = loadText(fetch, kind: kind) else { return [] }
        let playlist: MultivariantPlaylist
        do {
            playlist = try MultivariantPlaylist.parse(text)
        } catch {
            fail(.syntax, "\(kind) \(fetch.url): \(error)")
            return []
        }
        let declared = PlaylistVersion.declared(in: text)
        checkVersion(
            declared: declared, needed: playlist.minimumVersion, needs: "its tags (DEFINE, INSTREAM-ID SERVICEn)",
            kind: kind, url: fetch.url)
        checked(.multivariant)
        for error in playlist.validate() { fail(.multivariant, "\(kind): \(error)") }
        for unknown in Self.unknownVideoAttributes(in: text)
        where findings[.multivariant]?.notes.contains(unknown) != true {
            note(.multivariant, unknown)
        }
        for violation in playlist.validateDefines(declaredVersion: declared) {
            fail(.multivariant, "\(kind): \(violation)")
        }
        if let earlier = multivariant {
            for (before, after) in zip(earlier.variants, playlist.variants)
            where before.uri == after.uri && before.bandwidth != after.bandwidth {
                note(
                    .bandwidth,
                    "\(after.uri): BANDWIDTH went from \(before.bandwidth) to \(after.bandwidth) while watched (the last "
                        + "is checked)")
            }
        }
        multivariant = playlist
        var urls: [String] = []
        let uris =
            playlist.variants.map(\.uri) + playlist.renditions.filter { $0.type != .closedCaptions }.compactMap(\.uri)
        for uri in uris {
            let url = Self.resolve(uri, against: fetch.url)
            guard !urls.contains(url) else { continue }
            urls.append(url)
            if renditions[url] == nil {
                renditions[url] = RenditionHistory(url: url, name: uri)
                renditionOrder.append(url)
            }
        }
        return urls
    }
}
