import ContinuousTSInput
import Foundation
import HLSPackaging
import HLSPlaylist
import LiveTimeline
import Logging
import MediaProbe
import OriginCore
import SharedBytes
import TSSegmenter
import TestSource
import TestSupport
import Testing

/// A continuous stream fed through `ContinuousTSIngest` into a real origin (store on disk), on the manual clock.
@Suite(.offThePool) struct ContinuousTSIngestTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("continuous-\(UUID().uuidString)").path

    func makeOrigin(clock: ManualClock, lowLatency: Bool = false, segmentDuration: Double = 2) throws -> Origin {
        var channel = ChannelConfiguration(
            name: "ch", renditions: [.init(name: "360p")], segmentDuration: segmentDuration)
        if lowLatency { channel.lowLatency = LowLatencyConfiguration(partTarget: 0.5) }
        return try Origin(
            configuration: OriginConfiguration(channels: [channel], dataDirectory: directory), clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    func playlist(_ origin: Origin) throws -> MediaPlaylist {
        let bytes = try #require(origin.channel(named: "ch")?.snapshot.renditions["360p"]?.playlist)
        return try MediaPlaylist.parse(String(decoding: bytes.array, as: UTF8.self))
    }

    /// Feeds `seconds` of the test source, 1316 bytes (an SRT payload) at a time, the clock following the media.
    func feed(
        _ session: ContinuousTSSession, _ generator: inout TestStreamGenerator, seconds: Int, clock: ManualClock,
        origin: Origin
    ) {
        for _ in 0..<seconds {
            let bytes = generator.nextSegment().bytes
            let chunks = stride(from: 0, to: bytes.count, by: 1316).map { Array(bytes[$0..<min($0 + 1316, bytes.count)]) }
            for chunk in chunks {
                clock.advance(microseconds: 1_000_000 / Int64(chunks.count))
                chunk.withUnsafeBytes { session.receive($0) }
            }
            origin.tick()
        }
    }

    @Test func aContinuousStreamIsListedAsSegmentsCutOnTheChannelsClock() throws {
        let clock = ManualClock()
        let origin = try makeOrigin(clock: clock)
        let ingest = ContinuousTSIngest(origin: origin, logger: Logger(label: "test"))
        let session = try ingest.open(channel: "ch", rendition: "360p", peer: "127.0.0.1:5000")
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 1)
        feed(session, &generator, seconds: 12, clock: clock, origin: origin)
        let status = session.status
        #expect(status.segmentsRefused == 0, "\(status.lastRefusal ?? "")")
        #expect(status.segmentsAccepted >= 4)
        let list = try playlist(origin)
        #expect(list.segments.count >= 4)
        // Whole segments are 2 s (the first may be shorter: it starts at the stream's first keyframe).
        #expect(list.segments.dropFirst().allSatisfy { abs($0.duration - 2) < 0.01 })
        #expect(!list.segments.contains { $0.discontinuity })
        #expect(ingest.sessions(channel: "ch")["360p"]?.segmentsAccepted == status.segmentsAccepted)
        session.close(reason: "disconnected")
        #expect(ingest.sessions(channel: "ch").isEmpty)
    }

    @Test func aKeyframeIntervalLongerThanTheSegmentsShowsInTheSessionStatus() throws {
        let clock = ManualClock()
        // 0.5 s segments against the test source's 1 s GOP.
        let origin = try makeOrigin(clock: clock, segmentDuration: 0.5)
        let ingest = ContinuousTSIngest(origin: origin, logger: Logger(label: "test"))
        let session = try ingest.open(channel: "ch", rendition: "360p", peer: "127.0.0.1:5000")
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 1)
        feed(session, &generator, seconds: 4, clock: clock, origin: origin)
        let warning = try #require(ingest.sessions(channel: "ch")["360p"]?.segmenter.keyframeWarning)
        #expect(warning.contains("-g 12"))
    }

    @Test func aSecondSessionAfterACloseResumesWithADiscontinuity() throws {
        let clock = ManualClock()
        let origin = try makeOrigin(clock: clock)
        let ingest = ContinuousTSIngest(origin: origin, logger: Logger(label: "test"))
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 1)
        let first = try ingest.open(channel: "ch", rendition: "360p", peer: "127.0.0.1:5000")
        feed(first, &generator, seconds: 7, clock: clock, origin: origin)
        first.close(reason: "disconnected")
        // The encoder comes back a second later on a new timeline.
        clock.advance(seconds: 1)
        generator.restartTimestamps(startPTS: 900_000)
        let second = try ingest.open(channel: "ch", rendition: "360p", peer: "127.0.0.1:5001")
        feed(second, &generator, seconds: 7, clock: clock, origin: origin)
        let list = try playlist(origin)
        #expect(list.segments.filter(\.discontinuity).count == 1)
        #expect(second.status.segmentsRefused == 0, "\(second.status.lastRefusal ?? "")")
    }

    @Test func aSecondSessionStartsADiscontinuityEvenWhenItsTimestampsContinue() throws {
        let clock = ManualClock()
        let origin = try makeOrigin(clock: clock)
        let ingest = ContinuousTSIngest(origin: origin, logger: Logger(label: "test"))
        // PTS from 0: keyframes on the 2 s slot boundaries, so the second session's first segment starts exactly
        // where the first session's last one ended (6 s): nothing in the timestamps says the stream broke.
        var generator = try TestStreamGenerator(
            profile: TestSourceProfile.named("360p")!, segmentDuration: 1, startPTS: 0)
        let first = try ingest.open(channel: "ch", rendition: "360p", peer: "127.0.0.1:5000")
        feed(first, &generator, seconds: 6, clock: clock, origin: origin)
        first.close(reason: "disconnected")
        let second = try ingest.open(channel: "ch", rendition: "360p", peer: "127.0.0.1:5001")
        feed(second, &generator, seconds: 5, clock: clock, origin: origin)
        let list = try playlist(origin)
        let index = try #require(list.segments.firstIndex { $0.discontinuity })
        #expect(list.segments.filter(\.discontinuity).count == 1)
        // The segment after the break continues the timestamps: only the session says it is a discontinuity.
        #expect(index >= 3)
        #expect(list.segments.allSatisfy { abs($0.duration - 2) < 0.01 })
        #expect(second.status.segmentsRefused == 0, "\(second.status.lastRefusal ?? "")")
    }

    /// One caller's stream mapped into a video and an audio rendition (`srt: { from: main, type: ... }`) on a
    /// Low-Latency channel: both list parts and a preload hint, on the same segment numbers and dates, each segment's
    /// parts numbered from 0 and adding up to it, each hint the part after the rendition's last, and no rendition
    /// report ahead of the rendition it names, and no part out of rule 38's bounds. (The part counts differ: a video
    /// part ends before its 13th frame would pass the 0.5 s target, or at a keyframe once it has 85 % of the target,
    /// an audio one at a PES of 4 AAC frames; HLS asks no more.)
    @Test func aLowLatencyStreamMappedIntoVideoAndAudioRenditionsListsAlignedPartsAndHintsInBoth() throws {
        let clock = ManualClock()
        var channel = ChannelConfiguration(
            name: "ch",
            renditions: [
                .init(name: "main", srt: StreamSelection(from: "main", kind: .video)),
                .init(
                    name: "en", audio: MediaGroupMembership(group: "aud", language: "en", isDefault: true),
                    srt: StreamSelection(from: "main", kind: .audio)),
            ], segmentDuration: 2)
        channel.lowLatency = LowLatencyConfiguration(partTarget: 0.5)
        let origin = try Origin(
            configuration: OriginConfiguration(channels: [channel], dataDirectory: directory), clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let ingest = ContinuousTSIngest(origin: origin, logger: Logger(label: "test"))
        let sessions = try ingest.openAll(channel: "ch", rendition: "main", peer: "127.0.0.1:5000")
        #expect(sessions.map(\.rendition).sorted() == ["en", "main"])
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 1)
        for second in 0..<10 {
            let bytes = generator.nextSegment().bytes
            let chunks = stride(from: 0, to: bytes.count, by: 1316).map {
                Array(bytes[$0..<min($0 + 1316, bytes.count)])
            }
            for chunk in chunks {
                clock.advance(microseconds: 1_000_000 / Int64(chunks.count))
                for session in sessions { chunk.withUnsafeBytes { session.receive($0) } }
            }
            origin.tick()
            // Checked mid-segment (the video's open segment has parts) and at the end of one.
            guard second >= 6 else { continue }
            let snapshot = try #require(origin.channel(named: "ch")?.snapshot)
            var lists: [String: MediaPlaylist] = [:]
            var texts: [String: String] = [:]
            for rendition in ["main", "en"] {
                let bytes = try #require(snapshot.renditions[rendition]?.playlist)
                texts[rendition] = String(decoding: bytes.array, as: UTF8.self)
                lists[rendition] = try MediaPlaylist.parse(texts[rendition]!)
            }
            let both = "main:\n\(texts["main"]!)\nen:\n\(texts["en"]!)"
            let video = try #require(lists["main"])
            let audio = try #require(lists["en"])
            // The same segments, with the same dates.
            #expect(video.mediaSequence == audio.mediaSequence, "\(both)")
            #expect(video.segments.map(\.uri) == audio.segments.map(\.uri), "\(both)")
            #expect(video.segments.map(\.programDateTime) == audio.segments.map(\.programDateTime), "\(both)")
            #expect(video.segments.count >= 2, "\(both)")
            for (rendition, list) in lists {
                let msns = (0..<list.segments.count).map { Int(list.mediaSequence) + $0 }
                let withParts = zip(msns, list.segments).filter { !$0.1.parts.isEmpty }
                #expect(withParts.count >= 2, "\(rendition) lists parts of fewer than 2 segments:\n\(both)")
                // Each part within PART-TARGET, and at least 85 % of it unless independent, gap or last (rule 38).
                let outOfBounds = list.validatePartDurations()
                #expect(outOfBounds.isEmpty, "\(rendition): \(outOfBounds)\n\(both)")
                // Each segment's parts are numbered from 0 and add up to the segment.
                for (msn, segment) in withParts {
                    #expect(segment.parts.map(\.uri) == segment.parts.indices.map { "\(msn).\($0).ts" }, "\(both)")
                    let total = segment.parts.reduce(0) { $0 + $1.duration }
                    #expect(abs(total - segment.duration) < 0.005, "\(rendition) \(msn): \(total)\n\(both)")
                }
                // The hint names the part after the last one listed: the open segment's next, or the first of the
                // segment after it once its parts are complete (audio ends at the frame nearest the boundary).
                let next = Int(list.mediaSequence) + list.segments.count
                let open = list.segmentInProgress?.parts ?? []
                #expect(open.map(\.uri) == open.indices.map { "\(next).\($0).ts" }, "\(both)")
                let hints = list.preloadHints.filter { $0.type == .part }.map(\.uri)
                let expected = open.isEmpty ? ["\(next).0.ts"] : ["\(next).\(open.count).ts", "\(next + 1).0.ts"]
                #expect(hints.count == 1 && expected.contains(hints[0]), "\(rendition):\n\(both)")
            }
            // Each rendition's report of the other is never ahead of the other's last listed part (a player would
            // block on it); it may lag: a rendition's playlist, reports included, is rendered when it changes.
            for (rendition, other) in [("main", "en"), ("en", "main")] {
                let otherList = lists[other]!
                let report = try #require(
                    lists[rendition]!.renditionReports.first { $0.uri == "../\(other)/index.m3u8" })
                let lastMSN = Int(otherList.mediaSequence) + otherList.segments.count - 1
                let open = otherList.segmentInProgress?.parts.count ?? 0
                let last = open > 0 ? [lastMSN + 1, open - 1] : [lastMSN, otherList.segments.last!.parts.count - 1]
                let reported = [Int(report.lastMSN), report.lastPart ?? -1]
                let context = "\(rendition)'s report of \(other):\n\(both)"
                #expect(reported.lexicographicallyPrecedes(last) || reported == last, "\(context)")
                #expect(reported[0] >= last[0] - 1, "\(context)")
            }
        }
        for session in sessions {
            #expect(session.status.segmentsRefused == 0, "\(session.rendition): \(session.status.lastRefusal ?? "")")
        }
    }

    @Test func aLowLatencyChannelListsPartsAsTheBytesArrive() throws {
        let clock = ManualClock()
        let origin = try makeOrigin(clock: clock, lowLatency: true)
        let ingest = ContinuousTSIngest(origin: origin, logger: Logger(label: "test"))
        let session = try ingest.open(channel: "ch", rendition: "360p", peer: "127.0.0.1:5000")
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 1)
        feed(session, &generator, seconds: 7, clock: clock, origin: origin)
        #expect(session.status.segmentsRefused == 0, "\(session.status.lastRefusal ?? "")")
        let text = try String(
            decoding: #require(origin.channel(named: "ch")?.snapshot.renditions["360p"]?.playlist).array, as: UTF8.self)
        #expect(text.contains("#EXT-X-PART:"))
        #expect(text.contains("#EXT-X-PRELOAD-HINT:TYPE=PART"))
        #expect(try playlist(origin).segments.count >= 2)
        #expect(try playlist(origin).validatePartDurations() == [], "\(text)")
    }
}
