import Logging

extension Origin {
    /// The marker store of a channel, loaded from its journal under the configured data directory.
    static func markerStore(_ channel: String, _ configuration: OriginConfiguration, _ logger: Logger) -> MarkerStore {
        MarkerStore.open(channel: channel, dataDirectory: configuration.dataDirectory, logger: logger)
    }
}
