import Foundation
import HTTPPushInput
import LiveTimeline
import Logging
import OriginCore
import SharedBytes
import TestSource
import TestSupport
import Testing

@testable import OriginServer

/// `/metrics` says when a store is nearly full (under `storage.minFreeBytes`, nothing left to evict), the state
/// content steering judges failing while `hlsorigin_storage_degraded` stays 0 (writes succeed).
@Suite("Metrics: a nearly full store", .offThePool)
struct StorageNearlyFullMetricsTests {
    /// The metrics after four 2-second slots pushed to channel "a" of an origin with `minFreeBytes`.
    func metrics(minFreeBytes: Int64) throws -> String {
        let clock = ManualClock()
        var channel = ChannelConfiguration(name: "a", renditions: [.init(name: "360p")])
        channel.window = .segments(3)
        var storage = StorageConfiguration()
        storage.minFreeBytes = minFreeBytes
        let origin = try Origin(
            configuration: OriginConfiguration(
                channels: [channel], dataDirectory: try TemporaryDirectory.make("nearly-full").path, storage: storage),
            clock: clock, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 2)
        for _ in 0..<4 {
            clock.advance(seconds: 2)
            _ = try origin.ingest(
                channel: "a", rendition: "360p", fileName: "s.ts", body: SharedBytes(generator.nextSegment().bytes))
            origin.tick()
        }
        return MetricsExposition.render(origin: origin, requests: RequestMetrics())
    }

    @Test func underTheFloorWithNothingToEvictTheGaugeIsOneAndTheStoreNotDegraded() throws {
        // No file system has this much free: the floor is never met.
        let lines = try metrics(minFreeBytes: Int64.max / 4).split(separator: "\n")
        #expect(lines.contains("# TYPE hlsorigin_storage_nearly_full gauge"))
        #expect(lines.contains("hlsorigin_storage_nearly_full{channel=\"a\"} 1"))
        #expect(lines.contains("hlsorigin_storage_degraded{channel=\"a\"} 0"))
    }

    @Test func aFloorTheDiskMeetsLeavesTheGaugeAtZero() throws {
        let lines = try metrics(minFreeBytes: 1).split(separator: "\n")
        #expect(lines.contains("hlsorigin_storage_nearly_full{channel=\"a\"} 0"))
    }
}
