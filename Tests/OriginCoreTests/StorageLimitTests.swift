import Foundation
import HLSPackaging
import HTTPPushInput
import LiveTimeline
import Logging
import OriginCore
import SharedBytes
import TestSource
import TestSupport
import Testing

/// Byte limits on the store: the oldest time-shift goes first, never anything a channel lists or retains.
@Suite("Durable store: byte limits evict the oldest time-shift first", .offThePool)
struct StorageLimitTests {
    let clock = ManualClock()

    func origin(
        channels: [String], dvrMaxBytes: Int64? = nil, maxBytes: Int64? = nil, minFreeBytes: Int64? = nil
    ) throws -> Origin {
        let configured = channels.map { name in
            var channel = ChannelConfiguration(name: name, renditions: [.init(name: "360p")])
            channel.window = .segments(3)
            channel.dvr = DVRConfiguration(hours: 1, maxBytes: dvrMaxBytes)
            return channel
        }
        var storage = StorageConfiguration(maxBytes: maxBytes)
        storage.minFreeBytes = minFreeBytes
        storage.segmentsPerChunk = 4
        return try Origin(
            configuration: OriginConfiguration(
                channels: configured, dataDirectory: try TemporaryDirectory.make("limits").path, storage: storage),
            clock: clock, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    /// Pushes one 2-second slot to each named channel.
    func slot(_ origin: Origin, _ channels: [String], _ generator: inout TestStreamGenerator) throws {
        clock.advance(seconds: 2)
        let bytes = SharedBytes(generator.nextSegment().bytes)
        for channel in channels {
            _ = try origin.ingest(channel: channel, rendition: "360p", fileName: "s.ts", body: bytes)
        }
        origin.tick()
    }

    @Test func aChannelOverItsDVRByteLimitLosesItsOldestSlotsButNothingListed() throws {
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 2)
        let segmentBytes = Int64(generator.nextSegment().bytes.count)
        let limit = segmentBytes * 20
        let origin = try origin(channels: ["a"], dvrMaxBytes: limit)
        for _ in 0..<60 { try slot(origin, ["a"], &generator) }
        let channel = try #require(origin.channel(named: "a"))
        let storage = try #require(channel.status().storage)
        #expect(storage.bytes <= limit, "store holds \(storage.bytes) bytes, limit \(limit)")
        #expect(storage.horizonMSN > 0, "the oldest slots went")
        #expect(channel.storedSegment(rendition: "360p", msn: 0) == nil)
        // Everything listed or retained is still served from memory or the store.
        let snapshot = try #require(channel.snapshot.renditions["360p"])
        for entry in snapshot.entries {
            #expect(entry.bytes != nil || channel.storedSegment(rendition: "360p", msn: entry.msn) != nil)
        }
        // The newest time-shift below the window is still on disk.
        let oldestListed = try #require(snapshot.entries.first?.msn)
        #expect(channel.storedSegment(rendition: "360p", msn: oldestListed - 1) != nil)
    }

    @Test func overTheStoreLimitTheChannelWithTheOldestHistoryGivesFirst() throws {
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 2)
        let segmentBytes = Int64(generator.nextSegment().bytes.count)
        let origin = try origin(channels: ["old", "new"], maxBytes: segmentBytes * 40)
        for _ in 0..<40 { try slot(origin, ["old"], &generator) }
        for _ in 0..<10 { try slot(origin, ["old", "new"], &generator) }
        clock.advance(seconds: 10)  // limits are enforced every 10 s
        origin.tick()
        let old = try #require(origin.channel(named: "old")?.status().storage)
        let new = try #require(origin.channel(named: "new")?.status().storage)
        #expect(old.bytes + new.bytes <= segmentBytes * 40, "within the limit")
        #expect(old.horizonMSN > 0, "the channel with the oldest history was evicted")
        #expect(new.horizonMSN == 0, "the newer channel kept everything")
    }

