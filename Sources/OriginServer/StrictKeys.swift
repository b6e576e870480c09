/// A configuration model whose mapping may hold only its `CodingKeys`: any other key is refused, naming the key, where
/// it is and the keys that are known. A model declares its keys once, in `CodingKeys`; its `Decodable` is synthesized.
/// The check runs when the model is decoded inside `Strict`, which carries it to every model below.
protocol StrictKeys: Decodable {
    associatedtype CodingKeys: CodingKey & CaseIterable
}

extension StrictKeys {
    /// Throws `DecodingError.dataCorrupted` at the first key of `decoder`'s mapping that `CodingKeys` does not list.
    static func rejectUnknownKeys(_ decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyKey.self)
        let known = Set(CodingKeys.allCases.map(\.stringValue))
        for key in container.allKeys where !known.contains(key.stringValue) {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath + [key],
                    debugDescription:
                        "unknown key '\(key.stringValue)' (known: \(known.sorted().joined(separator: ", ")))"))
        }
    }
}

/// `Value` decoded with the unknown keys of every `StrictKeys` model in it refused (`Value` itself, and whatever its
/// synthesized `init(from:)` decodes, through `StrictDecoder`).
struct Strict<Value: Decodable>: Decodable {
    var value: Value

    init(from decoder: any Decoder) throws {
        if let model = Value.self as? any StrictKeys.Type { try model.rejectUnknownKeys(decoder) }
        value = try Value(from: StrictDecoder(base: decoder))
    }
}

private struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// A decoder that hands every nested value to `Strict` and otherwise does what `base` does (the same coding paths,
/// the same errors).
private struct StrictDecoder: Decoder {
    let base: any Decoder
    var codingPath: [any CodingKey] { base.codingPath }
    var userInfo: [CodingUserInfoKey: Any] { base.userInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(StrictKeyedContainer(base: try base.container(keyedBy: type)))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        StrictUnkeyedContainer(base: try base.unkeyedContainer())
    }

    /// A single value is a scalar here: it is decoded by `base` as it is.
    func singleValueContainer() throws -> any SingleValueDecodingContainer { try base.singleValueContainer() }
}

private struct StrictKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let base: KeyedDecodingContainer<Key>
    var codingPath: [any CodingKey] { base.codingPath }
    var allKeys: [Key] { base.allKeys }

    func contains(_ key: Key) -> Bool { base.contains(key) }
    func decodeNil(forKey key: Key) throws -> Bool { try base.decodeNil(forKey: key) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try base.decode(Strict<T>.self, forKey: key).value
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(
            StrictKeyedContainer<NestedKey>(base: try base.nestedContainer(keyedBy: type, forKey: key)))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        StrictUnkeyedContainer(base: try base.nestedUnkeyedContainer(forKey: key))
    }

    func superDecoder() throws -> any Decoder { StrictDecoder(base: try base.superDecoder()) }
    func superDecoder(forKey key: Key) throws -> any Decoder { StrictDecoder(base: try base.superDecoder(forKey: key)) }
}

private struct StrictUnkeyedContainer: UnkeyedDecodingContainer {
    var base: any UnkeyedDecodingContainer
    var codingPath: [any CodingKey] { base.codingPath }
    var count: Int? { base.count }
    var isAtEnd: Bool { base.isAtEnd }
    var currentIndex: Int { base.currentIndex }

    mutating func decodeNil() throws -> Bool { try base.decodeNil() }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try base.decode(Strict<T>.self).value }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(StrictKeyedContainer<NestedKey>(base: try base.nestedContainer(keyedBy: type)))
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        StrictUnkeyedContainer(base: try base.nestedUnkeyedContainer())
    }

    mutating func superDecoder() throws -> any Decoder { StrictDecoder(base: try base.superDecoder()) }
}
