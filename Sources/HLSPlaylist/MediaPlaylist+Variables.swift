/// A `{$name}` reference that no EXT-X-DEFINE value and no supplied value resolves (HLS-RULES 30).
public struct UnresolvedVariableError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The variable's name, without `{$` and `}`.
    public var name: String
    /// The text the reference is in (a segment, EXT-X-MAP or EXT-X-KEY URI).
    public var text: String

    public init(name: String, text: String) {
        self.name = name
        self.text = text
    }

    public var description: String { "unresolved variable reference {$\(name)} in \(text)" }
}

extension MediaPlaylist {
    /// The playlist as a client sees it after variable substitution (RFC 8216bis section 6.3.1): every `{$name}` in
    /// the segment, EXT-X-MAP and EXT-X-KEY URIs replaced by its value. `NAME`/`VALUE` definitions give their own
    /// value; IMPORT and QUERYPARAM definitions take theirs from `values` (what the multivariant playlist defined, or
    /// the playlist URL's query).
    /// - Parameter values: the values of the IMPORT / QUERYPARAM variables, by name.
    /// - Returns: the playlist with the references replaced; ``definitions`` are kept.
    /// - Throws: ``UnresolvedVariableError`` naming the first reference that is not defined, or whose IMPORT /
    ///   QUERYPARAM variable has no entry in `values`.
    public func resolvingVariables(_ values: [String: String]) throws(UnresolvedVariableError) -> MediaPlaylist {
        var table: [String: String] = [:]
        for definition in definitions {
            switch definition {
            case .value(let name, let value): table[name] = value
            case .import(let name), .queryParameter(let name): table[name] = values[name]
            }
        }
        var resolved = self
        for index in resolved.segments.indices {
            var segment = resolved.segments[index]
            segment.uri = try Self.substitute(segment.uri, table)
            if var map = segment.map {
                map.uri = try Self.substitute(map.uri, table)
                segment.map = map
            }
            if case .aes128(let uri, let iv) = segment.key {
                segment.key = .aes128(uri: try Self.substitute(uri, table), iv: iv)
            }
            resolved.segments[index] = segment
        }
        return resolved
    }

    /// `text` with every `{$name}` replaced from `table`; a name missing from it is an error.
    static func substitute(_ text: String, _ table: [String: String]) throws(UnresolvedVariableError) -> String {
        guard text.contains("{$") else { return text }
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var copied = 0
        for reference in VariableTable.references(in: bytes) {
            guard let value = table[reference.name] else {
                throw UnresolvedVariableError(name: reference.name, text: text)
            }
            output.append(contentsOf: bytes[copied..<reference.start])
            output.append(contentsOf: value.utf8)
            copied = reference.end + 1
        }
        output.append(contentsOf: bytes[copied...])
        return String(decoding: output, as: UTF8.self)
    }
}
