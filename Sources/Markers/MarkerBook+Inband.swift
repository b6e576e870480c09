import HLSPlaylist
public import SCTE35

/// One SCTE-35 cue read from a pushed segment, placed on the channel's timeline.
public struct InbandCue: Sendable, Hashable {
    /// What the section asks for (one splice_insert, or one segmentation descriptor of a time_signal).
    public var cue: SpliceCue
    /// The whole splice_info_section as it came in the stream: the marker's SCTE35-OUT, -IN or -CMD.
    public var section: [UInt8]
    /// The splice point's PTS (33 bits, pts_adjustment added); for an immediate cue the start PTS of the segment it
    /// came in. Part of the marker ID (not moved with a late cue's placement).
    public var splicePTS: UInt64
    /// Where the cue is placed on the channel's PDT timeline, ms since the epoch: the splice point, or the end of the
    /// carrying segment for an immediate or late cue.
    public var spliceMilliseconds: Int64
    /// A timed cue whose splice fell before the end of the segment that carried it (placed at that end).
    public var late = false

    public init(cue: SpliceCue, section: [UInt8], splicePTS: UInt64, spliceMilliseconds: Int64) {
        self.cue = cue
        self.section = section
        self.splicePTS = splicePTS
        self.spliceMilliseconds = spliceMilliseconds
    }

    /// Places the cues of one section on the timeline through the segment they came in: the splice PTS is
    /// unwrapped next to the segment's first PTS (33-bit wrap; within about 13 hours either way) and the difference
    /// added to the segment's PDT. Using the segment the cue came in makes a discontinuity before it harmless: only
    /// that segment's PTS and PDT are used.
    ///
    /// The cue is read once the carrying segment is listed, so its tags may only land on a later segment (a listed
    /// segment's tags never change, RFC 8216 6.2.1): an immediate cue, and a timed one whose splice falls before the
    /// carrying segment's end (``late``), are placed at that end (its PDT + duration, the same in every rendition
    /// and origin).
    /// - Parameters:
    ///   - section: the splice_info_section bytes.
    ///   - segmentStartPTS: the segment's first PTS (90 kHz, any value: taken modulo 2^33).
    ///   - segmentMilliseconds: the segment's PDT, ms since the epoch.
    ///   - segmentDurationMilliseconds: the segment's duration, ms.
    /// - Returns: the cues, none for splice_null and the commands that make no marker.
    /// - Throws: ``SCTE35Error`` for a section that is not valid SCTE-35.
    public static func cues(
        section: [UInt8], segmentStartPTS: Int64, segmentMilliseconds: Int64, segmentDurationMilliseconds: Int64
    ) throws(SCTE35Error) -> [InbandCue] {
        let parsed = try SpliceInfoSection(validating: section)
        let start = UInt64(bitPattern: segmentStartPTS) & ptsMask
        let (end, overflow) = segmentMilliseconds.addingReportingOverflow(max(0, segmentDurationMilliseconds))
        let segmentEnd = overflow ? segmentMilliseconds : end
        return try parsed.cues().map { cue in
            let pts = cue.spliceTime ?? start
            var inband = InbandCue(
                cue: cue, section: section, splicePTS: pts,
                spliceMilliseconds: milliseconds(pts: pts, segmentStartPTS: start, segmentMilliseconds: segmentMilliseconds))
            if inband.spliceMilliseconds < segmentEnd {
                inband.late = cue.spliceTime != nil
                inband.spliceMilliseconds = segmentEnd
            }
            return inband
        }
    }

