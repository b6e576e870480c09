extension ChannelState {
    /// The rendition's next segment starts a discontinuity, whatever its timestamps say: an input knows the stream
    /// broke (a continuous input's new session after a close, a stream change) even when the PTS happen to continue.
    /// - Returns: false for an unknown or never-started rendition (its first segment needs no discontinuity).
    package mutating func markInputDiscontinuity(rendition name: String) -> Bool {
        guard let position = renditions.firstIndex(where: { $0.name == name }), renditions[position].hasStarted else {
            return false
        }
        renditions[position].pendingDiscontinuity = true
        return true
    }
}

extension ChannelState {
    /// The rendition's feed dropped now: an input that holds a connection (an SRT caller) knows the encoder is gone
    /// when the connection ends, so the status shows it at once instead of when the next slot closes with a GAP.
    /// The GAP rules are unchanged: the next slot is a GAP unless a segment comes.
    /// - Returns: false for an unknown rendition or a feed that was not live.
    package mutating func markFeedDropped(rendition name: String, nowMilliseconds now: Int64) -> Bool {
        guard let position = renditions.firstIndex(where: { $0.name == name }),
            case .live = renditions[position].feed
        else { return false }
        renditions[position].feed = .dropped(sinceMilliseconds: now)
        return true
    }
}
