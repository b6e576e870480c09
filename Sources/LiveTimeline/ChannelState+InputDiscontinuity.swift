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