    /// `pts` on the PDT timeline of a segment starting at `segmentStartPTS` (both 33-bit), rounded to the nearest ms.
    public static func milliseconds(pts: UInt64, segmentStartPTS: UInt64, segmentMilliseconds: Int64) -> Int64 {
        let modulus: Int64 = 1 << 33
        var offset = Int64(bitPattern: (pts &- segmentStartPTS) & ptsMask)  // 0 ..< 2^33
        if offset > modulus / 2 { offset -= modulus }  // nearest: before the segment start
        let milliseconds = offset >= 0 ? (offset + 45) / 90 : -((-offset + 45) / 90)
        return segmentMilliseconds.addingReportingOverflow(milliseconds).overflow
            ? segmentMilliseconds : segmentMilliseconds + milliseconds
    }

    static let ptsMask: UInt64 = (1 << 33) - 1

    /// The marker ID: `scte35-{event id, 8 hex digits}-{splice PTS, 9 hex digits}` (time_signal: the segmentation
    /// type as well, since one section may carry a start and an end of the same event). The same stream gives the
    /// same IDs on every origin and on every push of a segment.
    public var markerId: String {
        var id = MarkerBook.inbandIdPrefix + Self.hex(UInt64(cue.eventId), digits: 8) + "-" + Self.hex(splicePTS, digits: 9)
        if let type = cue.segmentationTypeId { id += "-" + Self.hex(UInt64(type), digits: 2) }
        return id
    }

    static func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}

/// What applying an in-band cue did to the book.
public enum InbandCueOutcome: Sendable, Hashable {
    /// A marker was made (out, command, or an in with no open marker).
    case created(String)
    /// The open marker of the event was closed (END-DATE, DURATION and/or SCTE35-IN added).
    case closed(String)
    /// A marker not yet started was withdrawn (its ID retired), or an open one ended at the cancel.
    case cancelled(String)
    /// Nothing changed: a repeat of a cue already applied, a cancel of an unknown event, or a full book.
    case unchanged
}

extension MarkerBook {
    /// Applies an in-band cue. Repeats (the same cue in every rendition, in the segments before the splice, a
    /// segment pushed again) change nothing: the ID comes from the cue, and an out whose event already has an open
    /// marker is a repeat.
    /// - out: a marker with SCTE35-OUT, starting at the splice; DURATION from a break_duration with auto_return,
    ///   else PLANNED-DURATION from break_duration or segmentation_duration.
    /// - in: closes the newest open in-band marker of the event (or, for a segmentation end, of the matching start
    ///   type) at the splice: SCTE35-IN, END-DATE and DURATION unless it has a DURATION already. With no open marker,
    ///   a marker of its own with SCTE35-IN and DURATION=0.
    /// - command: a marker with SCTE35-CMD, DURATION = the segmentation duration, else 0.
    /// - cancel: withdraws the event's marker while it has not started at the cancel (its ID is retired), or ends
    ///   an open one there.
    /// - Parameter now: shared-clock time, ms.
    public mutating func apply(_ inband: InbandCue, nowMilliseconds now: Int64) -> InbandCueOutcome {
        let cue = inband.cue
        let at = inband.spliceMilliseconds
        let sameEvent = { (marker: Marker) in marker.source == .inband && marker.spliceEventId == cue.eventId }
        // Open: an out-point of the event with no cue-in yet, whose range has no end (END-DATE, DURATION) or ends
        // after this cue (a cue-in: at it or after). An auto-return break that has ended is not open: the event id
        // may start another break.
        let open = markers.values.filter { marker in
            guard sameEvent(marker), marker.scte35Out != nil, marker.scte35In == nil else { return false }
            guard let end = marker.knownEndMilliseconds else { return true }
            return end > at || (cue.kind == .in && end == at)
        }.sorted { ($0.startDate, $0.id) < ($1.startDate, $1.id) }
        if cue.cancelled {
            guard let marker = open.last else { return .unchanged }
            if marker.startDate.millisecondsSince1970 > at {
                markers[marker.id] = nil
                retiredIds[marker.id] = now
                return .cancelled(marker.id)
            }
            return end(marker, at: at, section: nil, now: now).map { .cancelled($0) } ?? .unchanged
        }
        let id = inband.markerId
        guard markers[id] == nil, retiredIds[id] == nil else { return .unchanged }
        switch cue.kind {
        case .out:
            guard open.isEmpty else { return .unchanged }  // the out repeated with another time (immediate cues)
            var range = DateRange(id: id, startDate: ProgramDateTime(millisecondsSince1970: at))
            if let ticks = cue.duration {
                let seconds = Double(ticks) / 90_000
                if cue.autoReturn, cue.segmentationTypeId == nil {
                    range.duration = seconds
                } else {
                    range.plannedDuration = seconds
                }
            }
            range.scte35Out = inband.section
            return create(range, cue: cue, now: now)
        case .in:
            let candidates =
                open.isEmpty
                ? markers.values.filter { marker in
                    guard let type = cue.segmentationTypeId, type > 0 else { return false }
                    return marker.source == .inband && marker.segmentationTypeId == type - 1
                        && marker.scte35In == nil && marker.scte35Out != nil
                }.sorted { ($0.startDate, $0.id) < ($1.startDate, $1.id) }
                : open
            if let marker = candidates.last(where: { $0.startDate.millisecondsSince1970 <= at }) {
                return end(marker, at: at, section: inband.section, now: now).map { .closed($0) } ?? .unchanged
            }
            // An in already applied to its marker, repeated in later segments with another time: nothing.
            if markers.values.contains(where: { sameEvent($0) && $0.scte35In != nil && $0.scte35Out != nil }) {
                return .unchanged
            }
            var range = DateRange(id: id, startDate: ProgramDateTime(millisecondsSince1970: at))
            range.duration = 0  // a point: it leaves the window like any ended marker
            range.scte35In = inband.section
            return create(range, cue: cue, now: now)
        case .command:
            if markers.values.contains(where: { sameEvent($0) && $0.scte35Command == inband.section }) {
                return .unchanged
            }
            var range = DateRange(id: id, startDate: ProgramDateTime(millisecondsSince1970: at))
            // The segment's length when given, else a point: never an open range that stays listed for good.
            range.duration = cue.duration.map { Double($0) / 90_000 } ?? 0
            range.scte35Command = inband.section
            return create(range, cue: cue, now: now)
        }
    }

