import HLSPlaylist
import SCTE35

/// The date ranges (ad markers) of one channel: a pure value, changed only through ``add(_:nowMilliseconds:)``,
/// ``close(id:patch:nowMilliseconds:)`` and ``prune(windowStartMilliseconds:graceMilliseconds:nowMilliseconds:)``.
///
/// Rules kept here:
/// - The client-chosen ID makes a post idempotent: the same request again returns the stored marker; a different
///   request with a known ID is a conflict (409) and changes nothing. IDs are never reused, not even after the marker
///   left the window (RFC 8216 section 6.2.1).
/// - A marker only gains attributes: the cue-in adds END-DATE, DURATION and SCTE35-IN; a value already shown never
///   changes (409).
/// - Every marker passes ``DateRange/validate()`` before it is stored, so the rendered tag is always legal.
public struct MarkerBook: Sendable, Hashable, Codable {
    /// Markers by ID.
    public internal(set) var markers: [String: Marker]
    /// IDs of pruned markers with the time they were pruned (ms); a post with one of them is refused.
    public internal(set) var retiredIds: [String: Int64]

    /// Most markers a channel holds at once.
    public static let maximumMarkers = 1000
    /// Longest ID or CLASS, in UTF-8 bytes.
    public static let maximumTextBytes = 256
    /// How long a pruned ID stays reserved: 24 hours.
    public static let retiredIdLifetimeMilliseconds: Int64 = 86_400_000

    /// An empty book.
    public init() {
        markers = [:]
        retiredIds = [:]
    }

    /// The markers by START-DATE, then ID.
    public var sortedMarkers: [Marker] {
        markers.values.sorted { ($0.startDate, $0.id) < ($1.startDate, $1.id) }
    }

    /// Adds a marker, or returns the stored one when the same request was posted before.
    /// - Parameters:
    ///   - request: the marker as posted.
    ///   - now: shared-clock time in ms; the START-DATE when the request has none.
    /// - Returns: the stored marker and whether it was created by this call.
    /// - Throws: ``MarkerError``: `invalid` for an invalid request (naming the field), `conflict` for an ID already
    ///   used by a different request or by a pruned marker, `tooManyMarkers` when the channel holds ``maximumMarkers``.
    public mutating func add(
        _ request: MarkerRequest, nowMilliseconds now: Int64
    ) throws(MarkerError)
        -> (marker: Marker, created: Bool)
    {
        try Self.checkText(request.id, field: DateRangeAttribute.id.field, allowSlash: false)
        // Reserved: `scte35-...` names the markers made from in-band cues (a posted one would silently block the
        // stream's cue), `{id}/interstitial` the rendered interstitials (refused with any '/' above).
        guard !request.id.hasPrefix(Self.inbandIdPrefix) else {
            throw .invalid(
                DateRangeAttribute.id.field,
                "id '\(request.id)' starts with '\(Self.inbandIdPrefix)', reserved for markers read from the stream's "
                    + "SCTE-35 cues ('{id}/interstitial' is reserved for rendered interstitials)")
        }
        if let existing = markers[request.id] {
            guard existing.request == request else {
                throw .conflict(
                    DateRangeAttribute.id.field,
                    "id '\(request.id)' already names a different marker (posted with other attributes); a marker "
                        + "changes only by PATCH at cue-in")
            }
            return (existing, false)
        }
        guard retiredIds[request.id] == nil else {
            throw .conflict(
                DateRangeAttribute.id.field,
                "id '\(request.id)' was used by a marker that has left the live window; IDs are never reused")
        }
        guard markers.count < Self.maximumMarkers else {
            throw MarkerError(
                .tooManyMarkers, field: nil,
                "channel holds \(Self.maximumMarkers) markers: wait for old ones to leave the window")
        }
        if let classAttribute = request.classAttribute {
            try Self.checkText(classAttribute, field: DateRangeAttribute.classAttribute.field, allowSlash: true)
        }
        for attribute in request.clientAttributes {
            let field = "clientAttributes.\(attribute.name)"
            switch attribute.value {
            case .string(let text): try Self.checkText(text, field: field, allowSlash: true, allowEmpty: true)
            case .number(let number):
                guard number.isFinite, number >= 0 else {
                    throw .invalid(field, "decimal values are finite and not negative (decimal-floating-point)")
                }
            case .hexadecimal: break
            }
        }
        let start = request.startDate ?? ProgramDateTime(millisecondsSince1970: now)
        var marker = Marker(
            dateRange: request.dateRange(startDate: start), request: request, createdMilliseconds: now,
            updatedMilliseconds: now)
        // Check the date range before encoding SCTE-35 so that a bad duration is reported as such.
        try Self.validate(marker)
        switch request.scte35 {
        case nil: break
        case .out:
            let eventId = allocateEventId(for: request.id)
            marker.spliceEventId = eventId
            let seconds =
                marker.duration ?? marker.knownEndMilliseconds.map { Double($0 - start.millisecondsSince1970) / 1000 }
                ?? marker.plannedDuration
            marker.scte35Out =
                SpliceInfoSection(
                    spliceInsert: SpliceInsert(
                        eventId: eventId, outOfNetwork: true,
                        breakDuration: seconds.map { SpliceInsert.ticks(seconds: $0) })
                ).bytes
        case .in:
            let eventId = allocateEventId(for: request.id)
            marker.spliceEventId = eventId
            marker.scte35In = Self.cueIn(eventId: eventId)
        case .raw(let command, let out, let cueIn):
            guard command != nil || out != nil || cueIn != nil else {
                throw .invalid(DateRangeAttribute.scte35Command.topLevelField, "give at least one of cmd, out, in")
            }
            marker.scte35Command = try Self.checkSection(command, field: DateRangeAttribute.scte35Command.field)
            marker.scte35Out = try Self.checkSection(out, field: DateRangeAttribute.scte35Out.field)
            marker.scte35In = try Self.checkSection(cueIn, field: DateRangeAttribute.scte35In.field)
        }
        try Self.validate(marker)
        markers[request.id] = marker
        return (marker, true)
    }

