public import Logging

/// A swift-log handler that writes each entry as one line of text (``JSONLogHandler``, ``JournalLogHandler``). What
/// such handlers share is here: the metadata-key subscript, and `log(event:)`, which merges the handler's metadata,
/// its metadata provider's and the call's (a later one wins a key) and hands the event to ``write(_:metadata:)``.
public protocol LineLogHandler: LogHandler {
    /// Writes the line for `event`, whose metadata are `metadata` (the handler's, the provider's and the call's,
    /// merged).
    func write(_ event: LogEvent, metadata: Logger.Metadata)
}

extension LineLogHandler {
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let explicit = event.metadata { merged.merge(explicit) { _, new in new } }
        write(event, metadata: merged)
    }
}
