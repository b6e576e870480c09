import HLSPlaylist
import Markers
import OriginCore

/// A stored marker as the admin API answers it: `{"marker": {...}, "tag": "#EXT-X-DATERANGE:..."}`.
struct MarkerJSON: Encodable {
    let marker: Marker

    private enum Keys: String, CodingKey { case marker, tag }
    private struct NameKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
    private enum HexKeys: String, CodingKey { case hex }

    /// A date range attribute's value in JSON.
    private enum FieldValue: Encodable {
        case text(String)
        case texts([String])
        case number(Double)
        case flag(Bool)

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .text(let text): try container.encode(text)
            case .texts(let texts): try container.encode(texts)
            case .number(let number): try container.encode(number)
            case .flag(let flag): try container.encode(flag)
            }
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(marker.renderedTag, forKey: .tag)
        var fields = container.nestedContainer(keyedBy: NameKey.self, forKey: .marker)
        // The date range attributes, each under its field (`scte35.out` nests `out` in `scte35`).
        var nested: [String: [(key: String, value: FieldValue)]] = [:]
        for attribute in DateRangeAttribute.allCases {
            guard let value = Self.value(of: attribute, in: marker) else { continue }
            if let key = attribute.nestedKey {
                nested[attribute.topLevelField, default: []].append((key, value))
            } else {
                try fields.encode(value, forKey: NameKey(stringValue: attribute.field))
            }
        }
        for (field, values) in nested {
            var object = fields.nestedContainer(keyedBy: NameKey.self, forKey: NameKey(stringValue: field))
            for (key, value) in values { try object.encode(value, forKey: NameKey(stringValue: key)) }
        }
        try fields.encodeIfPresent(marker.spliceEventId, forKey: NameKey(stringValue: "spliceEventId"))
        // Markers made from SCTE-35 cues in the stream say so (`docs/markers.md`); API markers leave it out.
        if marker.source != .api {
            try fields.encode(marker.source.rawValue, forKey: NameKey(stringValue: "source"))
            try fields.encodeIfPresent(marker.segmentationTypeId, forKey: NameKey(stringValue: "segmentationTypeId"))
        }
        if !marker.clientAttributes.isEmpty {
            let field = NameKey(stringValue: "clientAttributes")
            var attributes = fields.nestedContainer(keyedBy: NameKey.self, forKey: field)
            for attribute in marker.clientAttributes {
                let key = NameKey(stringValue: attribute.name)
                switch attribute.value {
                case .string(let text): try attributes.encode(text, forKey: key)
                case .number(let number): try attributes.encode(number, forKey: key)
                case .hexadecimal(let bytes):
                    var wrapped = attributes.nestedContainer(keyedBy: HexKeys.self, forKey: key)
                    try wrapped.encode(Self.hex(bytes), forKey: .hex)
                }
            }
        }
        let created = ProgramDateTime(millisecondsSince1970: marker.createdMilliseconds)
        try fields.encode(created.formatted, forKey: NameKey(stringValue: "created"))
        let updated = ProgramDateTime(millisecondsSince1970: marker.updatedMilliseconds)
        try fields.encode(updated.formatted, forKey: NameKey(stringValue: "updated"))
    }

    /// An attribute's JSON value, nil when the tag leaves the attribute out.
    private static func value(of attribute: DateRangeAttribute, in marker: Marker) -> FieldValue? {
        guard let value = marker.dateRange[attribute] else { return nil }
        switch (attribute.valueType, value) {
        case (.enumeratedList, .quotedString(let list)):
            return .texts(list.split(separator: ",", omittingEmptySubsequences: false).map(String.init))
        case (.yes, _): return .flag(true)
        case (_, .quotedString(let text)), (_, .enumerated(let text)): return .text(text)
        case (_, .decimal(let number)): return .number(number)
        case (_, .hexadecimal(let bytes)): return .text(hex(bytes))
        }
    }

    static func hex(_ bytes: [UInt8]) -> String { AttributeList.render(.hexadecimal(bytes)) }
}

/// The answer of `GET /admin/channels/{channel}/dateranges`.
struct MarkerListJSON: Encodable {
    let channel: String
    let markers: [MarkerJSON]
}
