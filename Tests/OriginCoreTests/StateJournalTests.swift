import Foundation
import HLSPackaging
import HLSPlaylist
import HTTPPushInput
import LiveTimeline
import Logging
import OriginCore
import SharedBytes
import TestSource
import TestSupport
import Testing

@Suite("State journal: restarts lose nothing", .offThePool)
struct StateJournalTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID().uuidString)").path

    func makeOrigin(clock: ManualClock) throws -> Origin {
        let channel = ChannelConfiguration(name: "ch", renditions: [.init(name: "360p"), .init(name: "180p")])
        return try Origin(
            configuration: OriginConfiguration(channels: [channel], dataDirectory: directory), clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    func playlist(_ origin: Origin, _ rendition: String) throws -> MediaPlaylist {
        let bytes = try #require(origin.channel(named: "ch")?.snapshot.renditions[rendition]?.playlist)
        return try MediaPlaylist.parse(String(decoding: bytes.array, as: UTF8.self))
    }

    /// The segment store restores the window (see `DurableRestartTests`); when it is lost, the journal alone still
    /// keeps MSNs, discontinuity sequence and PDT going forward.
    @Test func withoutTheSegmentStoreARestartContinuesAboveTheLastMSNWithADiscontinuityAndMonotonicPDT() throws {
        let clock = ManualClock()
        var generators = try ["360p", "180p"].map {
            ($0, try TestStreamGenerator(profile: TestSourceProfile.named($0)!, segmentDuration: 2))
        }
        func pushSlot(_ origin: Origin) throws {
            clock.advance(seconds: 2)
            for i in generators.indices {
                _ = try origin.ingest(
                    channel: "ch", rendition: generators[i].0, fileName: "s.ts",
                    body: SharedBytes(generators[i].1.nextSegment().bytes))
            }
            origin.tick()
        }
        var origin: Origin? = try makeOrigin(clock: clock)
        for _ in 0..<8 { try pushSlot(origin!) }
        let before = try playlist(origin!, "360p")
        let lastBefore = before.mediaSequence + UInt64(before.segments.count) - 1
        origin = nil  // the process ends
        try FileManager.default.removeItem(atPath: directory + "/store")  // and its segment store is lost
        clock.advance(seconds: 30)  // down for 30 s
        let restarted = try makeOrigin(clock: clock)
        #expect(restarted.channel(named: "ch")?.snapshot.renditions["360p"]?.playlist == nil)
        for _ in 0..<3 { try pushSlot(restarted) }
        for rendition in ["360p", "180p"] {
            let after = try playlist(restarted, rendition)
            #expect(after.mediaSequence > lastBefore)
            #expect(after.segments.first?.discontinuity == true)
            #expect(after.segments.count == 3, "the 30 s the origin was down are not back-filled")
            #expect(after.discontinuitySequence >= before.discontinuitySequence)
            #expect(after.segments.first!.programDateTime! > before.segments.last!.programDateTime!)
            let hasGap = after.segments.contains { $0.gap }
            #expect(!hasGap)
        }
        let a = try playlist(restarted, "360p")
        let b = try playlist(restarted, "180p")
        #expect(a.mediaSequence == b.mediaSequence)
        let status = try #require(restarted.channel(named: "ch")?.status())
        #expect(status.journal?.contains("continued from the journal") == true)
    }

    /// A crash can come at any moment: after every push, the files on disk are what a new process would find.
    @Test func noMSNIsEverReusedWhateverTheMomentOfTheCrash() throws {
        let clock = ManualClock()
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 2)
        let origin = try makeOrigin(clock: clock)
        let journalPath = directory + "/channels/ch.state.json"
        for _ in 0..<80 {
            clock.advance(seconds: 2)
            let receipt = try origin.ingest(
                channel: "ch", rendition: "360p", fileName: "s.ts", body: SharedBytes(generator.nextSegment().bytes))
            let published = try #require(receipt.msn)
            // What a process started right now would do with the journal as it is on disk.
            let copy = FileManager.default.temporaryDirectory.appendingPathComponent("crash-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: copy + "/channels", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: journalPath, toPath: copy + "/channels/ch.state.json")
            let reborn = try Origin(
                configuration: OriginConfiguration(
                    channels: [ChannelConfiguration(name: "ch", renditions: [.init(name: "360p")])],
                    dataDirectory: copy),
                clock: clock, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            var next = generator
            clock.advance(seconds: 2)
            let first = try reborn.ingest(
                channel: "ch", rendition: "360p", fileName: "s.ts", body: SharedBytes(next.nextSegment().bytes))
            let reused = try #require(first.msn)
            #expect(reused > published)
            try? FileManager.default.removeItem(atPath: copy)
        }
        #expect(!FileManager.default.fileExists(atPath: journalPath + ".tmp"))
    }

    @Test(arguments: ["", "{\"version\":1,\"chan", "not json at all", "{\"version\":2,\"channel\":\"ch\"}"])
    func tornOrCorruptJournalIsReportedAndNeverReusesAnMSN(content: String) throws {
        let clock = ManualClock()
        try FileManager.default.createDirectory(atPath: directory + "/channels", withIntermediateDirectories: true)
        try Data(content.utf8).write(to: URL(fileURLWithPath: directory + "/channels/ch.state.json"))
        let origin = try makeOrigin(clock: clock)
        let status = try #require(origin.channel(named: "ch")?.status())
        #expect(status.journal?.contains("unreadable") == true)
        var generator = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 2)
        clock.advance(seconds: 2)
        let receipt = try origin.ingest(
            channel: "ch", rendition: "360p", fileName: "s.ts", body: SharedBytes(generator.nextSegment().bytes))
        // One MSN per second since 2020-09-13 is more than any channel of >= 1 s segments can have published.
        let floor = UInt64(clock.nowMilliseconds() / 1000 - 1_600_000_000) - 2
        let msn = try #require(receipt.msn)
        #expect(msn >= floor)
    }

    /// After a restart one rendition's encoder reconnects a slot later: both still give every MSN the same
    /// discontinuity sequence number.
    @Test func aRenditionJoiningASlotLaterTakesTheChannelsDiscontinuitySequence() throws {
        let clock = ManualClock()
        var generators = try ["360p", "180p"].map {
            ($0, try TestStreamGenerator(profile: TestSourceProfile.named($0)!, segmentDuration: 2))
        }
        var origin: Origin? = try makeOrigin(clock: clock)
        for _ in 0..<6 {
            clock.advance(seconds: 2)
            for i in generators.indices {
                _ = try origin!.ingest(
                    channel: "ch", rendition: generators[i].0, fileName: "s.ts",
                    body: SharedBytes(generators[i].1.nextSegment().bytes))
            }
            origin!.tick()
        }
        origin = nil
        clock.advance(seconds: 10)
        let restarted = try makeOrigin(clock: clock)
        for round in 0..<5 {
            clock.advance(seconds: 2)
            for i in generators.indices {
                let segment = generators[i].1.nextSegment()
                // 180p's encoder comes back one slot later than 360p's.
                if round == 0, generators[i].0 == "180p" { continue }
                _ = try restarted.ingest(
                    channel: "ch", rendition: generators[i].0, fileName: "s.ts", body: SharedBytes(segment.bytes))
            }
            restarted.tick()
        }
        let a = try playlist(restarted, "360p")
        let b = try playlist(restarted, "180p")
        func domains(_ p: MediaPlaylist) -> [UInt64: UInt64] {
            var domain = p.discontinuitySequence
            var out: [UInt64: UInt64] = [:]
            for (offset, segment) in p.segments.enumerated() {
                if segment.discontinuity { domain += 1 }
                out[p.mediaSequence + UInt64(offset)] = domain
            }
            return out
        }
        let da = domains(a)
        let db = domains(b)
        #expect(!db.isEmpty)
        for (msn, domain) in db { #expect(da[msn] == domain, "msn \(msn): 360p \(da[msn] ?? 0), 180p \(domain)") }
    }
}
