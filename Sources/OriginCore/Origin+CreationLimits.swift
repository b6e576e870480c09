public import LiveTimeline

extension Origin {
    /// Why a stream for `channel`/`rendition` would create a channel or rendition the limits have no room for
    /// (`limits.channels`, `limits.renditionsPerChannel`); nil when there is room or nothing would be created. For an
    /// input that admits a long-lived stream before its first segment (an SRT caller, refused in the handshake).
    public func creationRefusal(channel name: String, rendition: String) -> IngestError? {
        let configuration = self.configuration
        guard configuration.ingest.autoCreate else { return nil }
        let existing = self.channel(named: name)
        if let existing, existing.configuration.source != .push { return nil }
        return creationRefusal(channel: name, existing: existing, rendition: rendition, limits: configuration.limits)
    }

    /// The limits check itself: a push refused before its media is probed, an SRT caller in its handshake (the
    /// creation checks again, exactly).
    func creationRefusal(
        channel name: String, existing: Channel?, rendition: String, limits: OriginLimits
    ) -> IngestError? {
        if let existing {
            guard existing.renditionCount >= limits.renditionsPerChannel, !existing.hasRendition(rendition) else {
                return nil
            }
            return .renditionLimit(name, rendition, limit: limits.renditionsPerChannel)
        }
        let full = directory.read { $0.byName.count + $0.reserved.count >= limits.channels }
        return full ? .channelLimit(name, limit: limits.channels) : nil
    }
}
