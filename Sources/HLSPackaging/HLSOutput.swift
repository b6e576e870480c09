import LiveTimeline
import Synchronization

/// The HLS output of a channel: each publish renders the changed playlists (`HLSPackager.render`) into the next
/// `ChannelSnapshot` and keeps it as `latest`. The channel reads `latest` once per publish and serves from its own
/// copy; the HTTP fast path never goes through `TimelineOutput`.
package final class HLSOutput: TimelineOutput {
    private let current: Mutex<ChannelSnapshot>

    /// An output that has rendered nothing yet: version 0, no renditions.
    package init(channel: String) {
        current = Mutex(
            ChannelSnapshot(
                name: channel, version: 0, multivariantPlaylist: nil, multivariantModifiedMilliseconds: 0,
                renditions: [:]))
    }

    /// The snapshot of the last publish.
    package var latest: ChannelSnapshot { current.withLock { $0 } }

    package func publish(_ timeline: ChannelState, context: TimelineOutputContext) {
        current.withLock { previous in
            previous = HLSPackager.render(
                timeline, name: context.channel, previous: previous, nowMilliseconds: context.nowMilliseconds,
                markers: context.markers)
        }
    }
}
