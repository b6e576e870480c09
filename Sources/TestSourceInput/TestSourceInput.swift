public import LiveTimeline
public import Logging
public import OriginCore
public import ServiceLifecycle
import Synchronization
import TestSource

/// The built-in test source as an input beside HTTP push and peer repair: one `TestSourceFeed` per `.testSource`
/// channel of the origin, fed in real time. It follows the origin's channels (`follow()`): a reload's successor of a
/// channel gets a new feed, a removed channel's feed stops. A `Service` in the process's `ServiceGroup`
/// (`OriginService.services`).
public final class TestSourceInput: Sendable {
    private let origin: Origin
    private let logger: Logger
    /// The feeds by channel name, and the channel objects whose feed could not be built (logged once, not retried);
    /// held alone.
    private let feeds: Mutex<(byName: [String: TestSourceFeed], refused: [String: ObjectIdentifier])>
    /// Held through `follow()`, so the service's `tick()` and an admin route's `feed(channel:)` never both build a
    /// feed for the same channel object (lock order: `following` -> `feeds`, and -> `Channel.state` through a new
    /// feed's slate).
    private let following = Mutex<Void>(())

    /// Starts feeding the origin's `.testSource` channels; the first segments are due one segment duration from now.
    /// A channel whose fixtures cannot be read (`TestSourceError`, e.g. the resource bundle missing beside the
    /// binary) is logged and left unfed, like a reload's: the origin and its other channels run on.
    /// - Throws: `TestSourceFeedError` for a rendition that names no built-in profile.
    public init(origin: Origin, logger: Logger) throws {
        self.origin = origin
        self.logger = logger
        var feeds: [String: TestSourceFeed] = [:]
        var refused: [String: ObjectIdentifier] = [:]
        for channel in origin.allChannels where channel.configuration.source == .testSource {
            do {
                feeds[channel.name] = try TestSourceFeed(channel: channel, clock: origin.clock, logger: logger)
            } catch let error as TestSourceError {
                refused[channel.name] = ObjectIdentifier(channel)
                logger.error(
                    "test source channel not fed", metadata: ["hls.channel": "\(channel.name)", "reason": "\(error)"])
            }
        }
        self.feeds = Mutex((feeds, refused))
    }

    /// What the origin does to a `.testSource` channel it has built, before listing it (`Origin`'s `sourcePrepare`):
    /// registers each rendition's slate, so a slot that closes before the channel's feed exists is slate, not a
    /// plain GAP.
    @Sendable public static func prepare(_ channel: Channel) {
        guard channel.configuration.source == .testSource else { return }
        TestSourceFeed.registerSlates(on: channel)
    }

    /// What the origin checks before it builds a `.testSource` channel (at start and on reload, `Origin`'s
    /// `sourceCheck`): every rendition names a built-in profile.
    @Sendable public static func check(_ settings: ChannelConfiguration) throws {
        guard settings.source == .testSource else { return }
        for rendition in settings.renditions {
            _ = try TestSourceFeed.profile(of: rendition, channel: settings.name)
        }
    }

    /// The feed of a `.testSource` channel (fault injection: `dropFeed`, `delayNext`, `restartTimestamps`).
    public func feed(channel: String) -> TestSourceFeed? {
        follow()
        return feeds.withLock { $0.byName[channel] }
    }

    /// Delivers what is due on every feed, after following the origin's channels.
    public func tick() {
        follow()
        for feed in feeds.withLock({ Array($0.byName.values) }) { feed.tick() }
    }

    /// Takes the origin's channels as they are now: a `.testSource` channel object without a feed (a reload's
    /// successor, a channel added by a reload) gets one; a feed whose channel object left the origin stops.
    public func follow() {
        following.withLock { _ in followHere() }
    }

    private func followHere() {
        let channels = origin.allChannels.filter { $0.configuration.source == .testSource }
        let stale = feeds.withLock { feeds in
            let current = Set(channels.map(\.name))
            for name in feeds.byName.keys where !current.contains(name) { feeds.byName[name] = nil }
            return channels.filter {
                feeds.byName[$0.name]?.channel !== $0 && feeds.refused[$0.name] != ObjectIdentifier($0)
            }
        }
        guard !stale.isEmpty else { return }
        for channel in stale {
            do {
                let feed = try TestSourceFeed(channel: channel, clock: origin.clock, logger: logger)
                feeds.withLock { $0.byName[channel.name] = feed }
            } catch {
                feeds.withLock { $0.refused[channel.name] = ObjectIdentifier(channel) }
                logger.error(
                    "test source channel not fed", metadata: ["hls.channel": "\(channel.name)", "reason": "\(error)"])
            }
        }
    }

    /// How often the feeds deliver (as the origin's ingest loop ticks).
    static let interval: Duration = .milliseconds(50)
}

extension TestSourceInput: Service {
    /// Feeds the channels every `interval` until a graceful shutdown or cancellation.
    public func run() async {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                self.tick()
                try? await Task.sleep(for: Self.interval)
            }
        }
    }
}
