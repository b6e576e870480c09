package import MediaProbe

/// Why a push was refused: a reason callers can switch on (the HTTP layer maps it to a status) and a message that
/// says what is wrong.
public struct IngestError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kinds of refusal.
    public enum Reason: String, Sendable, Hashable {
        /// A channel or rendition name outside `OriginNames`.
        case invalidName
        /// The channel does not exist and auto-create is off.
        case unknownChannel
        /// The rendition does not exist and auto-create is off.
        case unknownRendition
        /// The channel is fed by the built-in test source.
        case notPushed
        /// The body is larger than the configured segment limit.
        case tooLarge
        /// The body is not a recognised media container (or empty).
        case notMedia
        /// Media the origin cannot take: unprobeable, too long for the target duration, no init section yet, ...
        case unprocessable
        /// The segment's slot would start more than one target duration ahead of the clock.
        case aheadOfClock
        /// The segment does not continue the rendition's timeline and runs ahead of the clock (a second encoder).
        case timelineConflict
        /// A playlist hint that does not parse.
        case invalidHint
        /// A playlist hint larger than `Origin.maxHintBytes`, not read.
        case hintTooLarge
        /// The durable store could not take the bytes (disk full, I/O error): nothing was accepted, the slot will
        /// close as a GAP if the push is not repeated in time.
        case notPersisted
        /// The segment's kind contradicts the rendition's role (video pushed to a subtitle rendition, or the
        /// reverse).
        case roleMismatch
        /// A subtitle segment's pushed `X-TIMESTAMP-MAP` lies more than a target duration outside the media
        /// timeline its rendition follows.
        case outOfRange
        /// A second push to a Low-Latency rendition while its current segment is still arriving.
        case concurrentPush
        /// A streamed Low-Latency push ran past the target duration: the segment was closed at the last part.
        case segmentTooLong
        /// A streamed Low-Latency push delivered no byte for too long: its segment was closed at the last part and
        /// the rest of the body discarded.
        case pushStalled
        /// The segment is the rendition's newest entry already (an encoder repeating a push, or the encoder's push
        /// arriving after the slot was repaired from a peer): nothing changed, and the push is not an error.
        case alreadyListed
        /// The channel is catching up with its peers after a restart (the slots missed while the origin was down
        /// are being repaired): the encoder's push would take the oldest missing slot. Retry in a second.
        case catchingUp
        /// The channel's configuration is being reloaded (the channel re-opens from its journal and store with the
        /// new settings, in milliseconds): retry.
        case reloading
        /// The push would create a channel beyond `limits.channels`.
        case channelLimit
        /// The push would create a rendition beyond `limits.renditionsPerChannel`.
        case renditionLimit
        /// The channel holds `limits.channelMemoryBytes` in memory already (its window, retained and held segments).
        case memoryLimit
        /// The channel's durable store holds `limits.channelDiskBytes` already, with no time-shift left to evict.
        case diskLimit
        /// The push would create a channel beyond `limits.autoCreationsPerMinute`: retry after `retryAfterSeconds`.
        case creationRate
        /// A duration, timescale or timestamp no stream carries: a segment or part longer than
        /// `ChannelState.maximumSegmentSeconds`, a decode time that goes back or jumps by ages. The value is named
        /// in the message; nothing was listed and the target duration was not fixed.
        case implausibleTiming
    }

    /// Why the push was refused.
    public let reason: Reason
    /// Human-readable reason, sent as the response body.
    public let message: String
    /// When a retry may succeed, in seconds (`Retry-After`); nil when the refusal says nothing about it.
    public let retryAfterSeconds: Int?

    public init(_ reason: Reason, _ message: String, retryAfterSeconds: Int? = nil) {
        self.reason = reason
        self.message = message
        self.retryAfterSeconds = retryAfterSeconds
    }

    public var description: String { "\(reason.rawValue): \(message)" }

    package static func unknownChannel(_ name: String) -> IngestError {
        IngestError(.unknownChannel, "unknown channel '\(name)' (auto-create is off)")
    }
    package static func unknownRendition(_ channel: String, _ name: String) -> IngestError {
        IngestError(.unknownRendition, "unknown rendition '\(name)' of channel '\(channel)' (auto-create is off)")
    }
    package static func invalidName(_ what: String, _ name: String) -> IngestError {
        IngestError(.invalidName, "invalid \(what) name '\(name)': use \(OriginNames.rule)")
    }
    package static func notMedia(_ detail: String) -> IngestError {
        IngestError(.notMedia, "not a media segment: \(detail)")
    }
    package static func unprocessable(_ detail: String) -> IngestError {
        IngestError(.unprocessable, detail)
    }
    package static func tooLarge(_ size: Int, limit: Int) -> IngestError {
        IngestError(.tooLarge, "body of \(size) bytes exceeds the limit of \(limit) bytes")
    }
    package static func notPushed(_ channel: String) -> IngestError {
        IngestError(.notPushed, "channel '\(channel)' is fed by the built-in test source and takes no pushes")
    }
    package static func notPersisted(_ what: String, _ error: any Error) -> IngestError {
        IngestError(.notPersisted, "\(what) not accepted: the durable store could not write it: \(error)")
    }
    package static func implausibleTiming(_ detail: String) -> IngestError {
        IngestError(.implausibleTiming, detail)
    }
    /// A probe's refusal: `implausibleTiming` for a duration or time no stream has, else `unprocessable`.
    package static func probeFailed(_ what: String, _ error: ProbeError) -> IngestError {
        IngestError(error.isImplausibleTiming ? .implausibleTiming : .unprocessable, "\(what): \(error)")
    }
    package static func invalidHint(_ error: any Error) -> IngestError {
        IngestError(.invalidHint, "invalid playlist hint: \(error)")
    }
}
