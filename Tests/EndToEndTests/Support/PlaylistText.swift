import Foundation
import TestSupport

/// A media playlist as the protected-stream tests read it, straight from the text: every entry with its MSN, the
/// AES-128 key in force at it, its byte range, GAP, DISCONTINUITY and PDT. URIs are kept as written (variable
/// references unresolved); `PlaylistURL.resolve` plays the client's part.
struct MediaPlaylistText: Sendable {
    /// A byte range, `EXT-X-BYTERANGE:length@offset`.
    struct ByteRange: Sendable, Hashable {
        let length: Int
        let offset: Int
    }

    /// One segment (or I-frame) entry.
    struct Entry: Sendable {
        let msn: UInt64
        let uri: String
        let duration: Double
        let gap: Bool
        let discontinuity: Bool
        let programDateTime: String?
        let byteRange: ByteRange?
        /// The URI of the AES-128 key in force at this entry, as written; nil when clear.
        let keyURI: String?
        /// The URI of the EXT-X-MAP in force, as written.
        let mapURI: String?
    }

    let text: String
    let version: Int?
    let mediaSequence: UInt64
    let discontinuitySequence: UInt64
    let iFramesOnly: Bool
    let entries: [Entry]
    /// Every EXT-X-KEY line, as written.
    let keyLines: [String]
    /// Every EXT-X-DEFINE attribute list.
    let definitions: [[String: String]]

    init(_ text: String) throws {
        self.text = text
        let lines = text.split(whereSeparator: \.isNewline).map(String.init)
        guard lines.first == "#EXTM3U" else { throw EndToEndError("not a playlist: \(text.prefix(200))") }
        var version: Int?
        var mediaSequence: UInt64 = 0
        var discontinuitySequence: UInt64 = 0
        var iFramesOnly = false
        var entries: [Entry] = []
        var keyLines: [String] = []
        var definitions: [[String: String]] = []
        var keyURI: String?
        var mapURI: String?
        var duration: Double?
        var gap = false
        var discontinuity = false
        var programDateTime: String?
        var byteRange: ByteRange?
        func value(_ line: String, _ tag: String) -> String? {
            line.hasPrefix(tag + ":") ? String(line.dropFirst(tag.count + 1)) : nil
        }
        for line in lines.dropFirst() {
            if let text = value(line, "#EXT-X-VERSION") {
                version = Int(text)
            } else if let text = value(line, "#EXT-X-MEDIA-SEQUENCE") {
                mediaSequence = UInt64(text) ?? 0
            } else if let text = value(line, "#EXT-X-DISCONTINUITY-SEQUENCE") {
                discontinuitySequence = UInt64(text) ?? 0
            } else if line == "#EXT-X-I-FRAMES-ONLY" {
                iFramesOnly = true
            } else if let list = value(line, "#EXT-X-DEFINE") {
                definitions.append(AttributeText.parse(list))
            } else if let list = value(line, "#EXT-X-KEY") {
                keyLines.append(line)
                let attributes = AttributeText.parse(list)
                keyURI = attributes["METHOD"] == "NONE" ? nil : attributes["URI"]
            } else if let list = value(line, "#EXT-X-MAP") {
                mapURI = AttributeText.parse(list)["URI"]
            } else if let text = value(line, "#EXTINF") {
                duration = Double(text.split(separator: ",", omittingEmptySubsequences: false).first ?? "")
            } else if line == "#EXT-X-GAP" {
                gap = true
            } else if line == "#EXT-X-DISCONTINUITY" {
                discontinuity = true
            } else if let text = value(line, "#EXT-X-PROGRAM-DATE-TIME") {
                programDateTime = text
            } else if let text = value(line, "#EXT-X-BYTERANGE") {
                let parts = text.split(separator: "@")
                guard let length = Int(parts[0]), parts.count == 2, let offset = Int(parts[1]) else {
                    throw EndToEndError("byte range without an offset or not a number: \(line)")
                }
                byteRange = ByteRange(length: length, offset: offset)
            } else if !line.hasPrefix("#"), !line.isEmpty {
                guard let duration else { throw EndToEndError("URI without EXTINF: \(line)") }
                entries.append(
                    Entry(
                        msn: mediaSequence + UInt64(entries.count), uri: line, duration: duration, gap: gap,
                        discontinuity: discontinuity, programDateTime: programDateTime, byteRange: byteRange,
                        keyURI: keyURI, mapURI: mapURI))
                gap = false
                discontinuity = false
                programDateTime = nil
                byteRange = nil
            }
            if !line.hasPrefix("#EXTINF"), !line.hasPrefix("#"), !line.isEmpty { duration = nil }
        }
        self.version = version
        self.mediaSequence = mediaSequence
        self.discontinuitySequence = discontinuitySequence
        self.iFramesOnly = iFramesOnly
        self.entries = entries
        self.keyLines = keyLines
        self.definitions = definitions
    }

