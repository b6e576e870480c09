import Dispatch
import HLSPackaging
import HLSPlaylist
import LiveTimeline
import Logging
@testable import OriginCore
@testable import TestSourceInput
import SharedBytes
import Synchronization
import Testing

/// An origin and the test source input feeding it, on a manual clock.
struct FedOrigin {
    let origin: Origin
    let input: TestSourceInput

    init(_ channel: ChannelConfiguration, clock: ManualClock) throws {
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        origin = try Origin(
            configuration: OriginConfiguration(channels: [channel]), clock: clock, logger: logger,
            sourceCheck: TestSourceInput.check,
            sourcePrepare: TestSourceInput.prepare)
        input = try TestSourceInput(origin: origin, logger: logger)
    }

    /// The input delivers what is due, then the origin's ingest loop runs (as the two services do).
    func tick() {
        input.tick()
        origin.tick()
    }

    func channel(named name: String) -> Channel? { origin.channel(named: name) }
}

@Suite("Built-in test source input")
struct TestSourceInputTests {
    func origin(_ channel: ChannelConfiguration, clock: ManualClock) throws -> FedOrigin {
        try FedOrigin(channel, clock: clock)
    }

    func run(_ origin: FedOrigin, clock: ManualClock, seconds: Double) {
        for _ in 0..<Int(seconds * 20) {
            clock.advance(seconds: 0.05)
            origin.tick()
        }
    }

    func playlist(_ origin: FedOrigin, _ rendition: String) throws -> MediaPlaylist {
        let bytes = try #require(origin.channel(named: "demo")?.snapshot.renditions[rendition]?.playlist)
        return try MediaPlaylist.parse(String(decoding: bytes.array, as: UTF8.self))
    }

    var demo: ChannelConfiguration {
        ChannelConfiguration(
            name: "demo", renditions: [.init(name: "360p"), .init(name: "180p")], source: .testSource,
            window: .segments(30))
    }

    @Test func deliversAlignedContinuousSegmentsInRealTime() throws {
        let clock = ManualClock()
        let origin = try origin(demo, clock: clock)
        run(origin, clock: clock, seconds: 20.01)
        let a = try playlist(origin, "360p")
        let b = try playlist(origin, "180p")
        #expect(a.segments.count == 10)
        #expect(a.segments.map(\.uri) == b.segments.map(\.uri))
        #expect(a.segments.map(\.programDateTime) == b.segments.map(\.programDateTime))
        #expect(!a.segments.contains { $0.discontinuity || $0.gap })
        #expect(a.segments.allSatisfy { $0.duration == 2 })
    }

    @Test func scheduledOutageDropsOneRenditionAndItRejoinsWithADiscontinuity() throws {
        let clock = ManualClock()
        var channel = demo
        channel.scheduledOutages = [ScheduledOutage(afterSeconds: 6.5, durationSeconds: 6, renditions: ["180p"])]
        let origin = try origin(channel, clock: clock)
        run(origin, clock: clock, seconds: 30.01)
        let dropped = try playlist(origin, "180p")
        let healthy = try playlist(origin, "360p")
        #expect(healthy.segments.allSatisfy { !$0.gap })
        #expect(healthy.segments.map(\.discontinuity) == dropped.segments.map(\.discontinuity))
        #expect(healthy.discontinuitySequence == dropped.discontinuitySequence)
        let gaps = dropped.segments.filter(\.gap).count
        #expect((2...3).contains(gaps), "\(gaps) gaps")
        let join = try #require(dropped.segments.firstIndex { !$0.gap && $0.discontinuity })
        #expect(dropped.segments[join - 1].gap)
        #expect(dropped.segments.map(\.uri) == healthy.segments.map(\.uri))
        #expect(dropped.segments.map(\.programDateTime) == healthy.segments.map(\.programDateTime))
    }

    @Test func outageRequestForUnknownRenditionIsRefused() throws {
        let clock = ManualClock()
        let origin = try origin(demo, clock: clock)
        let feed = try #require(origin.input.feed(channel: "demo"))
        #expect(throws: TestSourceFeedError.self) { try feed.dropFeed(seconds: 5, renditions: ["1080p"]) }
        #expect(try feed.dropFeed(seconds: 5) == ["360p", "180p"])
    }

