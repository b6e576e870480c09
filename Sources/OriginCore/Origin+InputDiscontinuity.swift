import LiveTimeline
import SharedBytes

extension Origin {
    /// The next segment of `channel`/`rendition` starts a discontinuity (EXT-X-DISCONTINUITY), whatever its
    /// timestamps say: for an input that knows its stream broke (a continuous input's new session after a close, a
    /// stream change mid-stream). Nothing for an unknown channel or a rendition that never delivered.
    public func markDiscontinuity(channel: String, rendition: String) {
        self.channel(named: channel)?.markDiscontinuity(rendition: rendition)
    }
}

extension Channel {
    func markDiscontinuity(rendition: String) {
        through(otherwise: (), forward: { $0.markDiscontinuity(rendition: rendition) }) {
            _ = state.withLock { $0.markInputDiscontinuity(rendition: rendition) }
        }
    }
}
