import ContinuousTSInput
import Foundation
import Synchronization
import HLSPackaging
import LiveTimeline
import Logging
import MediaProbe
import OriginCore
import SharedBytes
import TestSource
import TestSupport
import Testing

/// An SRT caller's end cuts its last PES packets short (libsrt drops what its receive buffer holds, up to the latency,
/// when the caller closes): the segment that end closes, and its LL parts, hold no PES cut short (issue 31). On the
/// manual clock, the test source's stream cut inside an AAC PES and a video access unit.
@Suite struct CutShortLastPESTests {
    let support = ContinuousTSIngestTests()

    /// The first packets of a test source segment, up to and including the first packet of its `audioPES`-th AAC PES
    /// (one spanning several packets): that PES and the video access unit in progress are cut short.
    static func cutInsideAnAudioPES(_ bytes: [UInt8], audioPES: Int) throws -> (bytes: [UInt8], audioPID: Int) {
        let contents = try TransportStreamContents(bytes)
        let audio = try #require(contents.streams.first { $0.streamType == 0x0F }).pid
        let packets = try TransportStreamReader.packets(bytes)
        var starts = 0
        for (position, packet) in packets.enumerated() where Int(packet.pid) == audio && packet.payloadUnitStart {
            starts += 1
            // The PES goes on in a later packet of its PID: cutting after this one leaves it short.
            guard starts >= audioPES,
                packets[(position + 1)...].first(where: { Int($0.pid) == audio }).map({ !$0.payloadUnitStart })
                    ?? false
            else { continue }
            return (Array(bytes[..<((packet.index + 1) * 188)]), audio)
        }
        throw CutError()
    }

    struct CutError: Error {}