    /// Closes an open marker (the cue-in): adds END-DATE and/or DURATION, and SCTE35-IN.
    ///
    /// Without an explicit `scte35` in the patch, a marker whose SCTE35-OUT the origin encoded gets the matching
    /// SCTE35-IN (same splice_event_id, out_of_network_indicator 0) with its end. Repeating a patch changes nothing.
    /// - Returns: the marker and whether this call changed it.
    /// - Throws: ``MarkerError``: `unknownMarker` for an unknown ID, `invalid` patch, `conflict` for a change to a
    ///   shown value, an END-ON-NEXT marker or a pruned marker.
    public mutating func close(
        id: String, patch: MarkerPatch, nowMilliseconds now: Int64
    ) throws(MarkerError)
        -> (marker: Marker, changed: Bool)
    {
        guard var marker = markers[id] else {
            if retiredIds[id] != nil {
                throw .conflict(
                    DateRangeAttribute.id.field, "marker '\(id)' has left the live window and can no longer change")
            }
            throw MarkerError(
                .unknownMarker, field: DateRangeAttribute.id.field, "no marker with id '\(id)' in this channel")
        }
        guard patch.endDate != nil || patch.duration != nil || patch.scte35 != nil else {
            throw .invalid(
                DateRangeAttribute.endDate.field,
                "a cue-in PATCH needs endDate or duration (and may add scte35: \"in\")")
        }
        if marker.endOnNext, patch.endDate != nil || patch.duration != nil {
            throw .conflict(
                DateRangeAttribute.endOnNext.field,
                "marker '\(id)' has END-ON-NEXT=YES: it ends where the next marker of its CLASS starts and cannot take "
                    + "END-DATE or DURATION")
        }
        let original = marker
        if let endDate = patch.endDate {
            if let shown = marker.endDate, shown != endDate {
                throw .conflict(
                    DateRangeAttribute.endDate.field, "END-DATE is already \(shown.formatted) and never changes")
            }
            marker.endDate = endDate
        }
        if let duration = patch.duration {
            if let shown = marker.duration, shown != duration {
                throw .conflict(DateRangeAttribute.duration.field, "DURATION is already \(shown) and never changes")
            }
            marker.duration = duration
        }
        try Self.validate(marker)
        var cueIn: [UInt8]?
        switch patch.scte35 {
        case nil:
            if original.request.scte35 == .out, marker.scte35In == nil, patch.endDate != nil || patch.duration != nil {
                cueIn = Self.cueIn(eventId: marker.spliceEventId ?? allocateEventId(for: id))
            }
        case .in:
            cueIn = Self.cueIn(eventId: marker.spliceEventId ?? allocateEventId(for: id))
        case .raw(nil, nil, let given?):
            cueIn = try Self.checkSection(given, field: DateRangeAttribute.scte35In.field)
        case .out, .raw:
            throw .invalid(
                DateRangeAttribute.scte35In.topLevelField,
                "a cue-in PATCH can only add SCTE35-IN: \"in\" or {\"in\": \"0x...\"}")
        }
        if let cueIn {
            if let shown = marker.scte35In, shown != cueIn, patch.scte35 != nil {
                throw .conflict(DateRangeAttribute.scte35In.field, "SCTE35-IN is already shown and never changes")
            }
            if marker.scte35In == nil {
                marker.scte35In = cueIn
                if marker.spliceEventId == nil, patch.scte35 == .in {
                    marker.spliceEventId = SpliceInfoSection.eventId(of: cueIn)
                }
            }
        }
        try Self.validate(marker)
        guard marker != original else { return (marker, false) }
        marker.updatedMilliseconds = now
        markers[id] = marker
        return (marker, true)
    }

