/// Attribute lists (RFC 8216 section 4.2): `NAME=value,NAME="quoted",...`.
///
/// Parsing is strict: names are `[A-Z0-9-]+`, no whitespace around `=`, no name twice, quoted strings end on the
/// same line and hold no `"`, CR or LF, unquoted values are non-empty and hold no whitespace, `"` or control
/// characters, and no empty entry (a trailing comma is an error).
public enum AttributeList {
    /// One parsed attribute: its name and the raw value text (quoted strings keep their quotes).
    public typealias Attribute = (name: String, value: String)

    /// Splits an attribute list into names and raw values, in order.
    /// - Parameter text: the text after the tag's colon.
    /// - Returns: the attributes in their written order; quoted values keep their `"` delimiters.
    /// - Throws: ``PlaylistParseError`` (line 0) naming the fault.
    public static func parse(_ text: String) throws(PlaylistParseError) -> [Attribute] {
        let bytes = Array(text.utf8)
        var attributes: [Attribute] = []
        var seen = Set<String>()
        var index = 0
        guard !bytes.isEmpty else { throw PlaylistParseError(line: 0, message: "empty attribute list") }
        while true {
            let nameStart = index
            while index < bytes.count, isNameByte(bytes[index]) { index += 1 }
            let name = String(decoding: bytes[nameStart..<index], as: UTF8.self)
            guard !name.isEmpty else {
                if index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\t") {
                    throw PlaylistParseError(line: 0, message: "whitespace in attribute list")
                }
                throw PlaylistParseError(line: 0, message: "missing attribute name at offset \(index)")
            }
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else {
                if index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\t") {
                    throw PlaylistParseError(line: 0, message: "whitespace after attribute name \(name)")
                }
                throw PlaylistParseError(line: 0, message: "attribute \(name) has no '=' or an invalid name")
            }
            index += 1
            let valueStart = index
            if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                index += 1
                while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                    guard bytes[index] != 0x0A, bytes[index] != 0x0D else {
                        throw PlaylistParseError(line: 0, message: "line break in quoted string of \(name)")
                    }
                    index += 1
                }
                guard index < bytes.count else {
                    throw PlaylistParseError(line: 0, message: "unterminated quoted string in \(name)")
                }
                index += 1
            } else {
                while index < bytes.count, bytes[index] != UInt8(ascii: ",") {
                    let byte = bytes[index]
                    guard byte > 0x20, byte != 0x7F, byte != UInt8(ascii: "\"") else {
                        throw PlaylistParseError(
                            line: 0, message: "invalid character in value of \(name) (whitespace or quote)")
                    }
                    index += 1
                }
                guard index > valueStart else {
                    throw PlaylistParseError(line: 0, message: "attribute \(name) has an empty value")
                }
            }
            let value = String(decoding: bytes[valueStart..<index], as: UTF8.self)
            guard seen.insert(name).inserted else {
                throw PlaylistParseError(line: 0, message: "attribute \(name) appears twice")
            }
            attributes.append((name: name, value: value))
            if index == bytes.count { return attributes }
            guard bytes[index] == UInt8(ascii: ",") else {
                throw PlaylistParseError(line: 0, message: "expected ',' after the value of \(name)")
            }
            index += 1
            guard index < bytes.count else {
                throw PlaylistParseError(line: 0, message: "attribute list ends with ','")
            }
        }
    }

    /// Wraps `text` in double quotes. The caller must have checked ``isValidQuotedContent(_:)``.
    public static func quoted(_ text: String) -> String {
        "\"" + text + "\""
    }

    /// Whether `text` may stand inside a quoted string: no `"`, CR or LF.
    public static func isValidQuotedContent(_ text: String) -> Bool {
        !text.utf8.contains { $0 == UInt8(ascii: "\"") || $0 == 0x0A || $0 == 0x0D }
    }

    /// The content of a raw quoted value (`"abc"` gives `abc`), or nil if `raw` is not a quoted string.
    public static func unquoted(_ raw: String) -> String? {
        let bytes = raw.utf8
        guard bytes.count >= 2, bytes.first == UInt8(ascii: "\""), bytes.last == UInt8(ascii: "\"") else {
            return nil
        }
        return String(decoding: bytes.dropFirst().dropLast(), as: UTF8.self)
    }

    /// Whether `name` is a legal AttributeName: `[A-Z0-9-]+`.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy(isNameByte)
    }

    /// Classifies a raw value: quoted string, `0x` hexadecimal, decimal number, or else an enumerated string.
    /// - Parameter raw: the raw value text from ``parse(_:)``.
    /// - Returns: the typed value; an odd number of hex digits is read as if a leading `0` were present.
    public static func value(_ raw: String) -> AttributeValue {
        if let text = unquoted(raw) { return .quotedString(text) }
        if let bytes = hexadecimalBytes(raw) { return .hexadecimal(bytes) }
        if let number = decimal(raw) { return .decimal(number) }
        return .enumerated(raw)
    }

    /// The rendered text of a typed value (quoted string with quotes, `0x...`, shortest decimal, enumerated as is).
    public static func render(_ value: AttributeValue) -> String {
        switch value {
        case .quotedString(let text): return quoted(text)
        case .hexadecimal(let bytes): return NumberFormatting.hexadecimal(bytes)
        case .decimal(let number): return NumberFormatting.shortest(number)
        case .enumerated(let text): return text
        }
    }

    /// Bytes of a `0x`/`0X` hexadecimal sequence, or nil if `raw` is not one.
    public static func hexadecimalBytes(_ raw: String) -> [UInt8]? {
        let bytes = Array(raw.utf8)
        guard bytes.count > 2, bytes[0] == UInt8(ascii: "0"),
            bytes[1] == UInt8(ascii: "x") || bytes[1] == UInt8(ascii: "X")
        else { return nil }
        var nibbles: [UInt8] = []
        nibbles.reserveCapacity(bytes.count - 1)
        if bytes.count % 2 == 1 { nibbles.append(0) }
        for byte in bytes[2...] {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibbles.append(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibbles.append(byte - UInt8(ascii: "A") + 10)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibbles.append(byte - UInt8(ascii: "a") + 10)
            default: return nil
            }
        }
        var result: [UInt8] = []
        result.reserveCapacity(nibbles.count / 2)
        var index = 0
        while index < nibbles.count {
            result.append(nibbles[index] << 4 | nibbles[index + 1])
            index += 2
        }
        return result
    }

    /// A decimal-floating-point or signed-decimal-floating-point value (`-?[0-9]+(\.[0-9]*)?`), or nil.
    public static func decimal(_ raw: String) -> Double? {
        let bytes = Array(raw.utf8)
        var index = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        let integerStart = index
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        guard index > integerStart, index - integerStart <= 40 else { return nil }
        if index < bytes.count {
            guard bytes[index] == UInt8(ascii: "."), bytes.count - index <= 40 else { return nil }
            index += 1
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        guard index == bytes.count, let number = Double(raw), number.isFinite else { return nil }
        return number
    }

    /// A decimal-integer (`[0-9]+`, at most 20 digits, fits in `UInt64`), or nil.
    public static func decimalInteger(_ raw: String) -> UInt64? {
        guard !raw.isEmpty, raw.utf8.count <= 20, raw.utf8.allSatisfy(isDigit) else { return nil }
        return UInt64(raw)
    }

    static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) || isDigit(byte) || byte == UInt8(ascii: "-")
    }
}
