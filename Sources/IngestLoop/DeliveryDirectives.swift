import HLSPlaylist

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
        fatalError("contract: built by the playlist model step")
    }

    /// What to do with the request against the rendition's newest snapshot.
    public func decide(against rendition: RenditionSnapshot) -> DirectiveDecision {
        fatalError("contract: built by the playlist model step")
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
    /// Block until the rendition's last part reaches `position` (`part` nil: until segment `msn` is complete),
    /// then answer; 503 after 3 target durations.
    case wait(until: PartPosition, wholeSegment: Bool, skip: SkipRequest?)
    /// 400 with this reason.
    case refuse(String)
}
