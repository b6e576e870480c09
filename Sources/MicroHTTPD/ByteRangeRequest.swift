/// A `Range: bytes=...` request header resolved against a representation of known length (RFC 9110 section 14).
public enum ByteRangeRequest: Equatable, Sendable {
    /// No usable range: send the whole representation (also for multiple ranges, which the origin does not serve).
    case whole
    /// One satisfiable range.
    case partial(Range<Int>)
    /// A syntactically valid range none of which overlaps the representation: 416.
    case unsatisfiable

    /// Resolves `header` against a representation of `length` bytes.
    public static func resolve(_ header: String?, length: Int) -> ByteRangeRequest {
        guard let header, header.hasPrefix("bytes=") else { return .whole }
        let spec = header.dropFirst("bytes=".count).trimmingSpaces
        guard !spec.contains(",") else { return .whole }
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return .whole }
        let first = parts[0].trimmingSpaces
        let last = parts[1].trimmingSpaces
        func number(_ text: Substring) -> Int? {
            guard !text.isEmpty, text.count <= 18, text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber) else {
                return nil
            }
            return Int(text)
        }
        if first.isEmpty {
            // Suffix range: the last N bytes.
            guard let suffix = number(last) else { return .whole }
            guard suffix > 0, length > 0 else { return .unsatisfiable }
            return .partial(max(0, length - suffix)..<length)
        }
        guard let start = number(first) else { return .whole }
        let end: Int
        if last.isEmpty {
            end = length - 1
        } else {
            guard let value = number(last), value >= start else { return .whole }
            end = min(value, length - 1)
        }
        guard start < length else { return .unsatisfiable }
        return .partial(start..<(end + 1))
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while text.first == " " { text = text.dropFirst() }
        while text.last == " " { text = text.dropLast() }
        return text
    }
}
