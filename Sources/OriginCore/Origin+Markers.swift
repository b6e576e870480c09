import Logging
import Markers

extension Origin {
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
