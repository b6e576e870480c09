public import HLSPackaging

extension Channel {
    /// The channel as this origin judges it for Content Steering (`ChannelHealthReport.judge`): from its published
    /// snapshot (the newest render of a rendition is the newest slot), whether it is catching up, and its store
    /// (refusing writes, or nearly full).
    /// Takes no state lock.
    public func steeringHealth(nowMilliseconds now: Int64) -> ChannelHealthReport {
        let snapshot = self.snapshot
        let listed = snapshot.renditions.values.filter { $0.playlist != nil }
        let newest = listed.map(\.modifiedMilliseconds).max()
        let targetDuration = Int64(listed.map(\.targetDuration).max() ?? 0) * 1000
        return ChannelHealthReport.judge(
            sinceNewestSlotMilliseconds: newest.map { now - $0 }, targetDurationMilliseconds: targetDuration,
            catchingUp: snapshot.catchingUp, storageFailure: storageHealth.failure?.message,
            lowSpace: storageHealth.lowSpace)
    }
}
