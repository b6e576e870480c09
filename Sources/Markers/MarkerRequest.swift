public import HLSPlaylist

/// A value of a client attribute (`X-...`) as the admin API takes it: RFC 8216 allows quoted strings,
/// hexadecimal sequences and decimal numbers.
public enum MarkerAttributeValue: Sendable, Hashable, Codable {
    /// Rendered as a quoted string: `X-AD-ID="abc"`.
    case string(String)
    /// Rendered as a decimal: `X-PRICE=12.5`.
    case number(Double)
    /// Rendered as a hexadecimal sequence: `X-PAYLOAD=0x0A0B`.
    case hexadecimal([UInt8])

    /// The value for the playlist.
    public var attributeValue: AttributeValue {
        switch self {
        case .string(let text): .quotedString(text)
        case .number(let number): .decimal(number)
        case .hexadecimal(let bytes): .hexadecimal(bytes)
        }
    }

    /// The admin API's form of a playlist value (an enumerated string, which client attributes never carry, is taken
    /// as a string).
    public init(_ value: AttributeValue) {
        switch value {
        case .quotedString(let text), .enumerated(let text): self = .string(text)
        case .decimal(let number): self = .number(number)
        case .hexadecimal(let bytes): self = .hexadecimal(bytes)
        }
    }
}

/// A client attribute of a marker: name (`X-[A-Z0-9-]+`) and value.
public struct MarkerAttribute: Sendable, Hashable, Codable {
    /// The attribute name, e.g. `X-AD-ID`.
    public var name: String
    /// The value.
    public var value: MarkerAttributeValue

    /// Creates a client attribute.
    public init(name: String, value: MarkerAttributeValue) {
        self.name = name
        self.value = value
    }

    /// The attribute for the playlist.
    public var clientAttribute: ClientAttribute {
        ClientAttribute(name: name, value: value.attributeValue)
    }
}

/// What the admin API is asked for about SCTE-35.
public enum MarkerSCTE35Request: Sendable, Hashable, Codable {
    /// The origin encodes a splice_insert cue-out (SCTE35-OUT) with the marker's break duration.
    case out
    /// The origin encodes a splice_insert cue-in (SCTE35-IN).
    case `in`
    /// Whole splice_info_sections given by the client, validated and passed through.
    case raw(command: [UInt8]?, out: [UInt8]?, in: [UInt8]?)
}

/// A marker as posted to `POST /admin/channels/{channel}/dateranges`, before defaults are applied. Two posts with
/// the same ID are the same marker if their requests are equal.
public struct MarkerRequest: Sendable, Hashable, Codable {
    /// ID, client-chosen, unique in the channel.
    public var id: String
    /// CLASS.
    public var classAttribute: String?
    /// START-DATE; nil means now on the shared clock.
    public var startDate: ProgramDateTime?
    /// CUE (PRE, POST, ONCE).
    public var cue: [String]
    /// END-DATE.
    public var endDate: ProgramDateTime?
    /// DURATION in seconds.
    public var duration: Double?
    /// PLANNED-DURATION in seconds.
    public var plannedDuration: Double?
    /// END-ON-NEXT=YES.
    public var endOnNext: Bool
    /// SCTE35-CMD / OUT / IN.
    public var scte35: MarkerSCTE35Request?
    /// `X-` attributes, rendered in name order.
    public var clientAttributes: [MarkerAttribute]

    /// Creates a request; client attributes are sorted by name.
    public init(
        id: String, classAttribute: String? = nil, startDate: ProgramDateTime? = nil, cue: [String] = [],
        endDate: ProgramDateTime? = nil, duration: Double? = nil, plannedDuration: Double? = nil,
        endOnNext: Bool = false, scte35: MarkerSCTE35Request? = nil, clientAttributes: [MarkerAttribute] = []
    ) {
        self.id = id
        self.classAttribute = classAttribute
        self.startDate = startDate
        self.cue = cue
        self.endDate = endDate
        self.duration = duration
        self.plannedDuration = plannedDuration
        self.endOnNext = endOnNext
        self.scte35 = scte35
        self.clientAttributes = clientAttributes.sorted { $0.name < $1.name }
    }

    /// The date range this request asks for, starting at `startDate` when the request gives none; the SCTE-35
    /// sections are the marker book's to add.
    public func dateRange(startDate defaultStart: ProgramDateTime) -> DateRange {
        DateRange(
            id: id, classAttribute: classAttribute, startDate: startDate ?? defaultStart, cue: cue, endDate: endDate,
            duration: duration, plannedDuration: plannedDuration, endOnNext: endOnNext,
            clientAttributes: clientAttributes.map(\.clientAttribute))
    }
}

/// The cue-in of an open marker (`PATCH /admin/channels/{channel}/dateranges/{id}`): adds END-DATE and/or DURATION,
/// and optionally SCTE35-IN. Attributes the marker already shows never change.
public struct MarkerPatch: Sendable, Hashable {
    /// The attributes a cue-in may add.
    public static let attributes: [DateRangeAttribute] = [.endDate, .duration, .scte35In]

    /// END-DATE to add.
    public var endDate: ProgramDateTime?
    /// DURATION to add, seconds.
    public var duration: Double?
    /// `.in` or `.raw(in:)` to add SCTE35-IN. When nil and the marker's SCTE35-OUT was encoded by the origin, the
    /// matching SCTE35-IN is added with the end.
    public var scte35: MarkerSCTE35Request?

    /// Creates a patch.
    public init(endDate: ProgramDateTime? = nil, duration: Double? = nil, scte35: MarkerSCTE35Request? = nil) {
        self.endDate = endDate
        self.duration = duration
        self.scte35 = scte35
    }
}
