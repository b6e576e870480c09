import MediaProbe
import TestSource
import TestSupport
import Testing

@Suite("Continuity across segments and loop points", .offThePool)
struct ContinuityTests {
    /// Twelve 1-second segments: the 4 s video loop three times, the 1.6 s audio loop 7.5 times.
    static func twelveSeconds(_ profile: String = "360p") throws -> [SegmentView] {
        try TestStreams.segments(profile: profile, duration: 1, count: 12)
    }

    @Test func continuityCountersRunOnPerPID() throws {
        let segments = try Self.twelveSeconds()
        var last: [UInt16: UInt8] = [:]
        var checked = 0
        for packet in segments.flatMap(\.packets) {
            #expect(packet.hasPayload)
            #expect(packet.adaptation?.discontinuity != true)
            if let previous = last[packet.pid] {
                #expect(packet.continuityCounter == (previous + 1) & 0x0F, "PID \(packet.pid), packet \(packet.index)")
                checked += 1
            } else {
                #expect(packet.continuityCounter == 0)
            }
            last[packet.pid] = packet.continuityCounter
        }
        #expect(checked > 1000)
        // PAT and PMT: one packet per segment, so after 12 segments their counters stand at 11.
        #expect(last[0x0000] == 11 && last[0x1000] == 11)
    }

    @Test func videoTimestampsAdvanceOneFrameAtATime() throws {
        let segments = try Self.twelveSeconds()
        let timestamps = segments.flatMap { $0.video.compactMap(\.pts) }
        #expect(timestamps.count == 300)
        #expect(timestamps.first == 126_000)
        for (previous, next) in zip(timestamps, timestamps.dropFirst()) {
            #expect(next == previous + 3600)
        }
        for (index, pair) in zip(segments, segments.dropFirst()).enumerated() {
            #expect(pair.1.video.first?.pts == (pair.0.video.last?.pts).map { $0 + 3600 }, "segment \(index + 1)")
            #expect(pair.1.segment.startPTS == pair.0.segment.startPTS + pair.0.segment.durationTicks)
            #expect(pair.1.segment.sequence == pair.0.segment.sequence + 1)
            #expect(!pair.1.segment.startsTimeline)
        }
    }

    @Test func audioTimestampsAdvance1920TicksPerFrame() throws {
        let segments = try Self.twelveSeconds()
        var expected: Int64 = 126_000
        for view in segments {
            let first = try #require(view.audio.first?.pts)
            #expect(first >= view.segment.startPTS && first < view.segment.startPTS + 1920)
            for pes in view.audio {
                #expect(pes.pts == expected)
                expected += Int64(try TransportStreamReader.adtsFrameLengths(pes.payload).count) * 1920
            }
        }
        // 12 s = 562.5 frames: the frame at PTS start + 562 × 1920 < start + 12 s is the last one.
        #expect(expected == 126_000 + 563 * 1920)
    }

    @Test func pcrIsMonotonicAndFrequent() throws {
        let segments = try Self.twelveSeconds()
        var previous: Int64?
        for view in segments {
            for frame in view.video {
                let pcr = try #require(frame.firstPacket.adaptation?.pcr)
                let pts = try #require(frame.pts)
                #expect(pcr % 300 == 0)
                #expect(pcr / 300 == pts - TestStreamGenerator.pcrDelayTicks)
                if let previous {
                    #expect(pcr > previous)
                    #expect(pcr - previous <= 27_000_000 / 10)  // at most 100 ms apart
                }
                previous = pcr
            }
            // Every PES, audio included, starts no earlier than the PCR says it may be decoded.
            let firstPCR = try #require(view.packets[2].adaptation?.pcr)
            #expect(view.audio.allSatisfy { ($0.pts ?? 0) * 300 > firstPCR })
        }
    }

    @Test func profilesShareSegmentBoundaries() throws {
        let high = try TestStreams.segments(profile: "360p", duration: 2, count: 4)
        let low = try TestStreams.segments(profile: "180p", duration: 2, count: 4)
        for (a, b) in zip(high, low) {
            #expect(a.segment.startPTS == b.segment.startPTS)
            #expect(a.segment.durationTicks == b.segment.durationTicks)
            #expect(a.segment.sequence == b.segment.sequence)
            #expect(a.video.map(\.pts) == b.video.map(\.pts))
            #expect(a.audio.map(\.pts) == b.audio.map(\.pts))
            #expect(a.audio.map(\.payload) == b.audio.map(\.payload))
            #expect(a.segment.bytes.count > b.segment.bytes.count)
        }
    }

    @Test func restartStartsANewTimeline() throws {
        let profile = try #require(TestSourceProfile.named("360p"))
        var generator = try TestStreamGenerator(profile: profile, segmentDuration: 2)
        _ = generator.nextSegment()
        _ = generator.nextSegment()
        _ = generator.nextSegment()  // 6 s in: the video loop is half way through
        generator.restartTimestamps(startPTS: 5_000_000)
        let restarted = try SegmentView(generator.nextSegment())
        let following = try SegmentView(generator.nextSegment())

        #expect(restarted.segment.startPTS == 5_000_000)
        #expect(restarted.segment.sequence == 3)
        #expect(restarted.segment.startsTimeline)
        #expect(restarted.video.first?.pts == 5_000_000)
        #expect(restarted.audio.first?.pts == 5_000_000)
        #expect(!following.segment.startsTimeline)
        #expect(following.segment.startPTS == 5_180_000)

        // Counters start over, and the first packet of each PID says so.
        var seen: Set<UInt16> = []
        for packet in restarted.packets where !seen.contains(packet.pid) {
            seen.insert(packet.pid)
            #expect(packet.continuityCounter == 0)
            #expect(packet.adaptation?.discontinuity == true, "PID \(packet.pid)")
        }
        #expect(seen.count == 4)
        #expect(restarted.packets.filter { $0.adaptation?.discontinuity == true }.count == 4)
        #expect(following.packets.allSatisfy { $0.adaptation?.discontinuity != true })

        // The loops start over too: the segment's video is the first 2 s of the fixture again.
        let fresh = try TestStreams.segments(profile: "360p", duration: 2, count: 1, startPTS: 5_000_000)[0]
        #expect(restarted.video.map(\.payload) == fresh.video.map(\.payload))
        #expect(restarted.audio.map(\.payload) == fresh.audio.map(\.payload))
    }

    @Test func timestampsWrapAt33Bits() throws {
        let wrap: Int64 = 1 << 33
        let segments = try TestStreams.segments(profile: "180p", duration: 1, count: 3, startPTS: wrap - 90_000)
        #expect(segments.map(\.segment.startPTS) == [wrap - 90_000, 0, 90_000])
        let timestamps = segments.flatMap { $0.video.compactMap(\.pts) }
        for (previous, next) in zip(timestamps, timestamps.dropFirst()) {
            #expect(MPEGTimestamp.wrapped(next - previous) == 3600)
        }
        #expect(segments[1].video.first?.pts == 0)
        // A start PTS given outside 0 ..< 2^33 is taken modulo 2^33.
        let negative = try TestStreams.segments(profile: "180p", duration: 1, count: 1, startPTS: -90_000)
        #expect(negative[0].segment.startPTS == wrap - 90_000)
    }
}
