/// The attributes of an EXT-X-DATERANGE tag (RFC 8216 section 4.3.2.7, CUE from 8216bis), client attributes (`X-...`)
/// aside, declared once: the name in the tag, the field that sets it in the admin API's JSON, and its value type.
///
/// Everything else derives from this list: ``DateRange`` reads its values through ``DateRange/subscript(_:)`` and
/// renders them in declaration order (client attributes go just before SCTE35-CMD); validation and parse errors name
/// the attribute by ``name``; the marker book, its journal and the admin API's bodies and error messages use
/// ``field``, and the marker journal keys each attribute by the case name, which is also the name of its ``DateRange``
/// property. Adding an attribute is a case here (with its stored property on ``DateRange``); the compiler then points
/// at each exhaustive switch that has to say how to handle it.
public enum DateRangeAttribute: String, CaseIterable, Sendable, Hashable {
    case id = "ID"
    case classAttribute = "CLASS"
    case startDate = "START-DATE"
    case cue = "CUE"
    case endDate = "END-DATE"
    case duration = "DURATION"
    case plannedDuration = "PLANNED-DURATION"
    case scte35Command = "SCTE35-CMD"
    case scte35Out = "SCTE35-OUT"
    case scte35In = "SCTE35-IN"
    case endOnNext = "END-ON-NEXT"

    /// How a value is written in the tag and in JSON.
    public enum ValueType: Sendable, Hashable {
        /// A quoted string in the tag, a string in JSON.
        case quotedString
        /// A quoted ISO 8601 date-time in the tag, the same text in JSON.
        case dateTime
        /// Comma-separated enumerated values in one quoted string in the tag (`CUE="PRE,ONCE"`), an array of strings
        /// in JSON.
        case enumeratedList
        /// A decimal number of seconds in the tag, a number in JSON.
        case decimalSeconds
        /// A hexadecimal sequence in the tag, the same `0x...` text in JSON.
        case hexadecimal
        /// `NAME=YES` when set, absent otherwise; `true` in JSON.
        case yes
    }

    /// The attribute name in the tag, e.g. `PLANNED-DURATION`.
    public var name: String { rawValue }

    /// The attribute's field in the admin API's JSON, e.g. `plannedDuration`; a dot nests it in an object
    /// (`scte35.out` is `{"scte35": {"out": ...}}`).
    public var field: String {
        switch self {
        case .id: "id"
        case .classAttribute: "class"
        case .startDate: "startDate"
        case .cue: "cue"
        case .endDate: "endDate"
        case .duration: "duration"
        case .plannedDuration: "plannedDuration"
        case .scte35Command: "scte35.cmd"
        case .scte35Out: "scte35.out"
        case .scte35In: "scte35.in"
        case .endOnNext: "endOnNext"
        }
    }

    /// The value type.
    public var valueType: ValueType {
        switch self {
        case .id, .classAttribute: .quotedString
        case .startDate, .endDate: .dateTime
        case .cue: .enumeratedList
        case .duration, .plannedDuration: .decimalSeconds
        case .scte35Command, .scte35Out, .scte35In: .hexadecimal
        case .endOnNext: .yes
        }
    }

    /// The top-level JSON field: ``field`` up to its first dot (`scte35` for `scte35.out`).
    public var topLevelField: String { String(field.prefix { $0 != "." }) }

    /// The key inside the top-level field's object (`out` for `scte35.out`), or nil when the field is not nested.
    public var nestedKey: String? {
        field.firstIndex(of: ".").map { String(field[field.index(after: $0)...]) }
    }

    /// The attribute with a tag name, e.g. `DateRangeAttribute(name: "CLASS")`; nil for client attributes and
    /// unknown names.
    public init?(name: String) {
        self.init(rawValue: name)
    }
}

extension DateRange {
    /// The value of an attribute as the tag carries it, or nil when the tag leaves it out (no CLASS, an empty CUE,
    /// END-ON-NEXT not set, ...).
    public subscript(attribute: DateRangeAttribute) -> AttributeValue? {
        switch attribute {
        case .id: .quotedString(id)
        case .classAttribute: classAttribute.map(AttributeValue.quotedString)
        case .startDate: .quotedString(startDate.formatted)
        case .cue: cue.isEmpty ? nil : .quotedString(cue.joined(separator: ","))
        case .endDate: endDate.map { .quotedString($0.formatted) }
        case .duration: duration.map(AttributeValue.decimal)
        case .plannedDuration: plannedDuration.map(AttributeValue.decimal)
        case .scte35Command: scte35Command.map(AttributeValue.hexadecimal)
        case .scte35Out: scte35Out.map(AttributeValue.hexadecimal)
        case .scte35In: scte35In.map(AttributeValue.hexadecimal)
        case .endOnNext: endOnNext ? .enumerated("YES") : nil
        }
    }
}
