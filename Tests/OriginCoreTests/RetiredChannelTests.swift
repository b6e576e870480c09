import Foundation
import HLSPackaging
import HLSPlaylist
import HTTPPushInput
import LiveTimeline
import Logging
import Markers
import OriginCore
import SharedBytes
import Synchronization
import TestSource
import TestSupport
import Testing

/// A reload retires the channel object of a changed channel: whatever still reaches the old object (a request that
/// looked it up before the swap) is carried out by its successor or refused as retryable, never lost.
@Suite("Retired channels: nothing that reaches the old object after a reload is lost", .offThePool)
struct RetiredChannelTests {
    let directory: String
    let clock = ManualClock()
    var generator: TestStreamGenerator

    init() throws {
        directory = try TemporaryDirectory.make("retired").path
        generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 2)
    }

    func configuration(window: Int, lowLatency: Bool = false) -> OriginConfiguration {
        var channel = ChannelConfiguration(name: "ch", renditions: [.init(name: "360p")], targetDuration: 2)
        channel.window = .segments(window)
        if lowLatency { channel.lowLatency = LowLatencyConfiguration(partTarget: 0.4) }
        return OriginConfiguration(channels: [channel], dataDirectory: directory)
    }

    func start(window: Int = 6, lowLatency: Bool = false) throws -> Origin {
        try Origin(
            configuration: configuration(window: window, lowLatency: lowLatency), clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    mutating func slot(_ origin: Origin) throws {
        clock.advance(seconds: 2)
        _ = try origin.ingest(
            channel: "ch", rendition: "360p", fileName: "s.ts", body: SharedBytes(generator.nextSegment().bytes))
        origin.tick()
    }

    func marker(_ id: String) -> MarkerRequest {
        MarkerRequest(
            id: id, classAttribute: "com.example.ad",
            startDate: ProgramDateTime(millisecondsSince1970: clock.nowMilliseconds() + 4_000), plannedDuration: 30)
    }

    @Test mutating func aMarkerPostedWhileAReloadSwapsTheChannelIsListedAfterTheReloadAndARestart() throws {
        var origin: Origin? = try start()
        for _ in 0..<3 { try slot(origin!) }
        // The request looked the channel up; then a reload replaced it; then the body arrived.
        let old = try #require(origin!.channel(named: "ch"))
        _ = try origin!.reload(configuration(window: 8))
        #expect(old.isRetired)
        let result = try old.addMarker(marker("during-reload"))
        #expect(result.changed)
        let successor = try #require(origin!.channel(named: "ch"))
        #expect(successor !== old)
        #expect(successor.marker(id: "during-reload") != nil, "the successor does not know the acknowledged marker")
        // The successor's next journal write must keep it.
        _ = try successor.addMarker(marker("after-reload"))
        origin = nil
        let restarted = try start(window: 8)
        let channel = try #require(restarted.channel(named: "ch"))
        #expect(channel.marker(id: "during-reload") != nil, "the acknowledged marker was lost across a restart")
        #expect(channel.marker(id: "after-reload") != nil)
    }

    @Test mutating func aBlockingReloadRegisteredOnAJustRetiredChannelIsAnswered() throws {
        let origin = try start(lowLatency: true)
        for _ in 0..<2 { try slot(origin) }
        let old = try #require(origin.channel(named: "ch"))
        let next = try #require(old.snapshot.renditions["360p"]?.entries.last).msn + 1
        _ = try origin.reload(configuration(window: 8, lowLatency: true))
        let answered = Mutex<Int>(0)
        old.waitForPart(
            rendition: "360p", until: PartPosition(msn: next + 5, part: 0), wholeSegment: false,
            deadlineMilliseconds: clock.nowMilliseconds() + 6_000
        ) { _ in answered.withLock { $0 += 1 } }
        // The successor took the wait: its deadline passes on its ticks.
        clock.advance(seconds: 7)
        origin.tick()
        #expect(answered.withLock { $0 } == 1, "a blocking reload on the retired channel was never answered")
    }
}
