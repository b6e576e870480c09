import HLSPlaylist

/// A marker in a channel's marker book: the EXT-X-DATERANGE the playlists show, the request it was made from (so a
/// repeated post is recognised) and the SCTE-35 event id the origin gave it.
///
/// A marker only ever gains attributes (END-DATE, DURATION, SCTE35-IN at cue-in); an attribute once shown keeps its
/// value in every snapshot, also across restarts (the marker is journaled as stored here).
public struct Marker: Sendable, Hashable, Codable {
    /// ID.
    public var id: String
    /// CLASS.
    public var classAttribute: String?
    /// START-DATE.
    public var startDate: ProgramDateTime
    /// CUE.
    public var cue: [String]
    /// END-DATE.
    public var endDate: ProgramDateTime?
    /// DURATION, seconds.
    public var duration: Double?
    /// PLANNED-DURATION, seconds.
    public var plannedDuration: Double?
    /// END-ON-NEXT=YES.
    public var endOnNext: Bool
    /// `X-` attributes in name order.
    public var clientAttributes: [MarkerAttribute]
    /// SCTE35-CMD.
    public var scte35Command: [UInt8]?
    /// SCTE35-OUT.
    public var scte35Out: [UInt8]?
    /// SCTE35-IN.
    public var scte35In: [UInt8]?
    /// splice_event_id of the splice_inserts the origin encoded for this marker.
    public var spliceEventId: UInt32?
    /// The request of the first post (the idempotency key together with the ID).
    public var request: MarkerRequest
    /// Shared-clock time of the first post, ms since the epoch.
    public var createdMilliseconds: Int64
    /// Shared-clock time of the last change, ms since the epoch.
    public var updatedMilliseconds: Int64

    /// The EXT-X-DATERANGE value.
    public var dateRange: DateRange {
        DateRange(
            id: id, classAttribute: classAttribute, startDate: startDate, cue: cue, endDate: endDate,
            duration: duration, plannedDuration: plannedDuration, endOnNext: endOnNext,
            clientAttributes: clientAttributes.map { ClientAttribute(name: $0.name, value: $0.value.attributeValue) },
            scte35Command: scte35Command, scte35Out: scte35Out, scte35In: scte35In)
    }

    /// The tag exactly as the playlists render it.
    public var renderedTag: String { dateRange.renderedTag }

    /// The end of the range known from END-DATE or DURATION (ms), nil while the end is not known.
    public var knownEndMilliseconds: Int64? {
        if let endDate { return endDate.millisecondsSince1970 }
        if let duration { return startDate.millisecondsSince1970 + Int64((duration * 1000).rounded()) }
        return nil
    }
}
