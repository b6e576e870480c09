import Foundation
import HLSPlaylist
import TestSupport
import Testing

extension EndToEnd {
    /// An encoder outage through the admin API on the demo channel: the built-in test source stops feeding one
    /// rendition for 6 s; the origin writes GAP entries in that rendition only and a discontinuity at the join.
    @Suite("End to end: outage through the admin API", .tags(.endToEnd))
    struct OutageTests {
        struct ChannelStatus: Decodable {
            struct Rendition: Decodable {
                let name: String
                let gapsWritten: Int
                let discontinuities: Int
                let feed: String
            }
            let name: String
            let renditions: [Rendition]
        }

        @Test("GAP entries in 180p only, one per slot, on the PDT timeline; discontinuity at the join; never stale")
        func outageOfOneRendition() async throws {
            try await OriginProcess.withRunning(configuration: OriginProcess.defaultConfiguration(), label: "outage") {
                origin in
                let client = HTTPClient(port: origin.port)
                let watcher = LiveStreamWatcher(
                    client: client, channel: "demo", renditions: ["360p", "180p"], directory: origin.directory,
                    gapAnswer: .filler)
                let interval = Duration.milliseconds(200)
                try await watcher.watch(for: .seconds(15), interval: interval) {
                    (watcher.trackers["180p"]?.msns.count ?? 0) >= 3 && (watcher.trackers["360p"]?.msns.count ?? 0) >= 3
                }
                let lastBefore = try #require(watcher.trackers["180p"]?.lastMSN)
                let targetDuration = Double(try #require(watcher.trackers["180p"]?.targetDuration))

                try await Self.startOutageOf180p(client: client)
                let postAnswered = watcher.now

                // Until 180p has its join and two more segments after it.
                try await watcher.watch(for: .seconds(20), interval: interval) {
                    guard let tracker = watcher.trackers["180p"] else { return false }
                    let gaps = tracker.msns.filter { tracker.entries[$0]!.gap }
                    guard let lastGap = gaps.last else { return false }
                    return (tracker.lastMSN ?? 0) >= lastGap + 3
                }
                let status = try await client.get("/admin/channels/demo")
                let violations = await watcher.finish()

                #expect(
                    violations.isEmpty,
                    "\(violations.count) problems:\n\(violations.prefix(40).joined(separator: "\n"))")
                let unaligned = watcher.discontinuitySequenceAlignment()
                #expect(
                    unaligned.isEmpty,
                    Comment(
                        rawValue:
                            "RFC 8216 6.2.4: matching content must have matching discontinuity sequence numbers in "
                            + "every rendition; the join after 180p's outage moved 180p's numbers only:\n"
                            + unaligned.joined(separator: "\n")
                    ))
                let low = try #require(watcher.trackers["180p"])
                let high = try #require(watcher.trackers["360p"])
                let (gaps, firstGapAfter) = try Self.expectGapsThenJoin(
                    in: low, lastBefore: lastBefore, postAnswered: postAnswered, targetDuration: targetDuration)
                #expect(high.entries.values.allSatisfy { !$0.gap }, "360p has GAP entries")
                #expect(watcher.sameMSNs().isEmpty, "\(watcher.sameMSNs())")
                for tracker in [low, high] {
                    #expect(
                        tracker.maxStalenessLowerBound <= 1.5 * targetDuration,
                        "\(tracker.name): went at least \(tracker.maxStalenessLowerBound) s without a new entry")
                }

                try Self.expectStatusCountsGaps(status, gapsIn180p: gaps.count)

                print(
                    "outage: 180p MSNs \(low.msns.first ?? 0)...\(low.lastMSN ?? 0), GAP \(gaps), first GAP at least "
                        + String(format: "%.2f", firstGapAfter) + " s after the outage began, "
                        + "staleness 180p in [\(low.maxStalenessLowerBound), \(low.maxStalenessUpperBound)] s, "
                        + "360p in [\(high.maxStalenessLowerBound), \(high.maxStalenessUpperBound)] s, "
                        + "\(watcher.verifier.downloaded) segments, \(watcher.gapsSentForFiller) GAP fillers, "
                        + "\(client.counter.value) requests\nstatus: \(status.text)")
            }
        }

        /// Asks the demo channel's test source to stop feeding 180p for 6 s (answered 202 naming 180p).
        static func startOutageOf180p(client: HTTPClient) async throws {
            let body = Array(#"{"seconds": 6, "renditions": ["180p"]}"#.utf8)
            let answer = try await client.request(
                "POST", "/admin/channels/demo/outage", headers: [("Content-Type", "application/json")], body: body)
            #expect(answer.status == 202, "outage answered \(answer.status): \(answer.text)")
            #expect(answer.text.contains("\"180p\""), "\(answer.text)")
        }

        /// Three GAP entries of 2 s on consecutive slots after `lastBefore`, the first within 1.5 target durations of
        /// the outage, then a join with the only discontinuity. Returns the GAP MSNs and how late the first appeared.
        static func expectGapsThenJoin(
            in low: RenditionTracker, lastBefore: UInt64, postAnswered: Double, targetDuration: Double
        ) throws -> (gaps: [UInt64], firstGapAfter: Double) {
            let gaps = low.msns.filter { low.entries[$0]!.gap }
            var firstGapAfter = -1.0
            #expect(gaps.count == 3, "6 s of outage on 2 s slots: expected 3 GAP entries, got MSNs \(gaps)")
            #expect(
                gaps.allSatisfy { $0 > lastBefore }, "GAP at or before the outage began: \(gaps), \(lastBefore)")
            if let first = gaps.first, let last = gaps.last {
                #expect(last - first + 1 == UInt64(gaps.count), "GAP entries not one per consecutive slot: \(gaps)")
                #expect(gaps.allSatisfy { low.entries[$0]!.durationMilliseconds == 2000 })
                // The first GAP appeared after the last reload that did not list it was sent.
                let firstSeen = low.firstSeen[first] ?? 0
                let lowerBound = (low.appearedAfter[first] ?? 0) - postAnswered
                firstGapAfter = lowerBound
                #expect(
                    lowerBound <= 1.5 * targetDuration,
                    "first GAP appeared \(lowerBound) s or more after the outage began (first seen at \(firstSeen))"
                )
                let join = try #require(low.entries[last + 1], "no segment after the GAP entries")
                #expect(join.discontinuity, "the join after the outage has no EXT-X-DISCONTINUITY")
                #expect(!join.gap)
                let otherDiscontinuities = low.entries.values.filter { $0.discontinuity && $0.msn != last + 1 }
                #expect(
                    otherDiscontinuities.isEmpty, "unexpected discontinuities: \(otherDiscontinuities.map(\.msn))")
            }
            return (gaps, firstGapAfter)
        }

        /// The channel status counts the GAP entries written in 180p and none in 360p; 180p is fed live again.
        static func expectStatusCountsGaps(_ status: RawHTTPResponse, gapsIn180p: Int) throws {
            #expect(status.status == 200)
            let decoded = try JSONDecoder().decode(ChannelStatus.self, from: Data(status.body))
            let lowStatus = try #require(decoded.renditions.first { $0.name == "180p" })
            let highStatus = try #require(decoded.renditions.first { $0.name == "360p" })
            #expect(lowStatus.gapsWritten > 0)
            #expect(lowStatus.gapsWritten == gapsIn180p)
            #expect(highStatus.gapsWritten == 0)
            #expect(lowStatus.feed == "live")

        }
    }
}
