public import HLSPlaylist

/// Who made a marker.
public enum MarkerSource: String, Sendable, Hashable, Codable {
    /// The admin API (`POST /admin/channels/{channel}/dateranges`).
    case api
    /// An SCTE-35 cue read from the pushed stream (`InbandCues`).
    case inband
}

/// A marker in a channel's marker book: the EXT-X-DATERANGE the playlists show, the request it was made from (so a
/// repeated post is recognised) and the SCTE-35 event id the origin gave it.
///
/// The attributes are the ``DateRange`` itself (declared once, in ``DateRangeAttribute``); `marker.endDate`,
/// `marker.scte35Out` and the like read and write it. A marker only ever gains attributes (END-DATE, DURATION,
/// SCTE35-IN at cue-in); an attribute once shown keeps its value in every snapshot, also across restarts (the marker
/// is journaled as stored here).
@dynamicMemberLookup
public struct Marker: Sendable, Hashable {
    /// The EXT-X-DATERANGE value: every attribute the playlists show.
    public var dateRange: DateRange
    /// splice_event_id of the splice_inserts the origin encoded for this marker; for an in-band cue, the
    /// splice_event_id (splice_insert) or segmentation_event_id (time_signal) of the cue.
    public var spliceEventId: UInt32?
    /// Who made the marker. Default: `.api`.
    public var source: MarkerSource = .api
    /// In-band time_signal cues: the segmentation_type_id of the segmentation descriptor the marker stands for
    /// (0x22 break start, 0x30 provider advertisement start, ...); nil for splice_insert cues and API markers.
    public var segmentationTypeId: UInt8?
    /// The request of the first post (the idempotency key together with the ID).
    public var request: MarkerRequest
    /// Shared-clock time of the first post, ms since the epoch.
    public var createdMilliseconds: Int64
    /// Shared-clock time of the last change, ms since the epoch.
    public var updatedMilliseconds: Int64

    /// Creates a marker.
    public init(
        dateRange: DateRange, spliceEventId: UInt32? = nil, request: MarkerRequest, createdMilliseconds: Int64,
        updatedMilliseconds: Int64
    ) {
        self.dateRange = dateRange
        self.spliceEventId = spliceEventId
        self.request = request
        self.createdMilliseconds = createdMilliseconds
        self.updatedMilliseconds = updatedMilliseconds
    }

    /// An attribute of the date range, e.g. `marker.startDate`.
    public subscript<Value>(dynamicMember attribute: WritableKeyPath<DateRange, Value>) -> Value {
        get { dateRange[keyPath: attribute] }
        set { dateRange[keyPath: attribute] = newValue }
    }

    /// `X-` attributes in name order, as the admin API takes them.
    public var clientAttributes: [MarkerAttribute] {
        dateRange.clientAttributes.map { MarkerAttribute(name: $0.name, value: MarkerAttributeValue($0.value)) }
    }

    /// The tag exactly as the playlists render it.
    public var renderedTag: String { dateRange.renderedTag }

    /// The end of the range known from END-DATE or DURATION (ms), nil while the end is not known.
    public var knownEndMilliseconds: Int64? {
        if let endDate = dateRange.endDate { return endDate.millisecondsSince1970 }
        if let duration = dateRange.duration {
            // Validated markers end by the year 9999; one from elsewhere (an older journal, a shared book) that
            // does not is taken to end at the latest time there is rather than overflow.
            let milliseconds = (duration * 1000).rounded()
            guard (-9e15..<9e15).contains(milliseconds) else { return .max / 2 }
            return dateRange.startDate.millisecondsSince1970 &+ Int64(milliseconds)
        }
        return nil
    }
}

