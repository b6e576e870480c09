import HLSPlaylist
import Markers

extension ChannelState {
    /// Marks every rendition for re-rendering: the marker book changed, and every rendition shows the same markers.
    package mutating func markersChanged() {
        for rendition in renditions { revisions[rendition.name, default: 0] += 1 }
    }

    /// The rendition's playlist with the channel's markers overlaid.
    func markedPlaylist(_ rendition: RenditionState, markers: MarkerBook) -> MediaPlaylist {
        let overlay = markers.overlay(entries: rendition.window.entries, legacyCueTags: configuration.legacyCueTags)
        return rendition.window.playlist(
            independentSegments: rendition.allSegmentsIndependent, dateRanges: overlay.dateRanges,
            extraTags: overlay.extraTags, decoration: decoration(for: rendition))
    }

    /// PDT of the oldest listed entry over all renditions (ms), nil while no rendition lists anything.
    package var markerWindowStartMilliseconds: Int64? {
        renditions.compactMap { $0.window.entries.first?.programDateTimeMilliseconds }.min()
    }
}
