/// Content-coding negotiation (RFC 9110 section 12.5.3): whether a client takes a gzip body.
public enum ContentCoding {
    /// Whether the request's Accept-Encoding allows gzip: the first item naming `gzip` or `*` decides, refused only
    /// by a q-value of zero (`q=0`, `q=0.0`...).
    public static func acceptsGzip(_ request: HTTPRequestHead) -> Bool {
        guard var header = request.headers["Accept-Encoding"] else { return false }
        return header.withUTF8 { acceptsGzip(value: UnsafeRawBufferPointer($0)) }
    }

    /// `acceptsGzip(_:)` on the bytes of an Accept-Encoding value, without building strings.
    public static func acceptsGzip(value: UnsafeRawBufferPointer) -> Bool {
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
                    let parameter = value[parameterStart..<parameterEnd].filter {
                        $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t")
                    }
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
