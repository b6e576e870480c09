/// RFC 8941 Structured Field Values for HTTP, the parts CMCD (CTA-5004, read) and CMSD (CTA-5006, written) use:
/// a Dictionary of Items or Inner Lists with Parameters, parsed strictly (a field that does not parse is ignored as a
/// whole, RFC 8941 section 4.2) and within fixed bounds, so client input can neither trap nor grow memory.
enum StructuredField {
    /// A Bare Item (RFC 8941 section 3.3).
    enum BareItem: Sendable, Equatable {
        /// -999,999,999,999,999 ... 999,999,999,999,999.
        case integer(Int64)
        /// A Decimal, as thousandths (at most 12 integer and 3 fractional digits, so it always fits).
        case decimal(thousandths: Int64)
        /// Printable ASCII (0x20-0x7E), unescaped.
        case string(String)
        case token(String)
        /// The base64 text between the colons (checked for the alphabet, not decoded: CMCD defines no such key).
        case byteSequence(String)
        case boolean(Bool)
    }

    /// An Item: a bare item and its parameters.
    struct Item: Sendable, Equatable {
        var value: BareItem
        var parameters: [(key: String, value: BareItem)] = []

        static func == (lhs: Item, rhs: Item) -> Bool {
            lhs.value == rhs.value && lhs.parameters.elementsEqual(rhs.parameters) { $0.key == $1.key && $0.value == $1.value }
        }
    }

    /// A Dictionary member's value.
    enum Member: Sendable, Equatable {
        case item(Item)
        case innerList([Item], parameters: [(key: String, value: BareItem)])

        static func == (lhs: Member, rhs: Member) -> Bool {
            switch (lhs, rhs) {
            case (.item(let a), .item(let b)): a == b
            case (.innerList(let a, let p), .innerList(let b, let q)):
                a == b && p.elementsEqual(q) { $0.key == $1.key && $0.value == $1.value }
            default: false
            }
        }
    }

    /// Longest field value parsed; a longer one is ignored (CMCD's whole payload is a few hundred bytes).
    static let maximumFieldBytes = 4096
    /// Most dictionary members, inner-list items and parameters per item.
    static let maximumMembers = 64

    /// The members of a Dictionary field in order (a repeated key keeps its place and takes the last value,
    /// section 4.2.2); nil when `text` is not a valid Dictionary or exceeds the bounds.
    static func parseDictionary(_ text: Substring) -> [(key: String, value: Member)]? {
        guard text.utf8.count <= maximumFieldBytes else { return nil }
        var parser = Parser(bytes: Array(text.utf8))
        return parser.field()
    }

    /// The members of a Dictionary field (see `parseDictionary(_:)`).
    static func parseDictionary(_ text: String) -> [(key: String, value: Member)]? { parseDictionary(text[...]) }

    // MARK: - Serializing (section 4.1)