/// The journal form: one flat object, each attribute under the name of its ``DateRange`` property (the case name of
/// its ``DateRangeAttribute``: `classAttribute`, `scte35Out`, ...), then `clientAttributes`, `spliceEventId`,
/// `source` (left out for `api`), `segmentationTypeId`, `request`, `createdMilliseconds` and
/// `updatedMilliseconds`; absent optional values are left out.
extension Marker: Codable {
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
        init(_ attribute: DateRangeAttribute) { self.init(stringValue: String(describing: attribute)) }
        static let clientAttributes = Key(stringValue: "clientAttributes")
        static let spliceEventId = Key(stringValue: "spliceEventId")
        static let source = Key(stringValue: "source")
        static let segmentationTypeId = Key(stringValue: "segmentationTypeId")
        static let request = Key(stringValue: "request")
        static let createdMilliseconds = Key(stringValue: "createdMilliseconds")
        static let updatedMilliseconds = Key(stringValue: "updatedMilliseconds")
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for attribute in DateRangeAttribute.allCases {
            let key = Key(attribute)
            switch attribute {
            case .id: try container.encode(dateRange.id, forKey: key)
            case .classAttribute: try container.encodeIfPresent(dateRange.classAttribute, forKey: key)
            case .startDate: try container.encode(dateRange.startDate, forKey: key)
            case .cue: try container.encode(dateRange.cue, forKey: key)
            case .endDate: try container.encodeIfPresent(dateRange.endDate, forKey: key)
            case .duration: try container.encodeIfPresent(dateRange.duration, forKey: key)
            case .plannedDuration: try container.encodeIfPresent(dateRange.plannedDuration, forKey: key)
            case .scte35Command: try container.encodeIfPresent(dateRange.scte35Command, forKey: key)
            case .scte35Out: try container.encodeIfPresent(dateRange.scte35Out, forKey: key)
            case .scte35In: try container.encodeIfPresent(dateRange.scte35In, forKey: key)
            case .endOnNext: try container.encode(dateRange.endOnNext, forKey: key)
            }
        }
        try container.encode(clientAttributes, forKey: .clientAttributes)
        try container.encodeIfPresent(spliceEventId, forKey: .spliceEventId)
        if source != .api { try container.encode(source, forKey: .source) }
        try container.encodeIfPresent(segmentationTypeId, forKey: .segmentationTypeId)
        try container.encode(request, forKey: .request)
        try container.encode(createdMilliseconds, forKey: .createdMilliseconds)
        try container.encode(updatedMilliseconds, forKey: .updatedMilliseconds)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        var dateRange = DateRange(
            id: try container.decode(String.self, forKey: Key(.id)),
            startDate: try container.decode(ProgramDateTime.self, forKey: Key(.startDate)))
        for attribute in DateRangeAttribute.allCases {
            let key = Key(attribute)
            switch attribute {
            case .id, .startDate: break
            case .classAttribute: dateRange.classAttribute = try container.decodeIfPresent(String.self, forKey: key)
            case .cue: dateRange.cue = try container.decode([String].self, forKey: key)
            case .endDate: dateRange.endDate = try container.decodeIfPresent(ProgramDateTime.self, forKey: key)
            case .duration: dateRange.duration = try container.decodeIfPresent(Double.self, forKey: key)
            case .plannedDuration:
                dateRange.plannedDuration = try container.decodeIfPresent(Double.self, forKey: key)
            case .scte35Command: dateRange.scte35Command = try container.decodeIfPresent([UInt8].self, forKey: key)
            case .scte35Out: dateRange.scte35Out = try container.decodeIfPresent([UInt8].self, forKey: key)
            case .scte35In: dateRange.scte35In = try container.decodeIfPresent([UInt8].self, forKey: key)
            case .endOnNext: dateRange.endOnNext = try container.decode(Bool.self, forKey: key)
            }
        }
        dateRange.clientAttributes = try container.decode([MarkerAttribute].self, forKey: .clientAttributes)
            .map(\.clientAttribute)
        self.init(
            dateRange: dateRange, spliceEventId: try container.decodeIfPresent(UInt32.self, forKey: .spliceEventId),
            request: try container.decode(MarkerRequest.self, forKey: .request),
            createdMilliseconds: try container.decode(Int64.self, forKey: .createdMilliseconds),
            updatedMilliseconds: try container.decode(Int64.self, forKey: .updatedMilliseconds))
        source = try container.decodeIfPresent(MarkerSource.self, forKey: .source) ?? .api
        segmentationTypeId = try container.decodeIfPresent(UInt8.self, forKey: .segmentationTypeId)
    }
}
