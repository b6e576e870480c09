/// The line-level reading both playlist parsers share: size guards, line splitting, tag splitting, attribute
/// lookups that report line numbers, and EXT-X-DEFINE variables.
struct PlaylistText {
    /// Input larger than this is refused: 16 MiB.
    static let maximumBytes = 16 * 1024 * 1024
    /// A line longer than this (bytes, without its terminator) is refused: 64 KiB.
    static let maximumLineBytes = 64 * 1024

    /// One non-blank line with its 1-based number, trimmed of surrounding spaces and its CR.
    struct Line {
        var number: Int
        var text: String
    }

    /// A tag line split at its first colon: `#EXT-X-FOO:value` gives name `EXT-X-FOO` and value `value`.
    struct Tag {
        var name: String
        var value: String?
    }

    /// Splits `text` into non-blank lines after the RFC 8216 section 4.1 checks.
    ///
    /// Lines end with LF or CRLF. Refused: input over ``maximumBytes``, a line over ``maximumLineBytes``, a first
    /// line other than `#EXTM3U` (a byte order mark included), control characters other than the line terminators
    /// (U+0000–U+001F, U+007F–U+009F; a tab is one of them), a CR not followed by LF.
    static func lines(_ text: String) throws(PlaylistParseError) -> [Line] {
        let bytes = text.utf8
        guard bytes.count <= maximumBytes else {
            throw PlaylistParseError(line: 0, message: "playlist larger than 16 MiB")
        }
        var result: [Line] = []
        var number = 0
        var lineBytes: [UInt8] = []
        lineBytes.reserveCapacity(256)
        var iterator = bytes.makeIterator()
        var finished = false
        while !finished {
            let next = iterator.next()
            if let byte = next, byte != 0x0A {
                if lineBytes.count >= maximumLineBytes {
                    throw PlaylistParseError(line: number + 1, message: "line longer than 64 KiB")
                }
                lineBytes.append(byte)
                continue
            }
            finished = next == nil
            number += 1
            if lineBytes.last == 0x0D { lineBytes.removeLast() }
            try checkCharacters(lineBytes, line: number)
            let line = trimmed(lineBytes)
            if number == 1 {
                guard line == "#EXTM3U" else {
                    throw PlaylistParseError(line: 1, message: "the first line must be #EXTM3U")
                }
            }
            if !line.isEmpty {
                result.append(Line(number: number, text: line))
            }
            lineBytes.removeAll(keepingCapacity: true)
        }
        return result
    }

    /// The one line where a control character is allowed: EXT-X-SKIP's RECENTLY-REMOVED-DATERANGES is a
    /// tab-delimited list (RFC 8216bis section 4.4.5.2).
    private static let tabDelimitedLinePrefix = Array("#EXT-X-SKIP:".utf8)

    private static func checkCharacters(_ bytes: [UInt8], line: Int) throws(PlaylistParseError) {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x09, bytes.starts(with: tabDelimitedLinePrefix) {
                index += 1
                continue
            }
            if byte < 0x20 || byte == 0x7F {
                let message =
                    byte == 0x0D ? "a CR not followed by LF" : "control character 0x\(String(byte, radix: 16))"
                throw PlaylistParseError(line: line, message: message)
            }
            // U+0080–U+009F are encoded C2 80 – C2 9F.
            if byte == 0xC2, index + 1 < bytes.count, bytes[index + 1] >= 0x80, bytes[index + 1] <= 0x9F {
                throw PlaylistParseError(line: line, message: "C1 control character")
            }
            index += 1
        }
    }

    private static func trimmed(_ bytes: [UInt8]) -> String {
        var start = 0
        var end = bytes.count
        while start < end, bytes[start] == 0x20 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 { end -= 1 }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// The tag on `line`, or nil when the line is a URI or a comment (`#` not followed by `EXT`).
    static func tag(_ line: String) -> Tag? {
        guard line.hasPrefix("#EXT") else { return nil }
        let body = line.dropFirst()
        guard let colon = body.firstIndex(of: ":") else { return Tag(name: String(body), value: nil) }
        return Tag(name: String(body[..<colon]), value: String(body[body.index(after: colon)...]))
    }

    /// Whether `line` is a comment: starts with `#` but is not a tag.
    static func isComment(_ line: String) -> Bool {
        line.hasPrefix("#") && !line.hasPrefix("#EXT")
    }
}

/// The attributes of one tag, looked up by name, with errors that carry the tag's line number.
struct TagAttributes {
    let tagName: String
    let line: Int
    private(set) var values: [String: String] = [:]
    private(set) var order: [String] = []

    init(tag: PlaylistText.Tag, line: Int) throws(PlaylistParseError) {
        self.tagName = tag.name
        self.line = line
        guard let value = tag.value, !value.isEmpty else {
            throw PlaylistParseError(line: line, message: "#\(tag.name) needs an attribute list")
        }
        let attributes: [AttributeList.Attribute]
        do {
            attributes = try AttributeList.parse(value)
        } catch {
            throw PlaylistParseError(line: line, message: "#\(tag.name): \(error.message)")
        }
        for attribute in attributes {
            values[attribute.name] = attribute.value
            order.append(attribute.name)
        }
    }

    func error(_ message: String) -> PlaylistParseError {
        PlaylistParseError(line: line, message: "#\(tagName): \(message)")
    }

    func has(_ name: String) -> Bool { values[name] != nil }

    /// A quoted-string attribute with variables substituted; nil when absent.
    func quoted(_ name: String, variables: VariableTable) throws(PlaylistParseError) -> String? {
        guard let raw = values[name] else { return nil }
        guard let text = AttributeList.unquoted(raw) else { throw error("\(name) must be a quoted string") }
        do {
            return try variables.substitute(text)
        } catch {
            throw self.error("\(name): \(error.message)")
        }
    }

