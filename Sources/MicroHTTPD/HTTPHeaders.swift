/// An ordered list of HTTP header fields. Names keep the spelling they were given; lookups ignore ASCII case.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral, Equatable, CustomStringConvertible {
    /// One header field.
    public typealias Element = (name: String, value: String)

    private var fields: [Element]

    /// Creates headers from `(name, value)` pairs, in order.
    public init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields
    }

    /// Creates headers from a literal such as `["Content-Type": "text/plain"]`, keeping the order written.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.fields = elements.map { (name: $0.0, value: $0.1) }
    }

    /// The value of the first field named `name` (ASCII case-insensitive), or nil.
    public subscript(name: String) -> String? {
        fields.first { Self.namesMatch($0.name, name) }?.value
    }

    /// All values of the fields named `name`, in order.
    public func values(for name: String) -> [String] {
        fields.filter { Self.namesMatch($0.name, name) }.map(\.value)
    }

    /// Whether a field named `name` is present.
    public func contains(_ name: String) -> Bool {
        fields.contains { Self.namesMatch($0.name, name) }
    }

    /// Adds a field at the end (an existing field with the same name stays).
    public mutating func append(name: String, value: String) {
        fields.append((name: name, value: value))
    }

    /// Replaces every field named `name` by a single field at the position of the first one (or at the end).
    public mutating func replaceOrAppend(name: String, value: String) {
        if let index = fields.firstIndex(where: { Self.namesMatch($0.name, name) }) {
            fields[index] = (name: name, value: value)
            var next = index + 1
            while next < fields.count {
                if Self.namesMatch(fields[next].name, name) { fields.remove(at: next) } else { next += 1 }
            }
        } else {
            fields.append((name: name, value: value))
        }
    }

    /// Removes every field named `name`.
    public mutating func remove(name: String) {
        fields.removeAll { Self.namesMatch($0.name, name) }
    }

    /// Number of fields.
    public var count: Int { fields.count }

    /// Whether there are no fields.
    public var isEmpty: Bool { fields.isEmpty }

    public func makeIterator() -> IndexingIterator<[Element]> {
        fields.makeIterator()
    }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.count == rhs.fields.count
            && zip(lhs.fields, rhs.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    public var description: String {
        fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }

    /// ASCII case-insensitive comparison of header names.
    static func namesMatch(_ lhs: String, _ rhs: String) -> Bool {
        let left = lhs.utf8
        let right = rhs.utf8
        guard left.count == right.count else { return false }
        // Header names are (almost always) small or native strings with contiguous UTF-8: compare the bytes directly.
        let fast = left.withContiguousStorageIfAvailable { leftBytes in
            right.withContiguousStorageIfAvailable { rightBytes in
                for index in 0..<leftBytes.count
                where asciiLowercase(leftBytes[index]) != asciiLowercase(rightBytes[index]) {
                    return false
                }
                return true
            }
        }
        if let fast, let result = fast { return result }
        return zip(left, right).allSatisfy { asciiLowercase($0) == asciiLowercase($1) }
    }

    private static func asciiLowercase(_ byte: UInt8) -> UInt8 {
        (byte >= 0x41 && byte <= 0x5A) ? byte + 0x20 : byte
    }
}
