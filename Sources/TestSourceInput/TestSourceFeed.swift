import GapFiller
import LiveTimeline
public import Logging
public import OriginCore
import SharedBytes
import Synchronization
import TestSource

/// Feeds one `.testSource` channel object from the built-in generator in real time, through the media-level entry
/// points a pushed encoder's segments reach (`Channel.acceptSegment`, `Channel.beginStreamingPush`), so the ingest
/// loop cannot tell the difference. `TestSourceInput` keeps one per channel.
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

    /// The channel object it feeds (a reload's successor gets a feed of its own).
    let channel: Channel
    private let clock: any OriginClock
    private let logger: Logger
    private let segmentMilliseconds: Int64
    private let feeds: Mutex<[RenditionFeed]>
    /// Low-Latency channels: the segment each rendition is streaming, by rendition index. Taken only by `tick`, held
    /// while the frames are pushed (lock order: `TestSourceFeed.streaming` -> `TestSourceFeed.feeds`, and ->
    /// `Channel.state` through the push).
    private let streaming: Mutex<[StreamingSegment?]>
    /// Start of the feed (ms) and how many occurrences of each scheduled outage were applied.
    private let startedMilliseconds: Int64
    private let outagesApplied: Mutex<[Int]>

    /// Creates generators for the channel's renditions; the first segments are due one segment duration from now.
    /// - Throws: `TestSourceFeedError` for a rendition that names no built-in profile (`check(_:)`).
    public init(channel: Channel, clock: any OriginClock, logger: Logger) throws {
        self.channel = channel
        self.clock = clock
        self.logger = logger
        let seconds = max(1, Int(channel.configuration.segmentDuration.rounded()))
        segmentMilliseconds = Int64(seconds) * 1000
        let firstDue = clock.nowMilliseconds() + segmentMilliseconds
        var feeds: [RenditionFeed] = []
        for rendition in channel.configuration.renditions {
            let profile = try Self.profile(of: rendition, channel: channel.name)
            let generator = try TestStreamGenerator(profile: profile, segmentDuration: seconds, startPTS: 0)
            channel.setGapFillerSource(Self.slate(generator, profile), rendition: rendition.name)
            feeds.append(RenditionFeed(name: rendition.name, generator: generator, nextDueMilliseconds: firstDue))
        }
        self.streaming = Mutex(Array(repeating: nil, count: feeds.count))
        self.feeds = Mutex(feeds)
        startedMilliseconds = clock.nowMilliseconds()
        outagesApplied = Mutex(Array(repeating: 0, count: channel.configuration.scheduledOutages.count))
    }

    /// Registers each rendition's slate as its gap filler (`TestSourceInput.prepare`); a rendition naming no
    /// built-in profile is left as it is (`check(_:)` refuses such a channel before it is built).
    static func registerSlates(on channel: Channel) {
        let seconds = max(1, Int(channel.configuration.segmentDuration.rounded()))
        for rendition in channel.configuration.renditions {
            guard let profile = try? profile(of: rendition, channel: channel.name),
                let generator = try? TestStreamGenerator(profile: profile, segmentDuration: seconds, startPTS: 0)
            else { continue }
            channel.setGapFillerSource(slate(generator, profile), rendition: rendition.name)
        }
    }

    private static func slate(_ generator: TestStreamGenerator, _ profile: TestSourceProfile) -> SlateGapFillerSource {
        SlateGapFillerSource(accessUnits: generator.slateAccessUnits, frameDurationTicks: profile.frameDurationTicks)
    }

    /// The built-in profile a rendition names (`testSourceProfile`, else its name).
    static func profile(of rendition: RenditionConfiguration, channel: String) throws -> TestSourceProfile {
        let profileName = rendition.testSourceProfile ?? rendition.name
        guard let profile = TestSourceProfile.named(profileName) else {
            let known = TestSourceProfile.builtIn.map(\.name).joined(separator: ", ")
            throw TestSourceFeedError(
                message: "channel '\(channel)' rendition '\(rendition.name)': unknown test source profile "
                    + "'\(profileName)' (known: \(known))")
        }
        return profile
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

    /// Delivers every segment whose end has passed on the shared clock; in a Low-Latency channel, streams each
    /// segment from its slot's start, frame by frame as the clock reaches them.
    public func tick() {
        let now = clock.nowMilliseconds()
        applyScheduledOutages(nowMilliseconds: now)
        if channel.configuration.lowLatency != nil {
            stream(nowMilliseconds: now)
            return
        }
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

    /// Pushes what the clock has reached of each rendition's segment, slot by slot across renditions (a late tick
    /// streams several segments per rendition, in the order encoders running side by side would).
    private func stream(nowMilliseconds now: Int64) {
        streaming.withLock { segments in
            var finished = true
            while finished {
                finished = false
                for index in segments.indices {
                    if segments[index] == nil { segments[index] = beginSegment(index, nowMilliseconds: now) }
                    guard var segment = segments[index] else { continue }
                    advance(&segment, index: index, nowMilliseconds: now)
                    if now >= segment.endMilliseconds {
                        finish(segment)
                        segments[index] = nil
                        finished = true
                    } else {
                        segments[index] = segment
                    }
                }
            }
        }
    }

    /// The rendition's next segment, generated when its slot starts (nil before); pushed unless the feed is dropped
    /// for all of it.
    private func beginSegment(_ index: Int, nowMilliseconds now: Int64) -> StreamingSegment? {
        let next = feeds.withLock { feeds -> (String, GeneratedSegment, Int64, Int64, Bool)? in
            let delay = feeds[index].extraDelayMilliseconds
            let start = feeds[index].nextDueMilliseconds - segmentMilliseconds + delay
            guard start <= now else { return nil }
            let end = feeds[index].nextDueMilliseconds + delay
            feeds[index].nextDueMilliseconds += segmentMilliseconds
            feeds[index].extraDelayMilliseconds = 0
            let dropped = end <= feeds[index].droppedUntilMilliseconds
            return (feeds[index].name, feeds[index].generator.nextSegment(), start, end, dropped)
        }
        guard let (rendition, generated, start, end, dropped) = next else { return nil }
        let push =
            dropped ? nil : channel.beginStreamingPush(rendition: rendition, fragmented: false)
        if !dropped, push == nil {
            logger.error(
                "test source segment not streamed",
                metadata: ["hls.channel": "\(channel.name)", "hls.rendition": "\(rendition)"])
        }
        return StreamingSegment(
            rendition: rendition, push: push, bytes: SharedBytes(generated.bytes),
            frameEnds: Self.videoFrameEnds(generated.bytes), startMilliseconds: start, endMilliseconds: end)
    }

    /// Pushes the frames whose time has passed: frame k once k + 1 frame durations from the slot's start passed.
    /// While the feed is dropped nothing is pushed; a drop that outlasts the segment abandons it (a short segment).
    private func advance(_ segment: inout StreamingSegment, index: Int, nowMilliseconds now: Int64) {
        guard let push = segment.push else { return }
        let droppedUntil = feeds.withLock { $0[index].droppedUntilMilliseconds }
        if now < droppedUntil {
            if segment.endMilliseconds <= droppedUntil {
                push.abandon()
                segment.push = nil
            }
            return
        }
        let frames = segment.frameEnds.count
        let elapsed = now - segment.startMilliseconds
        let duration = max(1, segment.endMilliseconds - segment.startMilliseconds)
        let due = min(frames, Int(max(0, elapsed) * Int64(frames) / duration))
        guard due > segment.fedFrames else { return }
        let from = segment.fedFrames == 0 ? 0 : segment.frameEnds[segment.fedFrames - 1]
        let to = segment.frameEnds[due - 1]
        segment.fedFrames = due
        let refusal = segment.bytes.withUnsafeBytes { raw in
            push.receive(UnsafeRawBufferPointer(rebasing: raw[from..<to]))
        }
        if let refusal {
            segment.push = nil
            logger.error(
                "test source segment rejected",
                metadata: [
                    "hls.channel": "\(channel.name)", "hls.rendition": "\(segment.rendition)", "reason": "\(refusal)",
                ])
        }
    }

    /// The segment's slot ended: the rest of its bytes are pushed and the segment closed.
    private func finish(_ segment: StreamingSegment) {
        guard let push = segment.push else { return }
        let from = segment.fedFrames == 0 ? 0 : segment.frameEnds[segment.fedFrames - 1]
        do throws(IngestError) {
            if from < segment.bytes.count {
                let refusal = segment.bytes.withUnsafeBytes { raw in
                    push.receive(UnsafeRawBufferPointer(rebasing: raw[from...]))
                }
                if let refusal { throw refusal }
            }
            _ = try push.finish()
        } catch {
            logger.error(
                "test source segment rejected",
                metadata: [
                    "hls.channel": "\(channel.name)", "hls.rendition": "\(segment.rendition)", "reason": "\(error)",
                ])
        }
    }

    /// Where each video frame's bytes end in a generated segment: a frame runs from the packet that starts its PES
    /// (the program tables before the first one included) to the next one's; the last ends with the segment.
    public static func videoFrameEnds(_ bytes: [UInt8]) -> [Int] {
        var starts: [Int] = []
        var offset = 0
        while offset + 188 <= bytes.count {
            defer { offset += 188 }
            guard bytes[offset] == 0x47, bytes[offset + 1] & 0x40 != 0 else { continue }
            let adaptation = (bytes[offset + 3] >> 4) & 3
            guard adaptation & 1 != 0 else { continue }
            let payload = offset + 4 + (adaptation & 2 != 0 ? 1 + Int(bytes[offset + 4]) : 0)
            guard payload + 4 <= offset + 188, bytes[payload] == 0, bytes[payload + 1] == 0, bytes[payload + 2] == 1,
                (0xE0...0xEF).contains(bytes[payload + 3])
            else { continue }
            starts.append(offset)
        }
        guard !starts.isEmpty else { return [bytes.count] }
        return Array(starts.dropFirst()) + [bytes.count]
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

/// A segment of a Low-Latency test source channel while it is streamed.
private struct StreamingSegment: Sendable {
    let rendition: String
    /// nil: not pushed (the feed is dropped) or ended early (refused, abandoned).
    var push: StreamingPush?
    let bytes: SharedBytes
    /// Where each video frame's bytes end (`TestSourceFeed.videoFrameEnds`).
    let frameEnds: [Int]
    /// Frames pushed so far.
    var fedFrames = 0
    /// The slot on the shared clock (ms): generated at its start, closed at its end.
    let startMilliseconds: Int64
    let endMilliseconds: Int64
}

/// A test source configuration or fault-injection request that cannot be carried out.
public struct TestSourceFeedError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
