package import LiveTimeline
import SharedBytes

/// The HLS output of a channel: each publish renders the changed playlists (`HLSPackager.render`) into the next
/// `ChannelSnapshot` and keeps it as `latest`, the one copy the HTTP routes serve (`Channel.snapshot`). It renders
/// outside its lock, which is held only to copy or swap one reference, so a GET never waits for a render; publishes
/// are serialized by the caller (`Channel.publish`, under the channel's state lock).
package final class HLSOutput: TimelineOutput {
    private let current: RankedMutex<ChannelSnapshot>

    /// An output that has rendered nothing yet: version 0, no renditions.
    package init(channel: String) {
        current = RankedMutex(
            ChannelSnapshot(
                name: channel, version: 0, multivariantPlaylist: nil, multivariantModifiedMilliseconds: 0,
                renditions: [:]),
            rank: .channelPublished)
    }

    /// The snapshot of the last publish.
    package var latest: ChannelSnapshot { current.withLock { $0 } }

    /// Renders `timeline` over the last snapshot and swaps the result in when its version is newer than the one held
    /// (two takes of the lock, none during the render).
    /// - Returns: the snapshot replaced and the new one.
    @discardableResult
    package func render(
        _ timeline: ChannelState, context: TimelineOutputContext
    ) -> (previous: ChannelSnapshot, latest: ChannelSnapshot) {
        let previous = latest
        let next = HLSPackager.render(
            timeline, name: context.channel, previous: previous, nowMilliseconds: context.nowMilliseconds,
            markers: context.markers)
        // Swapped only over an older snapshot: a publisher that rendered from an older timeline never replaces a
        // newer one (publishes are serialized today; this keeps `latest` monotonic if they ever are not).
        current.withLock { if next.version > $0.version { $0 = next } }
        return (previous, next)
    }

    package func publish(_ timeline: ChannelState, context: TimelineOutputContext) {
        render(timeline, context: context)
    }
}
