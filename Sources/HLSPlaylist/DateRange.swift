/// A value in an attribute list (RFC 8216 section 4.2).
public enum AttributeValue: Sendable, Hashable {
    /// A quoted string: no `"`, CR or LF inside.
    case quotedString(String)
    /// A hexadecimal sequence, rendered `0x` + upper-case hex digits.
    case hexadecimal([UInt8])
    /// A decimal floating-point number.
    case decimal(Double)
    /// An enumerated string (unquoted), e.g. `YES`.
    case enumerated(String)
}

/// A client-defined DATERANGE attribute (`X-...`).
public struct ClientAttribute: Sendable, Hashable {
    public var name: String
    public var value: AttributeValue
    public init(name: String, value: AttributeValue) {
        self.name = name
        self.value = value
    }
}

/// An EXT-X-DATERANGE tag (RFC 8216 section 4.3.2.7).
public struct DateRange: Sendable, Hashable {
    public var id: String
    public var classAttribute: String?
    public var startDate: ProgramDateTime
    /// CUE (8216bis): e.g. ["PRE"], ["POST"], ["ONCE"].
    public var cue: [String]
    public var endDate: ProgramDateTime?
    /// DURATION in seconds.
    public var duration: Double?
    /// PLANNED-DURATION in seconds.
    public var plannedDuration: Double?
    public var endOnNext: Bool
    public var clientAttributes: [ClientAttribute]
    /// SCTE35-CMD: a whole splice_info_section.
    public var scte35Command: [UInt8]?
    public var scte35Out: [UInt8]?
    public var scte35In: [UInt8]?

    public init(
        id: String, classAttribute: String? = nil, startDate: ProgramDateTime, cue: [String] = [],
        endDate: ProgramDateTime? = nil, duration: Double? = nil, plannedDuration: Double? = nil,
        endOnNext: Bool = false, clientAttributes: [ClientAttribute] = [], scte35Command: [UInt8]? = nil,
        scte35Out: [UInt8]? = nil, scte35In: [UInt8]? = nil
    ) {
        self.id = id
        self.classAttribute = classAttribute
        self.startDate = startDate
        self.cue = cue
        self.endDate = endDate
        self.duration = duration
        self.plannedDuration = plannedDuration
        self.endOnNext = endOnNext
        self.clientAttributes = clientAttributes
        self.scte35Command = scte35Command
        self.scte35Out = scte35Out
        self.scte35In = scte35In
    }
}