    func requiredQuoted(_ name: String, variables: VariableTable) throws(PlaylistParseError) -> String {
        guard let text = try quoted(name, variables: variables) else { throw error("\(name) is required") }
        return text
    }

    func integer(_ name: String) throws(PlaylistParseError) -> Int? {
        guard let raw = values[name] else { return nil }
        guard let number = AttributeList.decimalInteger(raw), number <= UInt64(Int.max) else {
            throw error("\(name) must be a decimal integer")
        }
        return Int(number)
    }

    func decimal(_ name: String, allowNegative: Bool = false) throws(PlaylistParseError) -> Double? {
        guard let raw = values[name] else { return nil }
        guard let number = AttributeList.decimal(raw), allowNegative || !raw.hasPrefix("-") else {
            throw error("\(name) must be a decimal number" + (allowNegative ? "" : " >= 0"))
        }
        return number
    }

    func hexadecimal(_ name: String) throws(PlaylistParseError) -> [UInt8]? {
        guard let raw = values[name] else { return nil }
        guard let bytes = AttributeList.hexadecimalBytes(raw) else { throw error("\(name) must be 0x + hex digits") }
        return bytes
    }

    func enumerated(_ name: String) throws(PlaylistParseError) -> String? {
        guard let raw = values[name] else { return nil }
        guard AttributeList.unquoted(raw) == nil else { throw error("\(name) must not be quoted") }
        return raw
    }

    func yesNo(_ name: String) throws(PlaylistParseError) -> Bool? {
        guard let raw = try enumerated(name) else { return nil }
        switch raw {
        case "YES": return true
        case "NO": return false
        default: throw error("\(name) must be YES or NO")
        }
    }
}

/// EXT-X-DEFINE variables seen so far, and `{$name}` substitution (RFC 8216bis section 4.3).
struct VariableTable {
    /// Variables with a known value.
    private(set) var values: [String: String] = [:]
    /// IMPORT / QUERYPARAM variables whose value is not in the playlist text: references stay as written.
    private(set) var unresolved: Set<String> = []

    /// Reads an EXT-X-DEFINE tag, records its variable and returns the definition.
    mutating func define(
        _ attributes: TagAttributes, allowImport: Bool
    ) throws(PlaylistParseError) -> VariableDefinition {
        let forms = ["NAME", "IMPORT", "QUERYPARAM"].filter { attributes.has($0) }
        guard forms.count == 1 else { throw attributes.error("needs exactly one of NAME, IMPORT, QUERYPARAM") }
        let empty = VariableTable()
        let definition: VariableDefinition
        switch forms[0] {
        case "NAME":
            let name = try attributes.requiredQuoted("NAME", variables: empty)
            guard let raw = attributes.values["VALUE"], let value = AttributeList.unquoted(raw) else {
                throw attributes.error("NAME needs a quoted VALUE")
            }
            definition = .value(name: name, value: value)
        case "IMPORT":
            guard allowImport else { throw attributes.error("IMPORT is only allowed in media playlists") }
            definition = .import(name: try attributes.requiredQuoted("IMPORT", variables: empty))
        default:
            definition = .queryParameter(name: try attributes.requiredQuoted("QUERYPARAM", variables: empty))
        }
        let name = definition.name
        guard Self.isValidName(name) else { throw attributes.error("variable name \"\(name)\" is not [A-Za-z0-9_-]+") }
        guard values[name] == nil, !unresolved.contains(name) else {
            throw attributes.error("variable \(name) is defined twice")
        }
        if case .value(_, let value) = definition {
            values[name] = value
        } else {
            unresolved.insert(name)
        }
        return definition
    }

    /// `text` with every `{$name}` replaced by its value.
    ///
    /// A reference to a name never defined is an error; references to IMPORT / QUERYPARAM variables are kept as
    /// written (their values live outside this playlist). A result over 64 KiB is an error.
    func substitute(_ text: String) throws(PlaylistParseError) -> String {
        guard text.contains("{$") else { return text }
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var copied = 0
        for reference in Self.references(in: bytes) {
            output.append(contentsOf: bytes[copied..<reference.start])
            if let value = values[reference.name] {
                output.append(contentsOf: value.utf8)
            } else if unresolved.contains(reference.name) {
                output.append(contentsOf: bytes[reference.start...reference.end])
            } else {
                throw PlaylistParseError(line: 0, message: "undefined variable reference {$\(reference.name)}")
            }
            guard output.count <= PlaylistText.maximumLineBytes else {
                throw PlaylistParseError(line: 0, message: "variable substitution result longer than 64 KiB")
            }
            copied = reference.end + 1
        }
        output.append(contentsOf: bytes[copied...])
        return String(decoding: output, as: UTF8.self)
    }

    /// The `{$name}` references in `bytes`, in order: where each starts (`{`) and ends (`}`), and its name (one or
    /// more of `[A-Za-z0-9_-]`). Anything else between `{$` and `}` is text, not a reference.
    static func references(in bytes: [UInt8]) -> [(start: Int, end: Int, name: String)] {
        var found: [(start: Int, end: Int, name: String)] = []
        var index = 0
        while index + 1 < bytes.count {
            if bytes[index] == UInt8(ascii: "{"), bytes[index + 1] == UInt8(ascii: "$") {
                var end = index + 2
                while end < bytes.count, isNameByte(bytes[end]) { end += 1 }
                if end > index + 2, end < bytes.count, bytes[end] == UInt8(ascii: "}") {
                    found.append((index, end, String(decoding: bytes[(index + 2)..<end], as: UTF8.self)))
                    index = end + 1
                    continue
                }
            }
            index += 1
        }
        return found
    }

    static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy(isNameByte)
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: "_")
    }
}
