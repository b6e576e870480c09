import Logging
import Markers

extension Origin {
    /// The marker store of a channel, loaded from its journal under the configured data directory; with shared
    /// marker books (a database the group shares), the journal keeps the last book known and the shared one is read
    /// when the database answers (`sharedMarkersChanged`).
    static func markerStore(
        _ channel: String, _ configuration: OriginConfiguration, _ shared: (any SharedMarkerBooks)?, _ logger: Logger
    ) -> MarkerStore {
        MarkerStore.open(
            channel: channel, dataDirectory: configuration.dataDirectory, shared: shared, logger: logger)
    }

    /// The shared marker book of `channel` changed (nil: any may have, e.g. after the database came back): read
    /// it again and republish. Makes database round trips: call it off the event loops and the tick's thread.
    public func sharedMarkersChanged(channel: String?) {
        if let channel {
            self.channel(named: channel)?.refreshSharedMarkers()
        } else {
            for channel in allChannels { channel.refreshSharedMarkers() }
        }
    }
}