    /// `value` as an sf-string (`"` and `\` escaped); nil if it holds a character outside 0x20-0x7E.
    static func serializeString(_ value: String) -> String? {
        var out = "\""
        for byte in value.utf8 {
            guard byte >= 0x20, byte <= 0x7E else { return nil }
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append("\\") }
            out.append(Character(Unicode.Scalar(byte)))
        }
        return out + "\""
    }

    /// Whether `value` is a valid sf-token.
    static func isToken(_ value: String) -> Bool {
        guard let first = value.utf8.first, isAlpha(first) || first == UInt8(ascii: "*") else { return false }
        return value.utf8.dropFirst().allSatisfy { isTokenCharacter($0) }
    }

    /// Whether `value` is a valid key (lcalpha or `*`, then lcalpha, digits, `_`, `-`, `.`, `*`).
    static func isKey(_ value: String) -> Bool {
        guard let first = value.utf8.first, isLowercase(first) || first == UInt8(ascii: "*") else { return false }
        return value.utf8.dropFirst().allSatisfy(isKeyCharacter)
    }

    static func isAlpha(_ byte: UInt8) -> Bool { isLowercase(byte) || (byte >= 0x41 && byte <= 0x5A) }
    static func isLowercase(_ byte: UInt8) -> Bool { byte >= 0x61 && byte <= 0x7A }
    static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
    static func isKeyCharacter(_ byte: UInt8) -> Bool {
        isLowercase(byte) || isDigit(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "*")
    }
    /// tchar (RFC 9110) plus `:` and `/`.
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        if isAlpha(byte) || isDigit(byte) { return true }
        switch byte {
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"),
            UInt8(ascii: ":"), UInt8(ascii: "/"):
            return true
        default: return false
        }
    }

    // MARK: - Parsing (section 4.2)

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipSpaces() { while peek == 0x20 { index += 1 } }
        mutating func skipOWS() { while peek == 0x20 || peek == 0x09 { index += 1 } }

        mutating func field() -> [(key: String, value: Member)]? {
            skipSpaces()
            guard let members = dictionary() else { return nil }
            skipSpaces()
            return index == bytes.count ? members : nil
        }

        mutating func dictionary() -> [(key: String, value: Member)]? {
            var members: [(key: String, value: Member)] = []
            while index < bytes.count {
                guard let key = key() else { return nil }
                let member: Member
                if peek == UInt8(ascii: "=") {
                    index += 1
                    guard let value = itemOrInnerList() else { return nil }
                    member = value
                } else {
                    guard let parameters = parameters() else { return nil }
                    member = .item(Item(value: .boolean(true), parameters: parameters))
                }
                if let existing = members.firstIndex(where: { $0.key == key }) {
                    members[existing].value = member
                } else {
                    guard members.count < StructuredField.maximumMembers else { return nil }
                    members.append((key, member))
                }
                skipOWS()
                if index == bytes.count { return members }
                guard peek == UInt8(ascii: ",") else { return nil }
                index += 1
                skipOWS()
                if index == bytes.count { return nil }  // a trailing comma
            }
            return members
        }

        mutating func itemOrInnerList() -> Member? {
            if peek == UInt8(ascii: "(") { return innerList() }
            return item().map(Member.item)
        }

        mutating func innerList() -> Member? {
            index += 1  // "("
            var items: [Item] = []
            while index < bytes.count {
                skipSpaces()
                if peek == UInt8(ascii: ")") {
                    index += 1
                    guard let parameters = parameters() else { return nil }
                    return .innerList(items, parameters: parameters)
                }
                guard items.count < StructuredField.maximumMembers, let item = item() else { return nil }
                items.append(item)
                guard peek == 0x20 || peek == UInt8(ascii: ")") else { return nil }
            }
            return nil
        }

        mutating func item() -> Item? {
            guard let value = bareItem(), let parameters = parameters() else { return nil }
            return Item(value: value, parameters: parameters)
        }

        mutating func parameters() -> [(key: String, value: BareItem)]? {
            var parameters: [(key: String, value: BareItem)] = []
            while peek == UInt8(ascii: ";") {
                index += 1
                skipSpaces()
                guard let key = key() else { return nil }
                var value = BareItem.boolean(true)
                if peek == UInt8(ascii: "=") {
                    index += 1
                    guard let bare = bareItem() else { return nil }
                    value = bare
                }
                if let existing = parameters.firstIndex(where: { $0.key == key }) {
                    parameters[existing].value = value
                } else {
                    guard parameters.count < StructuredField.maximumMembers else { return nil }
                    parameters.append((key, value))
                }
            }
            return parameters
        }

        mutating func key() -> String? {
            guard let first = peek, StructuredField.isLowercase(first) || first == UInt8(ascii: "*") else {
                return nil
            }
            let start = index
            index += 1
            while let byte = peek, StructuredField.isKeyCharacter(byte) { index += 1 }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        mutating func bareItem() -> BareItem? {
            guard let first = peek else { return nil }
            if first == UInt8(ascii: "-") || StructuredField.isDigit(first) { return number() }
            if first == UInt8(ascii: "\"") { return string() }
            if first == UInt8(ascii: "*") || StructuredField.isAlpha(first) { return token() }
            if first == UInt8(ascii: ":") { return byteSequence() }
            if first == UInt8(ascii: "?") { return boolean() }
            return nil
        }

        /// Section 4.2.4: at most 15 digits for an Integer, 12 + 3 for a Decimal; nothing can overflow.
        mutating func number() -> BareItem? {
            var negative = false
            if peek == UInt8(ascii: "-") {
                negative = true
                index += 1
            }
            guard let first = peek, StructuredField.isDigit(first) else { return nil }
            var integerPart: Int64 = 0
            var integerDigits = 0
            var fraction: Int64 = 0
            var fractionDigits = 0
            var isDecimal = false
            while let byte = peek {
                if StructuredField.isDigit(byte) {
                    if isDecimal {
                        fractionDigits += 1
                        guard fractionDigits <= 3 else { return nil }
                        fraction = fraction * 10 + Int64(byte - 0x30)
                    } else {
                        integerDigits += 1
                        guard integerDigits <= 15 else { return nil }
                        integerPart = integerPart * 10 + Int64(byte - 0x30)
                    }
                    index += 1
                } else if byte == UInt8(ascii: "."), !isDecimal {
                    guard integerDigits <= 12 else { return nil }
                    isDecimal = true
                    index += 1
                } else {
                    break
                }
            }
            let sign: Int64 = negative ? -1 : 1
            guard isDecimal else { return .integer(sign * integerPart) }
            guard fractionDigits > 0 else { return nil }  // "1." is not a number
            for _ in fractionDigits..<3 { fraction *= 10 }
            return .decimal(thousandths: sign * (integerPart * 1000 + fraction))
        }

        mutating func string() -> BareItem? {
            index += 1  // DQUOTE
            var out: [UInt8] = []
            while let byte = peek {
                index += 1
                if byte == UInt8(ascii: "\\") {
                    guard let next = peek, next == UInt8(ascii: "\"") || next == UInt8(ascii: "\\") else { return nil }
                    out.append(next)
                    index += 1
                } else if byte == UInt8(ascii: "\"") {
                    return .string(String(decoding: out, as: UTF8.self))
                } else {
                    guard byte >= 0x20, byte <= 0x7E else { return nil }
                    out.append(byte)
                }
            }
            return nil  // no closing quote
        }

        mutating func token() -> BareItem? {
            let start = index
            index += 1
            while let byte = peek, StructuredField.isTokenCharacter(byte) { index += 1 }
            return .token(String(decoding: bytes[start..<index], as: UTF8.self))
        }

        mutating func byteSequence() -> BareItem? {
            index += 1  // ":"
            let start = index
            while let byte = peek, byte != UInt8(ascii: ":") {
                guard StructuredField.isAlpha(byte) || StructuredField.isDigit(byte) || byte == UInt8(ascii: "+")
                    || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "=")
                else { return nil }
                index += 1
            }
            guard peek == UInt8(ascii: ":") else { return nil }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            index += 1
            return .byteSequence(text)
        }

        mutating func boolean() -> BareItem? {
            index += 1  // "?"
            switch peek {
            case UInt8(ascii: "1"):
                index += 1
                return .boolean(true)
            case UInt8(ascii: "0"):
                index += 1
                return .boolean(false)
            default: return nil
            }
        }
    }
}
