import Foundation
import LiveTimeline
import MicroHTTPD
import OriginCore
import OriginServer
import TestSupport
import Testing

/// `limits:` hold whatever a client with the right to push sends: channels, renditions per channel, bytes a channel
/// holds in memory and on disk, channels created per minute. A push past a limit gets 403 or 429 with the reason
/// and leaves everything served as it was.
@Suite("Ingest limits: channels, renditions, bytes held, creations per minute", .offThePool)
struct IngestLimitsTests {
    static let loopback = "127.0.0.1"

    static func stack(
        audit: CapturedLog? = nil, dataDirectory: String? = nil, _ limits: (inout OriginLimits) -> Void
    ) throws -> OriginTestStack {
        try OriginTestStack(audit: audit?.logger()) { configuration in
            limits(&configuration.origin.limits)
            if let dataDirectory {
                configuration.origin.dataDirectory = dataDirectory
                configuration.origin.storage.segmentsPerChunk = 2
            }
        }
    }

    /// The multivariant and media playlists of `ch` and every listed segment, as a player sees them.
    static func served(_ stack: OriginTestStack) throws -> [String: [UInt8]] {
        var served = ["index": try stack.get("/live/ch/index.m3u8").body]
        for rendition in ["360p", "180p"] {
            let playlist = try stack.get("/live/ch/\(rendition)/index.m3u8")
            served[rendition] = playlist.body
            for line in playlist.text.split(separator: "\n") where line.hasSuffix(".ts") {
                served["\(rendition)/\(line)"] = try stack.get("/live/ch/\(rendition)/\(line)").body
            }
        }
        return served
    }

