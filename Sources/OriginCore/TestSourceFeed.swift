import GapFiller
import IngestLoop
import Logging
import SharedBytes
import Synchronization
import TestSource

/// Feeds a `.testSource` channel from the built-in generator in real time, through the same ingest path a pushed
/// encoder uses (`Channel.acceptSegment`), so the ingest loop cannot tell the difference.
///
/// Fault injection: `dropFeed` stops delivering for a while (a simulated encoder outage: the segments of that
/// time are lost, so timestamps jump on return), `delayNext` holds the next segment back, `restartTimestamps`
/// makes the next segment start a new timeline (an encoder restart).
public final class TestSourceFeed: Sendable {
    private struct RenditionFeed: Sendable {
        let name: String
        var generator: TestStreamGenerator
        /// When the next segment is complete on the shared clock (its end), ms since the epoch.
        var nextDueMilliseconds: Int64
        var droppedUntilMilliseconds: Int64 = 0
        var extraDelayMilliseconds: Int64 = 0
    }

    private let channel: Channel
    private let clock: any OriginClock
    private let logger: Logger
    private let segmentMilliseconds: Int64
    private let feeds: Mutex<[RenditionFeed]>
    /// Start of the feed (ms) and how many occurrences of each scheduled outage were applied.
    private let startedMilliseconds: Int64
    private let outagesApplied: Mutex<[Int]>

    /// Creates generators for the channel's renditions; the first segments are due one segment duration from now.
    public init(channel: Channel, clock: any OriginClock, logger: Logger) throws {
        self.channel = channel
        self.clock = clock
        self.logger = logger
        let seconds = max(1, Int(channel.configuration.segmentDuration.rounded()))
        segmentMilliseconds = Int64(seconds) * 1000
        let firstDue = clock.nowMilliseconds() + segmentMilliseconds
        var feeds: [RenditionFeed] = []
        for rendition in channel.configuration.renditions {
            let profileName = rendition.testSourceProfile ?? rendition.name
            guard let profile = TestSourceProfile.named(profileName) else {
                let known = TestSourceProfile.builtIn.map(\.name).joined(separator: ", ")
                throw TestSourceFeedError(
                    message: "channel '\(channel.name)' rendition '\(rendition.name)': unknown test source profile "
                        + "'\(profileName)' (known: \(known))")
            }
            let generator = try TestStreamGenerator(profile: profile, segmentDuration: seconds, startPTS: 0)
            channel.setGapFillerSource(
                SlateGapFillerSource(
                    accessUnits: generator.slateAccessUnits, frameDurationTicks: profile.frameDurationTicks),
                rendition: rendition.name)
            feeds.append(RenditionFeed(name: rendition.name, generator: generator, nextDueMilliseconds: firstDue))
        }
        self.feeds = Mutex(feeds)
        startedMilliseconds = clock.nowMilliseconds()
        outagesApplied = Mutex(Array(repeating: 0, count: channel.configuration.scheduledOutages.count))
    }

    /// Starts the scheduled outages whose time has come.
    private func applyScheduledOutages(nowMilliseconds now: Int64) {
        let outages = channel.configuration.scheduledOutages
        guard !outages.isEmpty else { return }
        let due: [ScheduledOutage] = outagesApplied.withLock { applied in
            var due: [ScheduledOutage] = []
            for (index, outage) in outages.enumerated() {
                let occurrence = applied[index]
                if occurrence > 0, outage.everySeconds == nil { continue }
                let start =
                    startedMilliseconds
                    + Int64((outage.afterSeconds + Double(occurrence) * (outage.everySeconds ?? 0)) * 1000)
                if now >= start {
                    applied[index] += 1
                    due.append(outage)
                }
            }
            return due
        }
        for outage in due {
            let affected = (try? dropFeed(seconds: outage.durationSeconds, renditions: outage.renditions)) ?? []
            logger.notice(
                "scheduled outage starts",
                metadata: [
                    "hls.channel": "\(channel.name)", "seconds": "\(outage.durationSeconds)",
                    "renditions": "\(affected.joined(separator: ","))",
                ])
        }
    }

    /// Delivers every segment whose end has passed on the shared clock.
    public func tick() {
        let now = clock.nowMilliseconds()
        applyScheduledOutages(nowMilliseconds: now)
        // Generate under the lock (cheap remux), ingest outside it.
        let due: [(end: Int64, order: Int, name: String, bytes: [UInt8])] = feeds.withLock { feeds in
            var out: [(end: Int64, order: Int, name: String, bytes: [UInt8])] = []
            for i in feeds.indices {
                while feeds[i].nextDueMilliseconds + feeds[i].extraDelayMilliseconds <= now {
                    let segment = feeds[i].generator.nextSegment()
                    let end = feeds[i].nextDueMilliseconds
                    feeds[i].nextDueMilliseconds += segmentMilliseconds
                    feeds[i].extraDelayMilliseconds = 0
                    if end <= feeds[i].droppedUntilMilliseconds { continue }
                    out.append((end, i, feeds[i].name, segment.bytes))
                }
            }
            // A late tick (the process was descheduled or stopped) delivers several segments per rendition: deliver
            // them slot by slot across renditions, as encoders running side by side would, so every rendition's
            // first segment joins the same slot and the same media lands on the same MSN everywhere.
            return out.sorted { ($0.end, $0.order) < ($1.end, $1.order) }
        }
        for (_, _, rendition, bytes) in due {
            do {
                _ = try channel.acceptSegment(rendition: rendition, bytes: SharedBytes(bytes))
            } catch {
                logger.error(
                    "test source segment rejected",
                    metadata: ["hls.channel": "\(channel.name)", "hls.rendition": "\(rendition)", "reason": "\(error)"])
            }
        }
    }

    /// Stops feeding `renditions` (all when empty) for `seconds`.
    /// - Returns: the renditions affected.
    @discardableResult
    public func dropFeed(seconds: Double, renditions: [String] = []) throws -> [String] {
        let until = clock.nowMilliseconds() + Int64(seconds * 1000)
        return try feeds.withLock { feeds in
            let unknown = renditions.filter { name in !feeds.contains { $0.name == name } }
            if !unknown.isEmpty {
                throw TestSourceFeedError(message: "unknown rendition(s): \(unknown.joined(separator: ", "))")
            }
            var affected: [String] = []
            for i in feeds.indices where renditions.isEmpty || renditions.contains(feeds[i].name) {
                feeds[i].droppedUntilMilliseconds = max(feeds[i].droppedUntilMilliseconds, until)
                affected.append(feeds[i].name)
            }
            return affected
        }
    }

    /// Holds the next segment of every rendition back by `seconds` (a late delivery).
    public func delayNext(seconds: Double) {
        feeds.withLock { feeds in
            for i in feeds.indices { feeds[i].extraDelayMilliseconds = Int64(seconds * 1000) }
        }
    }

    /// Makes the next segment of every rendition start a new timeline at `startPTS` (an encoder restart).
    public func restartTimestamps(startPTS: Int64 = 0) {
        feeds.withLock { feeds in
            for i in feeds.indices { feeds[i].generator.restartTimestamps(startPTS: startPTS) }
        }
    }
}

/// A test source configuration or fault-injection request that cannot be carried out.
public struct TestSourceFeedError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
