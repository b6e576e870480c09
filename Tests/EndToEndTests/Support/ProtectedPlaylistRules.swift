import Foundation
import HLSPlaylist

/// HLS-RULES 30 (EXT-X-DEFINE), 33 (EXT-X-KEY / EXT-X-SESSION-KEY) and 36 (EXT-X-I-FRAME-STREAM-INF) applied to every
/// playlist text a test fetched, including across reloads: a KEY tag must never disappear while a segment it
/// applies to is listed, so an MSN seen twice must have the same key in force both times. Each text is checked twice:
/// by this reader of the text, and by HLSPlaylist's validation functions on the parsed values
/// (`validateDefines`, `validateDefinesAndKeys`, `validateKeyContinuity`).
final class ProtectedPlaylistRules {
    private(set) var violations: [String] = []
    /// Playlists checked, for the test's output.
    private(set) var checked = 0
    /// Names each multivariant playlist defined (NAME or QUERYPARAM), by channel directory (`/live/ch/`).
    private var multivariantNames: [String: Set<String>] = [:]
    /// The key in force at each MSN, by media playlist path (query removed).
    private var keyInForce: [String: [UInt64: String]] = [:]
    /// Every resolved (METHOD, URI) of EXT-X-KEY seen in the channel's media playlists.
    private var mediaKeys: Set<String> = []
    /// Resolved SESSION-KEYs, checked against `mediaKeys` at the end.
    private var sessionKeys: [(key: String, seenIn: String)] = []
    /// I-frame playlist paths a multivariant announced; `media` checks that each has I-FRAMES-ONLY.
    private(set) var announcedIFramePlaylists: Set<String> = []
    private var iFramePlaylistsSeen: Set<String> = []
    /// The previous parsed snapshot of each media playlist (query removed), for `validateKeyContinuity`.
    private var previousSnapshot: [String: MediaPlaylist] = [:]

    private func fail(_ message: String) {
        if violations.count < 200 { violations.append(message) }
    }

    private static func directory(of path: String) -> String {
        let bare = path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path
        return String(bare[...(bare.lastIndex(of: "/") ?? bare.startIndex)])
    }

    private static func bare(_ path: String) -> String {
        path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path
    }