    @Test func tenThousandChannelCreationsStopAtTheChannelLimit() throws {
        let audit = CapturedLog()
        let stack = try Self.stack(audit: audit) {
            $0.channels = 4
            $0.autoCreationsPerMinute = 100_000
        }
        try stack.slots(2)
        let before = try Self.served(stack)
        let segment = stack.nextSegment("180p")
        var statuses: [Int: Int] = [:]
        let started = ContinuousClock.now
        for index in 0..<10_000 {
            let answer = send(stack.handler, "PUT", "/ingest/evil\(index)/r/0.ts", body: segment, remote: Self.loopback)
            statuses[answer?.status ?? 0, default: 0] += 1
        }
        print("10,000 channel creations: \(statuses) in \(ContinuousClock.now - started)")
        #expect(statuses == [201: 3, 403: 9_997])
        #expect(stack.origin.allChannels.count == 4)
        let refused = send(stack.handler, "PUT", "/ingest/one-more/r/0.ts", body: segment, remote: Self.loopback)
        #expect(refused?.status == 403)
        #expect(
            refused?.text == "channel 'one-more' not created: the origin has 4 channels, its limit (limits.channels)\n")
        #expect(try Self.served(stack) == before)
        let bound = Int64(4) * stack.origin.configuration.limits.channelMemoryBytes
        #expect(stack.origin.allChannels.reduce(0) { $0 + $1.memoryBytes } <= bound)
        #expect(
            try stack.get("/metrics").text.contains(
                "hlsorigin_refusals_total{route=\"ingest\",reason=\"channel_limit\"} 9998\n"))
        #expect(try stack.get("/metrics").text.contains("hlsorigin_channels 4\n"))
        #expect(audit.all.filter { $0.metadata["audit.action"] == "channel created" }.count == 3)
        // Every refusal is counted above; the audit log writes the first ones and then a few a second (AuditLog).
        let refusals = audit.all.filter { $0.metadata["audit.outcome"] == "channel_limit" }
        #expect(refusals.count >= AuditLog.refusalBurst && refusals.count < 1_000)
        let refusal = try #require(refusals.first)
        #expect(refusal.metadata["hls.channel"] == "evil3")
        #expect(refusal.metadata["audit.credential"] == "loopback")
    }

    @Test func tenThousandRenditionsStopAtTheRenditionLimit() throws {
        let stack = try Self.stack { $0.renditionsPerChannel = 5 }
        try stack.slots(2)
        let before = try Self.served(stack)
        let segment = stack.nextSegment("180p")
        var statuses: [Int: Int] = [:]
        for index in 0..<10_000 {
            let answer = send(stack.handler, "PUT", "/ingest/ch/r\(index)/0.ts", body: segment, remote: Self.loopback)
            statuses[answer?.status ?? 0, default: 0] += 1
        }
        // Three new renditions join the two configured ones; their first segments wait for their slot (201).
        #expect(statuses[403] == 9_997)
        #expect(stack.origin.channel(named: "ch")?.renditionNames.count == 5)
        let refused = send(stack.handler, "PUT", "/ingest/ch/extra/0.ts", body: segment, remote: Self.loopback)
        #expect(refused?.status == 403)
        #expect(refused?.text.contains("(limits.renditionsPerChannel)") == true)
        #expect(try stack.get("/live/ch/360p/index.m3u8").body == before["360p"])
        #expect(try stack.get("/live/ch/360p/0.ts").body == before["360p/0.ts"])
    }

    @Test func creationsPerMinuteAreRefused429WithRetryAfterUntilTheBucketRefills() throws {
        let stack = try Self.stack { $0.autoCreationsPerMinute = 2 }
        let segment = stack.nextSegment("180p")
        func create(_ name: String) -> HTTPResponse? {
            send(stack.handler, "PUT", "/ingest/\(name)/r/0.ts", body: segment, remote: Self.loopback)
        }
        #expect(create("a")?.status == 201)
        #expect(create("b")?.status == 201)
        let refused = try #require(create("c"))
        #expect(refused.status == 429)
        #expect(refused.headers["Retry-After"] == "30")
        #expect(refused.text.contains("(limits.autoCreationsPerMinute); retry in 30 s"))
        #expect(stack.origin.channel(named: "c") == nil)
        // Pushes into channels that exist are not creations.
        stack.clock.advance(seconds: 2)
        #expect(
            send(stack.handler, "PUT", "/ingest/a/r/1.ts", body: stack.nextSegment("180p"), remote: Self.loopback)?
                .status == 201)
        stack.clock.advance(seconds: 28)
        #expect(create("c")?.status == 201)
        #expect(create("d")?.status == 429)
    }

    @Test func aChannelAtItsMemoryLimitIsRefused429AndWhatItServesStays() throws {
        let stack = try Self.stack { $0.channelMemoryBytes = 1 }
        // Even the first segment is more than one byte: refused before the channel is touched.
        stack.clock.advance(seconds: 2)
        let segment = stack.nextSegment("360p")
        let first = try #require(
            send(stack.handler, "PUT", "/ingest/ch/360p/0.ts", body: segment, remote: Self.loopback))
        #expect(first.status == 429)
        #expect(first.text.contains("(limits.channelMemoryBytes): nothing was accepted"))
        #expect(first.headers["Retry-After"] != nil)
        #expect(
            send(stack.handler, "PUT", "/ingest/new/360p/0.ts", body: segment, remote: Self.loopback)?.status == 429)
        #expect(stack.origin.channel(named: "new") == nil)
    }

    @Test func memoryHeldByAChannelStaysUnderItsBoundWhileItsWindowSlides() throws {
        // Room for about eight segments of both renditions: the window (3) and what it retains fit; more does not.
        let probe = try OriginTestStack()
        let size = Int64(probe.nextSegment("360p").count + probe.nextSegment("180p").count)
        let limit = size * 8
        let stack = try Self.stack { $0.channelMemoryBytes = limit }
        var refusedStatuses: [Int] = []
        var before: [String: [UInt8]] = [:]
        for _ in 0..<30 {
            stack.clock.advance(seconds: 2)
            before = (try? Self.served(stack)) ?? [:]
            for rendition in ["360p", "180p"] {
                let answer = send(
                    stack.handler, "PUT", "/ingest/ch/\(rendition)/s.ts", body: stack.nextSegment(rendition),
                    remote: Self.loopback)
                if answer?.status != 201 {
                    refusedStatuses.append(answer?.status ?? 0)
                    // A refused push leaves what players are served as it was.
                    #expect(try Self.served(stack) == before)
                }
            }
            stack.origin.tick()
            #expect(stack.origin.channel(named: "ch")!.memoryBytes <= limit)
        }
        print(
            "memory bound \(limit) B: held \(stack.origin.channel(named: "ch")!.memoryBytes) B, refused \(refusedStatuses.count)"
        )
        #expect(Set(refusedStatuses).isSubset(of: [429]))
    }

    @Test func aChannelAtItsDiskLimitEvictsOldTimeShiftThenRefuses429() throws {
        let directory = try TemporaryDirectory.make("disk-limit").path
        let probe = try OriginTestStack()
        let size = Int64(probe.nextSegment("360p").count + probe.nextSegment("180p").count)
        // Room for the window (6 slots), what it retains (6 more) and a few slots of time-shift.
        let limit = size * 20
        let stack = try Self.stack(dataDirectory: directory) {
            $0.channelDiskBytes = limit
            $0.channelMemoryBytes = 1 << 30
        }
        var statuses: [Int: Int] = [:]
        for _ in 0..<40 {
            stack.clock.advance(seconds: 2)
            for rendition in ["360p", "180p"] {
                let answer = send(
                    stack.handler, "PUT", "/ingest/ch/\(rendition)/s.ts", body: stack.nextSegment(rendition),
                    remote: Self.loopback)
                statuses[answer?.status ?? 0, default: 0] += 1
            }
            stack.origin.tick()
            let stored = stack.origin.channel(named: "ch")!.storedBytes
            #expect(stored <= limit, "\(stored) > \(limit)")
        }
        print("disk bound \(limit) B: stored \(stack.origin.channel(named: "ch")!.storedBytes) B, answers \(statuses)")
        // Old time-shift went first: every push was taken, twice what the store could hold at once.
        #expect(statuses == [201: 80])
        // With less room than the window and its retention, a push is refused (429), never a listed segment evicted.
        let full = try Self.stack(dataDirectory: try TemporaryDirectory.make("disk-full").path) {
            $0.channelDiskBytes = size * 4
        }
        var refused: HTTPResponse?
        for _ in 0..<10 where refused == nil {
            full.clock.advance(seconds: 2)
            for rendition in ["360p", "180p"] where refused == nil {
                let answer = send(
                    full.handler, "PUT", "/ingest/ch/\(rendition)/s.ts", body: full.nextSegment(rendition),
                    remote: Self.loopback)
                if answer?.status != 201 { refused = answer }
            }
            full.origin.tick()
        }
        #expect(refused?.status == 429)
        #expect(refused?.text.contains("with no time-shift left to evict") == true)
        // Within the bound plus what the store writes besides the segment (index and slot records, init files).
        #expect(full.origin.channel(named: "ch")!.storedBytes <= size * 5)
    }
}