    private mutating func create(_ range: DateRange, cue: SpliceCue, now: Int64) -> InbandCueOutcome {
        guard markers.count < Self.maximumMarkers else { return .unchanged }
        let request = MarkerRequest(
            id: range.id, startDate: range.startDate, duration: range.duration,
            plannedDuration: range.plannedDuration,
            scte35: .raw(command: range.scte35Command, out: range.scte35Out, in: range.scte35In))
        var marker = Marker(dateRange: range, request: request, createdMilliseconds: now, updatedMilliseconds: now)
        marker.spliceEventId = cue.eventId
        marker.source = .inband
        marker.segmentationTypeId = cue.segmentationTypeId
        guard (try? Self.validate(marker)) != nil else { return .unchanged }
        markers[range.id] = marker
        return .created(range.id)
    }

    /// Ends an open marker at `at` (not before its start): END-DATE and DURATION unless it has a DURATION or
    /// END-DATE already; SCTE35-IN when `section` is given. Nil when nothing changed.
    private mutating func end(_ marker: Marker, at: Int64, section: [UInt8]?, now: Int64) -> String? {
        var changed = marker
        if marker.duration == nil, marker.endDate == nil {
            let end = max(at, marker.startDate.millisecondsSince1970)
            changed.endDate = ProgramDateTime(millisecondsSince1970: end)
            changed.duration = Double(end - marker.startDate.millisecondsSince1970) / 1000
            if (try? Self.validate(changed)) == nil { changed.duration = nil }
        }
        if let section { changed.scte35In = section }
        guard changed != marker, (try? Self.validate(changed)) != nil else { return nil }
        changed.updatedMilliseconds = now
        markers[marker.id] = changed
        return marker.id
    }
}
