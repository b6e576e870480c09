public import LiveTimeline
public import HLSPlaylist

/// The Low-Latency delivery directives of a media playlist request (`_HLS_msn`, `_HLS_part`, `_HLS_skip`; RFC
/// 8216bis section 6.2.5), and what to do with them against a rendition's published state.
public struct DeliveryDirectives: Sendable, Hashable {
    /// `_HLS_msn`.
    public var msn: UInt64?
    /// `_HLS_part`.
    public var part: Int?
    /// `_HLS_skip`.
    public var skip: SkipRequest?

    /// Reads the directives from a query; nil when it has none. Throws the 400 reason for a malformed one
    /// (`_HLS_part` without `_HLS_msn`, a value that is not a decimal integer, `_HLS_skip` not YES or v2).
    public init?(query: [(name: String, value: String?)]) throws(DirectiveError) {
        var msn: UInt64?
        var part: Int?
        var skip: SkipRequest?
        var present = false
        for (name, value) in query {
            switch name {
            case "_HLS_msn":
                guard let number = Self.decimal(value) else {
                    throw DirectiveError("_HLS_msn must be a decimal integer")
                }
                msn = number
            case "_HLS_part":
                guard let number = Self.decimal(value), number <= UInt64(Int.max) else {
                    throw DirectiveError("_HLS_part must be a decimal integer")
                }
                part = Int(number)
            case "_HLS_skip":
                guard let value, let request = SkipRequest(rawValue: value) else {
                    throw DirectiveError("_HLS_skip must be YES or v2")
                }
                skip = request
            default:
                continue
            }
            present = true
        }
        guard present else { return nil }
        if part != nil, msn == nil { throw DirectiveError("_HLS_part without _HLS_msn") }
        self.msn = msn
        self.part = part
        self.skip = skip
    }

    /// A decimal-integer (`[0-9]+`, fits in UInt64), or nil.
    private static func decimal(_ text: String?) -> UInt64? {
        guard let text, !text.isEmpty, text.utf8.count <= 20,
            text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return nil }
        return UInt64(text)
    }

    /// What to do with the request against the rendition's newest snapshot.
    ///
    /// A rendition without Low-Latency state (or an ended one) answers now, the skip dropped. Otherwise, with "last"
    /// the rendition's last part (else its last listed segment, part 0): `_HLS_msn` more than 2 beyond last.msn, or
    /// `_HLS_part` above `maximumPartsPerSegment`, is refused (RFC 8216bis 6.2.5.2); a satisfied request answers now;
    /// any other waits (see ``DirectiveDecision/wait(until:wholeSegment:skip:)`` for the positions). The skip is kept
    /// only when the rendition has that delta update (`skipPlaylist` / `skipPlaylistV2`).
    public func decide(against rendition: RenditionSnapshot) -> DirectiveDecision {
        guard let lowLatency = rendition.lowLatency else { return .answerNow(skip: nil) }
        let skip: SkipRequest? =
            switch self.skip {
            case .segments: lowLatency.skipPlaylist == nil ? nil : .segments
            case .segmentsAndDateRanges: lowLatency.skipPlaylistV2 == nil ? nil : .segmentsAndDateRanges
            case nil: nil
            }
        guard let msn else { return .answerNow(skip: skip) }
        let lastCompleteMSN = rendition.entries.last?.msn
        let lastMSN = lowLatency.lastPart?.msn ?? lastCompleteMSN
        if let lastMSN, msn > lastMSN &+ 2, lastMSN < UInt64.max - 2 {
            return .refuse("_HLS_msn \(msn) is more than 2 beyond the last media sequence number \(lastMSN)")
        }
        if lastMSN == nil, msn > 2 {
            return .refuse("_HLS_msn \(msn) is more than 2 beyond a rendition with no segment yet")
        }
        let segmentComplete = lastCompleteMSN.map { msn <= $0 } ?? false
        guard let part else {
            if segmentComplete { return .answerNow(skip: skip) }
            return .wait(until: PartPosition(msn: msn, part: 0), wholeSegment: true, skip: skip)
        }
        if part > lowLatency.maximumPartsPerSegment {
            return .refuse(
                "_HLS_part \(part) is beyond the \(lowLatency.maximumPartsPerSegment) parts a segment can have")
        }
        var position = PartPosition(msn: msn, part: part)
        if segmentComplete {
            // RFC 8216bis 6.2.5.2: a part index beyond the last part of a complete segment means part 0 of the next.
            let partCount = lowLatency.parts[msn]?.count ?? 0
            if part < partCount { return .answerNow(skip: skip) }
            position = PartPosition(msn: msn + 1, part: 0)
        }
        // A part of a complete segment is in the past even when its parts are not known (they left the playlist,
        // or the segment was restored after an origin restart, which keeps no parts): never block on it.
        if let lastCompleteMSN, position.msn <= lastCompleteMSN { return .answerNow(skip: skip) }
        if let lastPart = lowLatency.lastPart, position <= lastPart { return .answerNow(skip: skip) }
        return .wait(until: position, wholeSegment: false, skip: skip)
    }
}

/// A malformed or impossible delivery directive: answered 400 with `message`.
public struct DirectiveError: Error, Sendable, Hashable {
    public let message: String
    public init(_ message: String) { self.message = message }
}

/// What a playlist request with delivery directives gets.
public enum DirectiveDecision: Sendable, Hashable {
    /// Answer now with the current playlist (its delta update when `skip` is set and one exists).
    case answerNow(skip: SkipRequest?)
    /// Block until the rendition reaches `until`, then answer; 503 after 3 target durations. The positions are
    /// normalized so that equal requests wait on equal values:
    /// - `wholeSegment` true (`_HLS_msn` alone): `until` is `(M, 0)`; released once segment M is complete (its URI
    ///   line listed: the last listed entry's MSN >= M).
    /// - `wholeSegment` false: released once the rendition's `lastPart >= until` (PartPosition order). A request
    ///   for a part beyond the last part of a complete segment M waits on `(M + 1, 0)` (RFC 8216bis 6.2.5.2); one
    ///   for a part of a segment still in progress waits on `(M, P)` as asked, which the order also releases when
    ///   M closes with fewer parts and part 0 of M + 1 is listed.
    case wait(until: PartPosition, wholeSegment: Bool, skip: SkipRequest?)
    /// 400 with this reason.
    case refuse(String)
}
