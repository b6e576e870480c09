import ContinuousTSInput
import Foundation
import HLSPackaging
import HLSPlaylist
import Logging
import OriginCore
import TestSource
import TestSupport
import Testing

/// What a continuous input tells the timeline of its feed (issue 31, part 3), on the manual clock: a closed stream
/// is a feed drop at once, and silence is measured on media, not on bytes.
@Suite(.offThePool) struct ContinuousTSFeedStateTests {
    let support = ContinuousTSIngestTests()

    func feedState(_ origin: Origin) throws -> String {
        try #require(origin.channel(named: "ch")?.status().renditions.first { $0.name == "360p" }).feed
    }

    /// An origin on the manual clock and a session fed `seconds` of the test source (1 s GOPs, 2 s slots).
    func streaming(
        seconds: Int
    ) throws -> (clock: ManualClock, origin: Origin, session: ContinuousTSSession, generator: TestStreamGenerator) {
        let clock = ManualClock()
        let origin = try support.makeOrigin(clock: clock)
        let ingest = ContinuousTSIngest(origin: origin, logger: Logger(label: "test"))
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 1)
        let session = try ingest.open(channel: "ch", rendition: "360p", peer: "127.0.0.1:5000")
        support.feed(session, &generator, seconds: seconds, clock: clock, origin: origin)
        return (clock, origin, session, generator)
    }

    @Test func aClosedStreamIsAFeedDropAtOnceAndTheNextSlotIsAGap() throws {
        let (clock, origin, session, _) = try streaming(seconds: 7)
        #expect(try feedState(origin) == "live")
        // The caller disconnects: no slot has closed since, and the status already says the feed dropped.
        session.close(reason: "disconnected")
        #expect(try feedState(origin) == "dropped")
        // The slots after its last segment are GAP entries once due.
        for _ in 0..<6 {
            clock.advance(seconds: 1)
            origin.tick()
        }
        let segments = try support.playlist(origin).segments
        let firstGap = try #require(segments.firstIndex { $0.gap })
        #expect(firstGap >= 3)
        #expect(segments.count - firstGap >= 2)
        #expect(segments[firstGap...].allSatisfy { $0.gap })
        #expect(try feedState(origin) == "dropped")
    }

    @Test func anOriginShuttingDownIsNotAFeedDrop() throws {
        let (_, origin, session, _) = try streaming(seconds: 5)
        session.close(reason: "shutdown", feedDrop: false)
        #expect(try feedState(origin) == "live")
    }

    /// A CBR encoder whose source died keeps sending null packets and its PAT/PMT: bytes, but no media.
    @Test func nullPacketsAndTablesAreSilenceAndMediaEndsIt() throws {
        var (clock, origin, session, generator) = try streaming(seconds: 3)
        #expect(session.silentMilliseconds < 500)
        let tables = Self.tables(of: generator.nextSegment().bytes)
        #expect(tables.count == 2 * 188)
        let bytesBefore = session.status.bytesReceived
        var counter: UInt8 = 0
        // 3 s of 1316-byte payloads every 10 ms: the tables every 100 ms, null packets otherwise.
        for step in 0..<300 {
            clock.advance(microseconds: 10_000)
            var payload: [UInt8] = step % 10 == 0 ? tables : []
            while payload.count < 1316 {
                payload += [0x47, 0x1F, 0xFF, 0x10 | counter] + [UInt8](repeating: 0xFF, count: 184)
                counter = (counter + 1) & 0x0F
            }
            payload.withUnsafeBytes { session.receive($0) }
        }
        #expect(session.status.bytesReceived > bytesBefore + 300 * 1000)
        #expect(session.silentMilliseconds >= 2_900)
        support.feed(session, &generator, seconds: 1, clock: clock, origin: origin)
        #expect(session.silentMilliseconds < 500)
    }

    /// The PAT and PMT packets of a TS (the PMT's PID read from the PAT).
    static func tables(of bytes: [UInt8]) -> [UInt8] {
        func pid(_ at: Int) -> Int { Int(bytes[at + 1] & 0x1F) << 8 | Int(bytes[at + 2]) }
        let packets = stride(from: 0, to: bytes.count - 187, by: 188)
        guard let pat = packets.first(where: { pid($0) == 0 }) else { return [] }
        // PAT: pointer field, then the section; the first program's PMT PID at section offset 10.
        let section = pat + 4 + 1 + Int(bytes[pat + 4])
        let pmt = Int(bytes[section + 10] & 0x1F) << 8 | Int(bytes[section + 11])
        return [pat, packets.first { pid($0) == pmt }].compactMap { $0 }.flatMap { bytes[$0..<($0 + 188)] }
    }
}
