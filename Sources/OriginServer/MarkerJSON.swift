import HLSPlaylist
import OriginCore

/// A stored marker as the admin API answers it: `{"marker": {...}, "tag": "#EXT-X-DATERANGE:..."}`.
struct MarkerJSON: Encodable {
    let marker: Marker

    private enum Keys: String, CodingKey { case marker, tag }
    private enum MarkerKeys: String, CodingKey {
        case id, `class`, startDate, cue, endDate, duration, plannedDuration, endOnNext, scte35, spliceEventId
        case clientAttributes, created, updated
    }
    private enum SCTE35Keys: String, CodingKey { case cmd, out, `in` }
    private struct NameKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
    private enum HexKeys: String, CodingKey { case hex }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(marker.renderedTag, forKey: .tag)
        var fields = container.nestedContainer(keyedBy: MarkerKeys.self, forKey: .marker)
        try fields.encode(marker.id, forKey: .id)
        try fields.encodeIfPresent(marker.classAttribute, forKey: .class)
        try fields.encode(marker.startDate.formatted, forKey: .startDate)
        if !marker.cue.isEmpty { try fields.encode(marker.cue, forKey: .cue) }
        try fields.encodeIfPresent(marker.endDate?.formatted, forKey: .endDate)
        try fields.encodeIfPresent(marker.duration, forKey: .duration)
        try fields.encodeIfPresent(marker.plannedDuration, forKey: .plannedDuration)
        if marker.endOnNext { try fields.encode(true, forKey: .endOnNext) }
        if marker.scte35Command != nil || marker.scte35Out != nil || marker.scte35In != nil {
            var sections = fields.nestedContainer(keyedBy: SCTE35Keys.self, forKey: .scte35)
            try sections.encodeIfPresent(marker.scte35Command.map(Self.hex), forKey: .cmd)
            try sections.encodeIfPresent(marker.scte35Out.map(Self.hex), forKey: .out)
            try sections.encodeIfPresent(marker.scte35In.map(Self.hex), forKey: .in)
        }
        try fields.encodeIfPresent(marker.spliceEventId, forKey: .spliceEventId)
        if !marker.clientAttributes.isEmpty {
            var attributes = fields.nestedContainer(keyedBy: NameKey.self, forKey: .clientAttributes)
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
        try fields.encode(ProgramDateTime(millisecondsSince1970: marker.createdMilliseconds).formatted, forKey: .created)
        try fields.encode(ProgramDateTime(millisecondsSince1970: marker.updatedMilliseconds).formatted, forKey: .updated)
    }

    static func hex(_ bytes: [UInt8]) -> String { AttributeList.render(.hexadecimal(bytes)) }
}

/// The answer of `GET /admin/channels/{channel}/dateranges`.
struct MarkerListJSON: Encodable {
    let channel: String
    let markers: [MarkerJSON]
}
