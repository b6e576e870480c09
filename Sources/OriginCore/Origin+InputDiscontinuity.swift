import LiveTimeline
import SharedBytes

extension Origin {
    /// The next segment of `channel`/`rendition` starts a discontinuity (EXT-X-DISCONTINUITY), whatever its
    /// timestamps say: for an input that knows its stream broke (a continuous input's new session after a close, a
    /// stream change mid-stream). Nothing for an unknown channel or a rendition that never delivered.
    public func markDiscontinuity(channel: String, rendition: String) {
        self.channel(named: channel)?.markDiscontinuity(rendition: rendition)
    }

    /// The feed of `channel`/`rendition` dropped now (an SRT caller disconnected or went silent): the channel status
    /// says `dropped` at once; the next slot is a GAP unless a segment comes, as for any feed.
    public func markFeedDropped(channel: String, rendition: String) {
        self.channel(named: channel)?.markFeedDropped(rendition: rendition)
    }
}

extension Channel {
    func markDiscontinuity(rendition: String) {
        through(otherwise: (), forward: { $0.markDiscontinuity(rendition: rendition) }) {
            _ = state.withLock { $0.markInputDiscontinuity(rendition: rendition) }
        }
    }

    func markFeedDropped(rendition: String) {
        let now = clock.nowMilliseconds()
        through(otherwise: (), forward: { $0.markFeedDropped(rendition: rendition) }) {
            _ = state.withLock { $0.markFeedDropped(rendition: rendition, nowMilliseconds: now) }
        }
    }
}