    @Test func encoderRestartMakesADiscontinuityAndKeepsMSNGrowing() throws {
        let clock = ManualClock()
        let origin = try origin(demo, clock: clock)
        run(origin, clock: clock, seconds: 6.01)
        origin.input.feed(channel: "demo")!.restartTimestamps(startPTS: 0)
        run(origin, clock: clock, seconds: 4)
        let playlist = try playlist(origin, "360p")
        #expect(playlist.segments.map(\.discontinuity) == [false, false, false, true, false])
        #expect(playlist.segments.map(\.uri) == ["0.ts", "1.ts", "2.ts", "3.ts", "4.ts"])
    }

    @Test func unknownProfileIsAClearError() throws {
        let clock = ManualClock()
        var channel = demo
        channel.renditions = [.init(name: "4k")]
        do {
            _ = try origin(channel, clock: clock)
            Issue.record("accepted an unknown profile")
        } catch {
            #expect("\(error)".contains("unknown test source profile '4k'"))
        }
    }

    @Test func reloadFeedsTheSuccessorAndStopsARemovedChannel() throws {
        let clock = ManualClock()
        let origin = try origin(demo, clock: clock)
        run(origin, clock: clock, seconds: 6.01)
        let before = try #require(origin.input.feed(channel: "demo"))
        var changed = demo
        changed.window = .segments(31)
        let report = try origin.origin.reload(OriginConfiguration(channels: [changed]))
        #expect(report.changed == ["demo"])
        run(origin, clock: clock, seconds: 6)
        let after = try #require(origin.input.feed(channel: "demo"))
        #expect(after !== before)
        let playlist = try playlist(origin, "360p")
        #expect(!playlist.segments.contains { $0.gap })
        #expect(playlist.segments.count >= 2, "\(playlist.segments.map(\.uri))")
        _ = try origin.origin.reload(OriginConfiguration(channels: []))
        #expect(origin.input.feed(channel: "demo") == nil)
    }

    @Test func anOutageCommandAndATickRacingAfterAReloadShareOneFeedPerChannelObject() throws {
        let clock = ManualClock()
        let origin = try origin(demo, clock: clock)
        var changed = demo
        for iteration in 0..<2000 {
            changed.window = .segments(31 + iteration % 2)
            _ = try origin.origin.reload(OriginConfiguration(channels: [changed]))
            let answered = Mutex<[TestSourceFeed]>([])
            DispatchQueue.concurrentPerform(iterations: 4) { index in
                if index % 2 == 0 {
                    let feed = origin.input.feed(channel: "demo")
                    answered.withLock { $0 += feed.map { [$0] } ?? [] }
                } else {
                    origin.input.tick()
                }
            }
            let kept = try #require(origin.input.feed(channel: "demo"))
            let feeds = answered.withLock { $0 }
            #expect(feeds.count == 2)
            guard feeds.allSatisfy({ $0 === kept }) else {
                Issue.record("iteration \(iteration): the outage route's feed was replaced by another for the same channel")
                return
            }
            #expect(kept.channel === origin.channel(named: "demo"))
        }
    }

    @Test func aReloadsSuccessorHasTheSlateBeforeItIsListed() throws {
        let clock = ManualClock()
        let origin = try origin(demo, clock: clock)
        var changed = demo
        changed.window = .segments(31)
        _ = try origin.origin.reload(OriginConfiguration(channels: [changed]))
        let successor = try #require(origin.channel(named: "demo"))
        let slates = successor.state.withLock { state in state.renditions.map { $0.gapFillerSource != nil } }
        #expect(slates == [true, true])
    }

    @Test func reloadToAnUnknownProfileKeepsTheChannelAsItWas() throws {
        let clock = ManualClock()
        let origin = try origin(demo, clock: clock)
        var changed = demo
        changed.renditions = [.init(name: "4k")]
        let report = try origin.origin.reload(OriginConfiguration(channels: [changed]))
        #expect(report.failed["demo"]?.contains("unknown test source profile '4k'") == true, "\(report)")
        run(origin, clock: clock, seconds: 4.01)
        #expect(try playlist(origin, "360p").segments.count == 2)
    }
}