    /// A disk filling up with something else (docs/content-steering.md, "Health"): under `storage.minFreeBytes`
    /// with no time-shift left to evict, the origin still takes and serves segments, but judges its channels failing,
    /// so content steering moves players to a peer before its writes start failing (and its playlists list GAPs).
    @Test func underTheFreeSpaceFloorWithNothingLeftToEvictTheChannelIsJudgedFailing() throws {
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 2)
        // No file system has this much free: the floor is never met.
        let origin = try origin(channels: ["a"], minFreeBytes: Int64.max / 4)
        for _ in 0..<4 { try slot(origin, ["a"], &generator) }
        let channel = try #require(origin.channel(named: "a"))
        let health = channel.steeringHealth(nowMilliseconds: clock.nowMilliseconds())
        #expect(health.state == "failing", "\(health)")
        #expect(health.reason?.contains("storage.minFreeBytes") == true, "\(health)")
        // Still taking segments and listing them: only its judgement changed.
        #expect((channel.snapshot.renditions["360p"]?.entries.count ?? 0) >= 3)
        #expect(channel.status().storage?.state == "ok")
        // The admin status says why (beside "ok": writes still succeed).
        #expect(channel.status().storage?.nearlyFull?.contains("storage.minFreeBytes") == true)
    }

    /// Bytes free on the file system of the origin's data directory.
    func freeBytes(_ origin: Origin) throws -> Int64 {
        var stats = statvfs()
        try #require(statvfs(try #require(origin.configuration.dataDirectory), &stats) == 0)
        return Int64(stats.f_bavail) * Int64(stats.f_frsize)
    }

    /// Moves the free-space floor (a reload) and lets the next 1 s free-space check run.
    func floor(_ origin: Origin, _ minimum: Int64) throws {
        var configuration = origin.configuration
        configuration.storage.minFreeBytes = minimum
        _ = try origin.reload(configuration)
        clock.advance(seconds: 1)
        origin.tick()
    }

    /// Space coming back clears the judgement, but only with a margin (a sixteenth of the floor) over
    /// `storage.minFreeBytes`: at the floor, one segment written or evicted would flip it (and the steering answer,
    /// moving players back and forth) every second.
    @Test func aNearlyFullStoreIsJudgedHealthyAgainOnlyOnceTheMarginOverTheFloorIsFree() throws {
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 2)
        let origin = try origin(channels: ["a"], minFreeBytes: Int64.max / 4)
        for _ in 0..<4 { try slot(origin, ["a"], &generator) }
        let channel = try #require(origin.channel(named: "a"))
        func state() -> String { channel.steeringHealth(nowMilliseconds: clock.nowMilliseconds()).state }
        #expect(state() == "failing")
        // Free space back over the floor, but by half the margin (a 32nd of the floor): still failing.
        let free = try freeBytes(origin)
        try floor(origin, free / 33 * 32)
        #expect(state() == "failing", "\(channel.steeringHealth(nowMilliseconds: clock.nowMilliseconds()))")
        #expect(channel.status().storage?.nearlyFull != nil)
        // Twice the floor free: healthy, and the status says nothing more.
        try floor(origin, try freeBytes(origin) / 2)
        #expect(state() == "healthy", "\(channel.steeringHealth(nowMilliseconds: clock.nowMilliseconds()))")
        #expect(channel.status().storage?.nearlyFull == nil)
    }

    /// Under the floor the whole time: the 1 s free-space check evicts when the file system goes under it, and
    /// leaves the slots that leave the window later to the 10 s round (not one slot per segment each second, with
    /// its horizon write and directory sync, on the tick task that also closes slots).
    @Test func underTheFloorForGoodTimeShiftIsEvictedEveryTenSecondsNotEverySecond() throws {
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 2)
        let origin = try origin(channels: ["a"], minFreeBytes: Int64.max / 4)
        let channel = try #require(origin.channel(named: "a"))
        var horizons: [UInt64] = []
        for _ in 0..<20 {
            try slot(origin, ["a"], &generator)
            horizons.append(try #require(channel.status().storage).horizonMSN)
        }
        let changes = zip(horizons, horizons.dropFirst()).filter { $0 != $1 }.count
        #expect(horizons.last ?? 0 > 0, "time-shift was evicted: \(horizons)")
        // 40 s of slots: four or five 10 s rounds.
        #expect(changes <= 5, "horizon after each 2 s slot: \(horizons)")
    }

    @Test func aFreeSpaceFloorTheDiskMeetsLeavesTheChannelHealthy() throws {
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 2)
        let origin = try origin(channels: ["a"], minFreeBytes: 1)
        for _ in 0..<4 { try slot(origin, ["a"], &generator) }
        let channel = try #require(origin.channel(named: "a"))
        #expect(channel.steeringHealth(nowMilliseconds: clock.nowMilliseconds()).state == "healthy")
    }
}