    private static func isName(_ name: String) -> Bool {
        !name.isEmpty && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }
    }

    /// Rule 30 for one playlist; returns the variables it defines with their values (QUERYPARAM: from `path`'s
    /// query; IMPORT: unknown here, "").
    private func checkDefinitions(
        _ lines: [Substring], path: String, isMultivariant: Bool, version: Int?
    ) -> [String: String] {
        var names: [String: String] = [:]
        var usesQueryParameter = false
        let query = URLComponents(string: "http://origin" + path)?.queryItems ?? []
        for line in lines where line.hasPrefix("#EXT-X-DEFINE:") {
            let attributes = AttributeText.parse(String(line.dropFirst("#EXT-X-DEFINE:".count)))
            let forms = ["NAME", "IMPORT", "QUERYPARAM"].filter { attributes[$0] != nil }
            guard forms.count == 1, let form = forms.first, let name = attributes[form] else {
                fail("rule 30: \(path): EXT-X-DEFINE needs exactly one of NAME, IMPORT, QUERYPARAM: \(line)")
                continue
            }
            if !Self.isName(name) { fail("rule 30: \(path): variable name '\(name)' is not [A-Za-z0-9_-]+") }
            if names[name] != nil { fail("rule 30: \(path): variable '\(name)' defined twice") }
            switch form {
            case "NAME":
                if attributes["VALUE"] == nil { fail("rule 30: \(path): NAME without VALUE: \(line)") }
                names[name] = attributes["VALUE"] ?? ""
            case "IMPORT":
                if isMultivariant { fail("rule 30: \(path): IMPORT in a multivariant playlist") }
                if let defined = multivariantNames[Self.directory(of: path)]
                    ?? multivariantNames[Self.directory(of: String(Self.directory(of: path).dropLast()))],
                    !defined.contains(name)
                {
                    fail("rule 30: \(path): IMPORT of '\(name)', which the multivariant playlist does not define")
                }
                names[name] = ""
            default:
                usesQueryParameter = true
                guard let value = query.first(where: { $0.name == name })?.value else {
                    fail("rule 30: \(path): QUERYPARAM '\(name)' but the playlist's URL has no such query parameter")
                    continue
                }
                names[name] = value
            }
        }
        if !names.isEmpty, (version ?? 1) < (usesQueryParameter ? 11 : 8) {
            fail(
                "rule 30: \(path): EXT-X-DEFINE needs version \(usesQueryParameter ? 11 : 8), playlist says \(version ?? 1)"
            )
        }
        // Every reference must be defined in this playlist.
        var rest = lines.joined(separator: "\n")[...]
        while let open = rest.range(of: "{$") {
            guard let close = rest[open.upperBound...].firstIndex(of: "}") else { break }
            let name = String(rest[open.upperBound..<close])
            if names[name] == nil { fail("rule 30: \(path): reference {$\(name)} to an undefined variable") }
            rest = rest[rest.index(after: close)...]
        }
        return names
    }

    private static func version(_ lines: [Substring]) -> Int? {
        lines.first { $0.hasPrefix("#EXT-X-VERSION:") }.flatMap { Int($0.dropFirst("#EXT-X-VERSION:".count)) }
    }

    /// Rule 33: METHOD, URI, IV of one KEY or SESSION-KEY attribute list.
    private func checkKeyAttributes(_ attributes: [String: String], path: String, line: Substring, session: Bool) {
        let method = attributes["METHOD"] ?? ""
        if !["NONE", "AES-128", "SAMPLE-AES"].contains(method) {
            fail("rule 33: \(path): METHOD '\(method)': \(line)")
        }
        if session, method == "NONE" { fail("rule 33: \(path): EXT-X-SESSION-KEY with METHOD=NONE") }
        if method != "NONE", (attributes["URI"] ?? "").isEmpty { fail("rule 33: \(path): KEY without URI: \(line)") }
        if let iv = attributes["IV"] {
            let digits = iv.dropFirst(2)
            if !(iv.hasPrefix("0x") || iv.hasPrefix("0X")) || digits.count != 32 || !digits.allSatisfy(\.isHexDigit) {
                fail("rule 33: \(path): IV is not 128-bit hexadecimal: \(line)")
            }
        }
    }

    /// Checks a multivariant playlist fetched from `path` (with its query, e.g. `/live/ch/index.m3u8?token=…`).
    func multivariant(path: String, text: String) {
        checked += 1
        let lines = text.split(whereSeparator: \.isNewline)
        let names = checkDefinitions(lines, path: path, isMultivariant: true, version: Self.version(lines))
        multivariantNames[Self.directory(of: path)] = Set(names.keys)
        do {
            let parsed = try MultivariantPlaylist.parse(text)
            for violation in parsed.validateDefines(declaredVersion: PlaylistVersion.declared(in: text)) {
                fail("HLSPlaylist: \(path): \(violation)")
            }
        } catch {
            fail("HLSPlaylist cannot parse the multivariant \(path): \(error)")
        }
        for line in lines {
            if line.hasPrefix("#EXT-X-SESSION-KEY:") {
                let attributes = AttributeText.parse(String(line.dropFirst("#EXT-X-SESSION-KEY:".count)))
                checkKeyAttributes(attributes, path: path, line: line, session: true)
                let uri = PlaylistURL.resolve(attributes["URI"] ?? "", against: path, variables: names)
                sessionKeys.append((key: "\(attributes["METHOD"] ?? "")|\(uri)", seenIn: path))
            } else if line.hasPrefix("#EXT-X-I-FRAME-STREAM-INF:") {
                let attributes = AttributeText.parse(String(line.dropFirst("#EXT-X-I-FRAME-STREAM-INF:".count)))
                if attributes["BANDWIDTH"].flatMap(Int.init) == nil {
                    fail("rule 36: \(path): I-FRAME-STREAM-INF without a BANDWIDTH: \(line)")
                }
                guard let uri = attributes["URI"], !uri.isEmpty else {
                    fail("rule 36: \(path): I-FRAME-STREAM-INF without a URI: \(line)")
                    continue
                }
                announcedIFramePlaylists.insert(Self.bare(PlaylistURL.resolve(uri, against: path, variables: names)))
            }
        }
    }

    /// Checks a media or I-frame playlist fetched from `path`, and the keys in force against its earlier reloads.
    /// `imports` are the values the client would import from the multivariant playlist.
    func media(path: String, text: String, imports: [String: String] = [:]) {
        checked += 1
        let lines = text.split(whereSeparator: \.isNewline)
        var names = checkDefinitions(lines, path: path, isMultivariant: false, version: Self.version(lines))
        for (name, value) in imports where names[name] == "" { names[name] = value }
        let playlist: MediaPlaylistText
        do {
            playlist = try MediaPlaylistText(text)
        } catch {
            fail("\(path): \(error)")
            return
        }
        if playlist.iFramesOnly { iFramePlaylistsSeen.insert(Self.bare(path)) }
        do {
            let parsed = try MediaPlaylist.parse(text)
            let importable =
                multivariantNames[Self.directory(of: String(Self.directory(of: path).dropLast()))]
                ?? multivariantNames[Self.directory(of: path)] ?? Set(imports.keys)
            var violations = parsed.validateDefinesAndKeys(
                importable: importable, declaredVersion: PlaylistVersion.declared(in: text))
            if let previous = previousSnapshot[Self.bare(path)] {
                violations += parsed.validateKeyContinuity(after: previous)
            }
            previousSnapshot[Self.bare(path)] = parsed
            for violation in violations { fail("HLSPlaylist: \(path): \(violation)") }
        } catch {
            fail("HLSPlaylist cannot parse \(path): \(error)")
        }
        for line in lines where line.hasPrefix("#EXT-X-KEY:") {
            let attributes = AttributeText.parse(String(line.dropFirst("#EXT-X-KEY:".count)))
            checkKeyAttributes(attributes, path: path, line: line, session: false)
            if attributes["METHOD"] != "NONE" {
                let uri = PlaylistURL.resolve(attributes["URI"] ?? "", against: path, variables: names)
                mediaKeys.insert("\(attributes["METHOD"] ?? "")|\(uri)")
            }
        }
        let key = Self.bare(path)
        var seen = keyInForce[key] ?? [:]
        for entry in playlist.entries {
            let inForce = entry.keyURI ?? "clear"
            if let earlier = seen[entry.msn], earlier != inForce {
                fail(
                    "rule 33: \(path): MSN \(entry.msn) was listed under key \(earlier), now under \(inForce): a KEY tag "
                        + "was removed or changed while a segment it applies to is listed")
            }
            seen[entry.msn] = inForce
        }
        keyInForce[key] = seen
    }

    /// The checks that need every playlist: each SESSION-KEY matches some EXT-X-KEY (rule 33), and each announced
    /// I-frame playlist that was fetched says EXT-X-I-FRAMES-ONLY (rule 36). Returns every violation.
    func finish() -> [String] {
        for session in sessionKeys where !mediaKeys.contains(session.key) {
            fail("rule 33: \(session.seenIn): SESSION-KEY \(session.key) matches no EXT-X-KEY of any media playlist")
        }
        let fetched = Set(keyInForce.keys)
        for path in announcedIFramePlaylists.intersection(fetched) where !iFramePlaylistsSeen.contains(path) {
            fail("rule 36: \(path) is announced by EXT-X-I-FRAME-STREAM-INF but has no EXT-X-I-FRAMES-ONLY")
        }
        return violations
    }
}