    /// The end of each marker's range in ms: END-DATE, START-DATE + DURATION, or for END-ON-NEXT the START-DATE of
    /// the next marker of the same CLASS. Markers whose end is not known yet are missing.
    public func endsMilliseconds() -> [String: Int64] {
        var ends: [String: Int64] = [:]
        var waiting: [String: [Marker]] = [:]  // open END-ON-NEXT markers by CLASS
        for marker in sortedMarkers {
            let start = marker.startDate.millisecondsSince1970
            if let classAttribute = marker.classAttribute, let open = waiting[classAttribute] {
                var still: [Marker] = []
                for candidate in open {
                    if candidate.startDate.millisecondsSince1970 < start {
                        ends[candidate.id] = start
                    } else {
                        still.append(candidate)
                    }
                }
                waiting[classAttribute] = still
            }
            if let end = marker.knownEndMilliseconds {
                ends[marker.id] = end
            } else if marker.endOnNext, let classAttribute = marker.classAttribute {
                waiting[classAttribute, default: []].append(marker)
            }
        }
        return ends
    }

    /// Removes markers that ended more than `grace` before the window start, and forgets retired IDs older than
    /// ``retiredIdLifetimeMilliseconds``.
    /// - Parameters:
    ///   - windowStart: PDT of the first listed segment (the earliest over the channel's renditions), ms.
    ///   - grace: how long past the window start an ended marker is kept (so tags placed by its end stay with
    ///     their segment while it is listed).
    ///   - now: shared-clock time, ms.
    /// - Returns: the IDs removed.
    @discardableResult
    public mutating func prune(
        windowStartMilliseconds windowStart: Int64, graceMilliseconds grace: Int64,
        nowMilliseconds now: Int64
    ) -> [String] {
        var removed: [String] = []
        for (id, end) in endsMilliseconds() where end + grace < windowStart {
            markers[id] = nil
            retiredIds[id] = now
            removed.append(id)
        }
        retiredIds = retiredIds.filter { now - $0.value <= Self.retiredIdLifetimeMilliseconds }
        return removed.sorted()
    }

    // MARK: - Helpers

    /// A splice_event_id derived from the ID (FNV-1a, so redundant origins given the same posts agree), moved on
    /// while another marker of the channel uses it.
    func allocateEventId(for id: String) -> UInt32 {
        var hash: UInt32 = 0x811C_9DC5
        for byte in id.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 0x0100_0193
        }
        let used = Set(markers.values.compactMap(\.spliceEventId))
        while used.contains(hash) { hash &+= 1 }
        return hash
    }

    static func cueIn(eventId: UInt32) -> [UInt8] {
        SpliceInfoSection(spliceInsert: SpliceInsert(eventId: eventId, outOfNetwork: false)).bytes
    }

    static func checkSection(_ bytes: [UInt8]?, field: String) throws(MarkerError) -> [UInt8]? {
        guard let bytes else { return nil }
        do {
            _ = try SpliceInfoSection(validating: bytes)
        } catch {
            throw .invalid(field, "not a valid SCTE-35 splice_info_section: \(error.message)")
        }
        return bytes
    }

    /// The prefix of the IDs of markers made from in-band SCTE-35 cues (``InbandCue/markerId``); refused in posts.
    public static let inbandIdPrefix = "scte35-"

    static func checkText(
        _ text: String, field: String, allowSlash: Bool, allowEmpty: Bool = false
    )
        throws(MarkerError)
    {
        guard allowEmpty || !text.isEmpty else { throw .invalid(field, "must not be empty") }
        guard text.utf8.count <= maximumTextBytes else {
            throw .invalid(field, "longer than \(maximumTextBytes) bytes")
        }
        for byte in text.utf8 {
            guard byte >= 0x20, byte != 0x7F else { throw .invalid(field, "contains a control character") }
            guard byte != UInt8(ascii: "\"") else { throw .invalid(field, "contains '\"'") }
            guard allowSlash || byte != UInt8(ascii: "/") else {
                throw .invalid(field, "contains '/' (IDs are used in admin URLs)")
            }
        }
    }

    /// Runs ``DateRange/validate()`` and names the request field at fault.
    static func validate(_ marker: Marker) throws(MarkerError) {
        do {
            try marker.dateRange.validate()
        } catch {
            let field = field(ofAttribute: error.attribute)
            throw MarkerError(.invalid, field: field, "\(field) (\(error.attribute)): \(error.message)")
        }
    }

    /// The admin API field of a tag attribute: ``DateRangeAttribute/field``, or `clientAttributes.X-...`.
    static func field(ofAttribute attribute: String) -> String {
        DateRangeAttribute(name: attribute)?.field ?? "clientAttributes.\(attribute)"
    }
}
