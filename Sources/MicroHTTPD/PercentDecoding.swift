/// Percent-decoding used for paths (strict) and query arguments (lenient).
enum PercentDecoding {
    /// Decodes %XX escapes; nil if a "%" is not followed by two hex digits.
    static func strictBytes(_ text: Substring) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    return nil
                }
                output.append(high << 4 | low)
            } else {
                output.append(byte)
            }
        }
        return output
    }

    /// Decodes %XX escapes, leaving a "%" that does not start a valid escape as it is; invalid UTF-8 becomes U+FFFD.
    static func lenient(_ text: String) -> String {
        let bytes = Array(text.utf8)
        guard bytes.contains(UInt8(ascii: "%")) else { return text }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            {
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Percent-encodes bytes outside printable ASCII (0x21...0x7E), leaving everything else as sent.
    static func encodingNonPrintable(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        if bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
            return String(decoding: bytes, as: UTF8.self)
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 16)
        for byte in bytes {
            if byte > 0x20 && byte < 0x7F {
                output.append(byte)
            } else {
                output.append(UInt8(ascii: "%"))
                output.append(hexDigits[Int(byte >> 4)])
                output.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// The strict path-segment decoder behind `HTTPRequestHead.decodedPathSegments()`.
enum PathDecoding {
    static func segments(of path: String) -> [String]? {
        guard path.utf8.first == UInt8(ascii: "/") else { return nil }
        let rest = path.dropFirst()
        if rest.isEmpty { return [] }
        if let plain = plainSegments(of: rest) { return plain }
        var result: [String] = []
        for rawSegment in rest.split(separator: "/", omittingEmptySubsequences: false) {
            guard let segment = decodeSegment(rawSegment) else { return nil }
            result.append(segment)
        }
        return result
    }

    /// The fast path for the common path: printable ASCII without "%" or "\\" needs no decoding, only the "." and
    /// ".." checks. Nil sends the path through the full decoder (which also gives the same answer for these paths).
    private static func plainSegments(of rest: Substring) -> [String]? {
        let utf8 = rest.utf8
        var count = 1
        for byte in utf8 {
            guard byte > 0x20, byte < 0x7F, byte != UInt8(ascii: "%"), byte != UInt8(ascii: "\\") else { return nil }
            if byte == UInt8(ascii: "/") { count += 1 }
        }
        var result: [String] = []
        result.reserveCapacity(count)
        var start = utf8.startIndex
        var index = start
        while true {
            if index == utf8.endIndex || utf8[index] == UInt8(ascii: "/") {
                let segment = Substring(utf8[start..<index])
                if segment == "." || segment == ".." { return nil }
                result.append(String(segment))
                if index == utf8.endIndex { break }
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        return result
    }

    private static func decodeSegment(_ raw: Substring) -> String? {
        guard let bytes = PercentDecoding.strictBytes(raw) else { return nil }
        for byte in bytes {
            if byte < 0x20 || byte == 0x7F || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "\\") { return nil }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
        // C1 control characters (U+0080...U+009F) are as unwelcome as C0 ones.
        if text.unicodeScalars.contains(where: { (0x80...0x9F).contains($0.value) }) { return nil }
        if text == "." || text == ".." { return nil }
        return text
    }
}