    /// Feeds 5 s of the test source, then the next second cut short inside an AAC PES, then closes the session
    /// (the caller ended) and lets the slot close. Returns the origin, the audio PID and the media sequence number
    /// of the last segment listed before the cut-short second.
    /// - Parameter watchHints: Low-Latency: each preload-hinted part is watched as a client's request would be.
    func feedAndCutShort(
        lowLatency: Bool, watchHints: HintWatchers? = nil
    ) throws -> (origin: Origin, audioPID: Int, msnBefore: UInt64) {
        let clock = ManualClock()
        let origin = try support.makeOrigin(clock: clock, lowLatency: lowLatency)
        let ingest = ContinuousTSIngest(origin: origin, logger: Logger(label: "test"))
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 1)
        let session = try ingest.open(channel: "ch", rendition: "360p", peer: "127.0.0.1:5000")
        support.feed(session, &generator, seconds: 5, clock: clock, origin: origin)
        let before = try #require(origin.channel(named: "ch")?.snapshot.renditions["360p"]?.entries.last { !$0.isGap })
        let (cut, audio) = try Self.cutInsideAnAudioPES(generator.nextSegment().bytes, audioPES: 12)
        for start in stride(from: 0, to: cut.count, by: 1316) {
            clock.advance(microseconds: 20_000)
            Array(cut[start..<min(start + 1316, cut.count)]).withUnsafeBytes { session.receive($0) }
            if let watchHints, let channel = origin.channel(named: "ch") { watchHints.watchHint(of: channel) }
        }
        session.close(reason: "disconnected")
        clock.advance(seconds: 2)
        origin.tick()
        #expect(session.status.segmentsRefused == 0, "\(session.status.lastRefusal ?? "")")
        return (origin, audio, before.msn)
    }

    /// The last segment's bytes decode with ffmpeg at `-v error` without a word, every AAC PES in it holds whole
    /// ADTS frames, and it keeps its PAT, PMT and video.
    func expectWholeLastSegment(_ origin: Origin, audioPID: Int, msnBefore: UInt64) async throws -> WindowEntry {
        let entries = try #require(origin.channel(named: "ch")?.snapshot.renditions["360p"]?.entries)
        let last = try #require(entries.last { !$0.isGap })
        // The segment the caller's end closed is listed.
        #expect(last.msn > msnBefore)
        let bytes = try #require(last.bytes).array
        let contents = try TransportStreamContents(bytes)
        #expect(contents.streams.count == 2)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cut-short-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(bytes).write(to: directory.appendingPathComponent("last.ts"))
        let decoded = try await ChildProcess.run(
            "ffmpeg", ["-nostdin", "-v", "error", "-i", "last.ts", "-f", "null", "-"], in: directory)
        #expect(decoded.status == 0)
        #expect(decoded.standardError.isEmpty, "the last segment: \(decoded.standardError)")
        for pes in contents.pesPackets[audioPID] ?? [] {
            let frames = try? TransportStreamReader.adtsFrameLengths(pes.payload)
            #expect(frames?.reduce(0, +) == pes.payload.count, "an AAC PES cut short: \(pes.payload.count) bytes")
        }
        let info = try MediaProbe.probeSegment(bytes)
        #expect(info.tracks.map(\.kind) == [.video, .audio])
        return last
    }

    /// Low-Latency parts watched through their preload hints, as a client's request for the hinted part is fed.
    final class HintWatchers: Sendable {
        /// Per watched part: the bytes heard and how it ended (nil: not yet).
        let heard = Mutex<[PartPosition: (bytes: [UInt8], end: PartProgress?)]>([:])

        func watchHint(of channel: Channel) {
            guard let hint = channel.snapshot.renditions["360p"]?.lowLatency?.preloadHint,
                heard.withLock({ $0[hint] == nil })
            else { return }
            heard.withLock { $0[hint] = ([], nil) }
            _ = channel.watchPart(rendition: "360p", position: hint, deadlineMilliseconds: .max) { progress in
                self.heard.withLock { heard in
                    if case .bytes(let bytes) = progress {
                        heard[hint]?.bytes += bytes.array
                    } else {
                        heard[hint]?.end = progress
                    }
                }
            }
        }
    }

    @Test func theSegmentTheCallersEndClosesHoldsNoPESCutShort() async throws {
        let (origin, audio, before) = try feedAndCutShort(lowLatency: false)
        _ = try await expectWholeLastSegment(origin, audioPID: audio, msnBefore: before)
    }

    @Test func onALowLatencyChannelTheLastSegmentAndItsPartsHoldNoPESCutShort() async throws {
        let watchers = HintWatchers()
        let (origin, audio, before) = try feedAndCutShort(lowLatency: true, watchHints: watchers)
        let last = try await expectWholeLastSegment(origin, audioPID: audio, msnBefore: before)
        // Its parts, as listed, are the segment's bytes: none holds what the segment dropped.
        let rendition = try #require(origin.channel(named: "ch")?.snapshot.renditions["360p"])
        let parts = try #require(rendition.lowLatency?.parts[last.msn])
        #expect(!parts.isEmpty)
        #expect(parts.flatMap { $0.bytes?.array ?? [] } == last.bytes?.array)
        // A client reading a part through its hint got it as listed, or, for the last part, whose streamed bytes
        // held the packets left out, a failed response (it asks again and gets the part as listed).
        let heard = watchers.heard.withLock { $0 }
        let lastPart = PartPosition(msn: last.msn, part: parts.count - 1)
        #expect(heard.count >= 2)
        for (position, watched) in heard {
            let listed = rendition.lowLatency?.part(position)?.bytes?.array
            let same = watched.bytes == listed
            let sizes = "part \(position): heard \(watched.bytes.count) bytes, listed \(listed?.count ?? 0)"
            switch watched.end {
            case .complete: #expect(same, "\(sizes)")
            case .failed: #expect(position == lastPart && !same, "\(sizes)")
            default: Issue.record("part \(position): the watch did not end")
            }
        }
        #expect(heard[lastPart].map { if case .failed = $0.end { true } else { false } } == true)
    }
}
