public import LiveTimeline

extension Origin {
    /// Why a stream for `channel`/`rendition` would create a channel or rendition the limits have no room for
    /// (`limits.channels`, `limits.renditionsPerChannel`); nil when there is room or nothing would be created. For an
    /// input that admits a long-lived stream before its first segment (an SRT caller, refused in the handshake).
    public func creationRefusal(channel name: String, rendition: String) -> IngestError? {
        let configuration = self.configuration
        guard configuration.ingest.autoCreate else { return nil }
        let limits = configuration.limits
        if let existing = self.channel(named: name) {
            guard existing.configuration.source == .push, !existing.hasRendition(rendition),
                existing.renditionCount >= limits.renditionsPerChannel
            else { return nil }
            return .renditionLimit(name, rendition, limit: limits.renditionsPerChannel)
        }
        let full = directory.read { $0.byName.count + $0.reserved.count >= limits.channels }
        return full ? .channelLimit(name, limit: limits.channels) : nil
    }
}