    /// The entry with this MSN.
    func entry(_ msn: UInt64) -> Entry? {
        guard msn >= mediaSequence, msn - mediaSequence < UInt64(entries.count) else { return nil }
        return entries[Int(msn - mediaSequence)]
    }
}

/// Attribute lists (`KEY=VALUE,KEY="quoted, value"`), quotes removed.
enum AttributeText {
    static func parse(_ list: String) -> [String: String] {
        var values: [String: String] = [:]
        var rest = list[...]
        while !rest.isEmpty {
            guard let equals = rest.firstIndex(of: "=") else { break }
            let key = String(rest[..<equals])
            rest = rest[rest.index(after: equals)...]
            if rest.first == "\"" {
                let body = rest.dropFirst()
                let close = body.firstIndex(of: "\"") ?? body.endIndex
                values[key] = String(body[..<close])
                rest = close < body.endIndex ? body[body.index(after: close)...] : body[close...]
            } else {
                let comma = rest.firstIndex(of: ",") ?? rest.endIndex
                values[key] = String(rest[..<comma])
                rest = rest[comma...]
            }
            if rest.first == "," { rest = rest.dropFirst() }
        }
        return values
    }
}

/// What a client does with a URI from a playlist: substitutes variables, then resolves it against the playlist's
/// URL (a path with an optional query on the origin).
enum PlaylistURL {
    /// `reference` (as written, e.g. `../key-3.key?token={$token}`) resolved against `base` (e.g.
    /// `/live/news/hi/index.m3u8`) with `variables` substituted; returns a path with its query.
    static func resolve(_ reference: String, against base: String, variables: [String: String] = [:]) -> String {
        var substituted = reference
        for (name, value) in variables { substituted = substituted.replacingOccurrences(of: "{$\(name)}", with: value) }
        guard let baseURL = URL(string: "http://origin" + base),
            let url = URL(string: substituted, relativeTo: baseURL)?.absoluteURL,
            let components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        else { return substituted }
        return components.percentEncodedPath + (components.percentEncodedQuery.map { "?\($0)" } ?? "")
    }
}

/// AES-128-CBC as a client does it, with openssl (the tests' independent decryptor): PKCS7, IV = the MSN as a
/// 128-bit big-endian number when the KEY tag has no IV attribute.
enum SegmentDecryption {
    static func decrypt(_ ciphertext: [UInt8], key: [UInt8], msn: UInt64, in directory: URL) async throws -> [UInt8] {
        guard key.count == 16 else { throw EndToEndError("a key of \(key.count) bytes, not 16") }
        let name = "cipher-\(UUID().uuidString)"
        let input = directory.appendingPathComponent(name + ".bin")
        let output = directory.appendingPathComponent(name + ".ts")
        try Data(ciphertext).write(to: input)
        defer {
            try? FileManager.default.removeItem(at: input)
            try? FileManager.default.removeItem(at: output)
        }
        let hexKey = key.map { String(format: "%02x", $0) }.joined()
        let iv = String(format: "%032llx", msn)
        let run = try await ChildProcess.run(
            "openssl", ["aes-128-cbc", "-d", "-K", hexKey, "-iv", iv, "-in", input.path, "-out", output.path],
            in: directory)
        guard run.status == 0 else {
            throw EndToEndError(
                "openssl could not decrypt MSN \(msn) (\(ciphertext.count) bytes): \(run.standardError)")
        }
        return Array(try Data(contentsOf: output))
    }
}

/// ffprobe decoding every video frame of a file.
enum FrameCount {
    struct Result: Sendable {
        /// `pict_type` of every decoded video frame, in order.
        let pictureTypes: [String]
        /// `key_frame` flags, in the same order.
        let keyFrames: [Bool]
        /// What ffprobe printed at `-v error`.
        let errors: String
        let status: Int32
    }

    /// Decodes every video frame of `file` (`ffprobe -count_frames`, frame entries).
    static func videoFrames(of file: URL, in directory: URL) async throws -> Result {
        let output = try await ChildProcess.run(
            "ffprobe",
            [
                "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "frame=pict_type,key_frame",
                "-of", "csv=p=0", file.path,
            ], in: directory, timeout: .seconds(120))
        var types: [String] = []
        var keys: [Bool] = []
        for line in output.standardOutput.split(whereSeparator: \.isNewline) {
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard fields.count >= 2 else { continue }
            // ffprobe prints the fields in its own order: key_frame first, then pict_type.
            if let key = fields.first(where: { $0 == "0" || $0 == "1" }) { keys.append(key == "1") }
            if let type = fields.first(where: { $0.count == 1 && "IPB?".contains($0) && $0 != "0" && $0 != "1" }) {
                types.append(type)
            }
        }
        return Result(pictureTypes: types, keyFrames: keys, errors: output.standardError, status: output.status)
    }

    /// `videoFrames(of:in:)` for bytes in memory.
    static func videoFrames(of bytes: [UInt8], name: String, in directory: URL) async throws -> Result {
        let file = directory.appendingPathComponent(name)
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        return try await videoFrames(of: file, in: directory)
    }
}
