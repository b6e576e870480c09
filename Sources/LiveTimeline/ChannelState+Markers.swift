import HLSPlaylist
import Markers

extension ChannelState {
    /// Marks every rendition for re-rendering: the marker book changed, and every rendition shows the same markers.
    package mutating func markersChanged() {
        for rendition in renditions { revisions[rendition.name, default: 0] += 1 }
    }

    /// PDT of the oldest listed entry over all renditions (ms), nil while no rendition lists anything.
    package var markerWindowStartMilliseconds: Int64? {
        renditions.compactMap { $0.window.entries.first?.programDateTimeMilliseconds }.min()
    }
}
