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

/// Segments are durable before they are acknowledged; a restart (kill -9 or not) restores every channel's window
/// from the store: same MSNs, URIs, PDTs, discontinuity sequences and bytes, before any encoder pushes again.
@Suite("Durable store: a restart players do not notice", .offThePool)
struct DurableRestartTests {
    let directory: String
    let clock = ManualClock()
    var generators: [String: TestStreamGenerator] = [:]
    let renditions = ["360p", "180p"]

    init() throws {
        directory = try TemporaryDirectory.make("durable").path
        for rendition in renditions {
            generators[rendition] = try TestStreamGenerator(
                profile: TestSourceProfile.named(rendition)!, segmentDuration: 2)
        }
    }

    /// A new origin process on the data directory (the previous one is simply dropped: nothing is flushed, as after
    /// kill -9).
    func start(autoCreate: Bool = true, configured: Bool = true, outage: OutageMode = .gap) throws -> Origin {
        var channel = ChannelConfiguration(name: "ch", renditions: renditions.map { .init(name: $0) })
        channel.window = .segments(6)
        channel.outage = outage
        return try Origin(
            configuration: OriginConfiguration(
                channels: configured ? [channel] : [], ingest: IngestConfiguration(autoCreate: autoCreate),
                dataDirectory: directory),
            clock: clock, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    /// Lets 2 s pass and pushes one segment to each rendition not in `dropping` (their media is lost), then ticks.
    mutating func slot(_ origin: Origin, dropping: [String] = []) throws {
        clock.advance(seconds: 2)
        for rendition in renditions {
            let bytes = SharedBytes(generators[rendition]!.nextSegment().bytes)
            guard !dropping.contains(rendition) else { continue }
            _ = try origin.ingest(channel: "ch", rendition: rendition, fileName: "s.ts", body: bytes)
        }
        origin.tick()
    }

    func text(_ origin: Origin, _ rendition: String) -> String? {
        origin.channel(named: "ch")?.snapshot.renditions[rendition]?.playlist.map {
            String(decoding: $0.array, as: UTF8.self)
        }
    }

    func playlist(_ origin: Origin, _ rendition: String) throws -> MediaPlaylist {
        try MediaPlaylist.parse(try #require(text(origin, rendition)))
    }

    func entries(_ origin: Origin, _ rendition: String) -> [WindowEntry] {
        origin.channel(named: "ch")?.snapshot.renditions[rendition]?.entries ?? []
    }

    @Test mutating func slateSegmentsAreListedAndServedTheSameAfterARestart() throws {
        var origin: Origin? = try start(outage: .slate)
        for n in 0..<12 { try slot(origin!, dropping: n == 8 || n == 9 ? ["180p"] : []) }
        let before = renditions.map { (text(origin!, $0), entries(origin!, $0)) }
        #expect(before[1].1.contains { $0.isSlate })
        origin = nil
        let restarted = try start(outage: .slate)
        for (i, rendition) in renditions.enumerated() {
            let (beforeText, beforeEntries) = before[i]
            #expect(text(restarted, rendition) == beforeText, "\(rendition): the playlist changed across the restart")
            #expect(beforeText?.contains("#EXT-X-GAP") == false)
            let after = try #require(restarted.channel(named: "ch")?.snapshot.renditions[rendition])
            for entry in beforeEntries {
                let restored = try #require(after.entry(msn: entry.msn), "\(rendition) msn \(entry.msn) lost")
                #expect(restored.bytes == entry.bytes, "\(rendition) msn \(entry.msn): bytes differ")
                #expect(restored.isSlate == entry.isSlate)
            }
        }
    }

    @Test mutating func aRestartListsTheSameWindowWithTheSameBytes() throws {
        var origin: Origin? = try start()
        for n in 0..<12 { try slot(origin!, dropping: n == 8 || n == 9 ? ["180p"] : []) }
        let before = renditions.map { (text(origin!, $0), entries(origin!, $0)) }
        origin = nil
        let restarted = try start()
        for (i, rendition) in renditions.enumerated() {
            let (beforeText, beforeEntries) = before[i]
            #expect(text(restarted, rendition) == beforeText, "\(rendition): the playlist changed across the restart")
            let after = try #require(restarted.channel(named: "ch")?.snapshot.renditions[rendition])
            #expect(beforeEntries.count > 6, "retained entries were compared too")
            for entry in beforeEntries {
                let restored = try #require(after.entry(msn: entry.msn), "\(rendition) msn \(entry.msn) lost")
                #expect(restored.bytes == entry.bytes, "\(rendition) msn \(entry.msn): bytes differ")
                #expect(restored.isGap == entry.isGap)
                #expect(restored.programDateTimeMilliseconds == entry.programDateTimeMilliseconds)
                #expect(restored.durationMilliseconds == entry.durationMilliseconds)
            }
        }
        let gaps = try playlist(restarted, "180p").segments.filter(\.gap).count
        #expect(gaps >= 1, "the encoder outage's GAP entries are restored as GAP entries")
    }

    @Test mutating func downtimeBecomesGapEntriesAndTheReturningEncoderStartsADiscontinuity() throws {
        var origin: Origin? = try start()
        for _ in 0..<8 { try slot(origin!) }
        let before = try playlist(origin!, "360p")
        let lastBefore = before.mediaSequence + UInt64(before.segments.count) - 1
        origin = nil
        clock.advance(seconds: 10)
        let restarted = try start()
        for rendition in renditions {
            let listed = try playlist(restarted, rendition)
            let last = listed.mediaSequence + UInt64(listed.segments.count) - 1
            #expect(last >= lastBefore + 4, "\(rendition): 10 s down should be at least 4 GAP entries")
            let downtime = listed.segments.suffix(Int(last - lastBefore))
            let allGaps = downtime.allSatisfy { $0.gap }
            #expect(allGaps, "\(rendition): the downtime is GAP entries")
        }
        try slot(restarted)
        try slot(restarted)
        for rendition in renditions {
            let listed = try playlist(restarted, rendition)
            let firstNew = try #require(listed.segments.firstIndex { !$0.gap && $0.discontinuity })
            #expect(firstNew > 0 && listed.segments[firstNew - 1].gap)
            // PDT never goes back along the playlist.
            let dates = listed.segments.compactMap(\.programDateTime?.millisecondsSince1970)
            #expect(zip(dates, dates.dropFirst()).allSatisfy { $0 < $1 })
        }
    }

    /// A restart shorter than a slot leaves no GAP, and the encoder's next segment continues its media timeline: it
    /// still carries EXT-X-DISCONTINUITY in every rendition (the restarted origin cannot know what it missed), and
    /// what the old origin listed keeps its (absent) discontinuity.
    @Test mutating func aRestartWithoutDowntimeGapsStillStartsADiscontinuity() throws {
        var origin: Origin? = try start()
        for _ in 0..<8 { try slot(origin!) }
        let before = try playlist(origin!, "360p")
        let lastBefore = before.mediaSequence + UInt64(before.segments.count) - 1
        origin = nil
        clock.advance(seconds: 0.2)
        let restarted = try start()
        #expect(try playlist(restarted, "360p").segments.allSatisfy { !$0.gap }, "no downtime GAP")
        try slot(restarted)
        for rendition in renditions {
            let listed = try playlist(restarted, rendition)
            let first = listed.mediaSequence
            for (offset, segment) in listed.segments.enumerated() {
                let msn = first + UInt64(offset)
                #expect(!segment.gap, "\(rendition) msn \(msn)")
                #expect(segment.discontinuity == (msn == lastBefore + 1), "\(rendition) msn \(msn)")
            }
        }
    }

    @Test mutating func anAcknowledgedSegmentInAnOpenSlotSurvivesACrash() throws {
        var origin: Origin? = try start()
        for _ in 0..<4 { try slot(origin!) }
        clock.advance(seconds: 2)
        let bytes = SharedBytes(generators["360p"]!.nextSegment().bytes)
        let receipt = try origin!.ingest(channel: "ch", rendition: "360p", fileName: "s.ts", body: bytes)
        let msn = try #require(receipt.msn)
        #expect(origin!.channel(named: "ch")?.snapshot.renditions["360p"]?.entry(msn: msn) == nil, "still held")
        origin = nil
        let restarted = try start()
        clock.advance(seconds: 3)  // the slot's deadline passes: 180p gets a GAP, the slot is published
        restarted.tick()
        let entry = try #require(restarted.channel(named: "ch")?.snapshot.renditions["360p"]?.entry(msn: msn))
        #expect(entry.bytes == bytes)
        let gap = try #require(restarted.channel(named: "ch")?.snapshot.renditions["180p"]?.entry(msn: msn))
        #expect(gap.isGap)
    }

    @Test mutating func aCorruptSegmentIsNeverServedAndBecomesAGap() throws {
        var origin: Origin? = try start()
        for _ in 0..<6 { try slot(origin!) }
        let before = entries(origin!, "360p")
        origin = nil
        // Flip one byte in the middle of the 360p chunk file: one segment's bytes no longer match their CRC.
        let data = directory + "/store/ch/r/360p/data"
        let chunks = try FileManager.default.contentsOfDirectory(atPath: data)
        #expect(chunks == ["0.ts"])
        let chunk = data + "/0.ts"
        var contents = try #require(FileManager.default.contents(atPath: chunk))
        let middle = contents.count / 2
        contents[middle] ^= 0xFF
        try contents.write(to: URL(fileURLWithPath: chunk))
        let restarted = try start()
        let after = try #require(restarted.channel(named: "ch")?.snapshot.renditions["360p"])
        var gaps = 0
        for entry in before {
            guard let restored = after.entry(msn: entry.msn) else { continue }
            if restored.isGap {
                gaps += 1
            } else {
                #expect(restored.bytes == entry.bytes, "msn \(entry.msn): a segment is served with other bytes")
            }
        }
        #expect(gaps == 1, "exactly the corrupt segment becomes a GAP")
    }

    @Test mutating func aChannelCreatedByPushesIsRestoredBeforeAnyPush() throws {
        var origin: Origin? = try start(configured: false)
        for _ in 0..<5 { try slot(origin!) }
        let before = renditions.map { text(origin!, $0) }
        origin = nil
        let restarted = try start(configured: false)
        #expect(renditions.map { text(restarted, $0) } == before)
        #expect(restarted.channel(named: "ch")?.snapshot.multivariantPlaylist != nil)
        #expect(restarted.channel(named: "ch")?.renditionNames == renditions)
    }

    @Test mutating func aLongDowntimeStartsAboveEveryStoredMSNWithoutRestoringTheWindow() throws {
        var origin: Origin? = try start()
        for _ in 0..<6 { try slot(origin!) }
        let before = try playlist(origin!, "360p")
        let lastBefore = before.mediaSequence + UInt64(before.segments.count) - 1
        origin = nil
        clock.advance(seconds: 3600)
        let restarted = try start()
        #expect(text(restarted, "360p") == nil, "nothing from an hour ago is listed")
        try slot(restarted)
        try slot(restarted)
        let after = try playlist(restarted, "360p")
        #expect(after.mediaSequence > lastBefore)
        #expect(after.segments.first?.discontinuity == true)
        #expect(after.discontinuitySequence >= before.discontinuitySequence)
    }

    /// GAP entries that just left the window are still asked for by players that read an older playlist: their URLs
    /// answer the filler for their duration plus the window's (RFC 8216 section 6.2.2), before a crash and after it
    /// (a restart players do not notice). They used to be dropped at removal: `404 no segment` at once, and from
    /// the store after a restart too (a GAP record has no bytes).
    @Test mutating func gapEntriesJustRemovedFromTheWindowAnswerFillersBeforeAndAfterACrash() throws {
        var origin: Origin? = try start()
        // 180p misses four pushes; its GAP entries are listed, then the encoder is back until all of them left.
        for n in 0..<7 { try slot(origin!, dropping: n >= 3 ? ["180p"] : []) }
        let gaps = entries(origin!, "180p").filter(\.isGap).map(\.msn)
        #expect(gaps.count >= 3, "an outage of GAP entries")
        let lastGap = try #require(gaps.last)
        var slots = 0
        while try playlist(origin!, "180p").mediaSequence <= lastGap, slots < 20 {
            try slot(origin!)
            slots += 1
        }
        #expect(try playlist(origin!, "180p").mediaSequence == lastGap + 1, "the last GAP just left the playlist")
        func expectFillers(_ origin: Origin, _ when: String) throws {
            let rendition = try #require(origin.channel(named: "ch")?.snapshot.renditions["180p"])
            for msn in gaps {
                let entry = try #require(rendition.entry(msn: msn), "\(when): GAP msn \(msn) no longer answers")
                #expect(entry.isGap, "\(when): msn \(msn)")
                let filler = try #require(entry.filler, "\(when): GAP msn \(msn) answers 404")
                #expect(filler.count % 188 == 0 && filler.array.first == 0x47, "\(when): a transport stream")
            }
        }
        try expectFillers(origin!, "before the crash")
        origin = nil
        clock.advance(seconds: 1)
        let restarted = try start()
        // The downtime closed the open slot (a GAP in 180p): the window may have slid on, never back.
        #expect(try playlist(restarted, "180p").mediaSequence >= lastGap + 1, "no GAP entry listed again")
        try expectFillers(restarted, "after the restart")
    }

    @Test mutating func gapEntriesOfAnOutageLongerThanTheRestoredRangeStillAnswerFillers() throws {
        var origin: Origin? = try start()
        for n in 0..<30 { try slot(origin!, dropping: n >= 6 ? ["180p"] : []) }
        let before = entries(origin!, "180p")
        #expect(!before.isEmpty && before.allSatisfy { $0.isGap && $0.filler != nil }, "an outage with fillers")
        origin = nil
        let restarted = try start()
        let after = try #require(restarted.channel(named: "ch")?.snapshot.renditions["180p"])
        for entry in before {
            let restored = try #require(after.entry(msn: entry.msn), "msn \(entry.msn) lost")
            #expect(restored.isGap)
            let filler = try #require(restored.filler, "msn \(entry.msn): its URL answers 404 after the restart")
            #expect(filler.count % 188 == 0 && filler.array.first == 0x47, "a transport stream")
        }
    }

    /// BANDWIDTH and AVERAGE-BANDWIDTH are the peak and average of the listed segments, not a running figure since
    /// the process started: an origin restarted on its store states the same multivariant playlist as before, as
    /// its redundant peer does (a running peak lost a segment that had left the window).
    @Test mutating func theMultivariantPlaylistStatesTheSameRatesAfterARestart() throws {
        var origin: Origin? = try start()
        // A first segment three times the others' size (null packets pad it): the peak of the run.
        clock.advance(seconds: 2)
        for rendition in renditions {
            var bytes = generators[rendition]!.nextSegment().bytes
            let null: [UInt8] = [0x47, 0x1F, 0xFF, 0x10] + [UInt8](repeating: 0xFF, count: 184)
            for _ in 0..<(2 * bytes.count / 188) { bytes += null }
            _ = try origin!.ingest(channel: "ch", rendition: rendition, fileName: "s.ts", body: SharedBytes(bytes))
        }
        origin!.tick()
        // Long enough for it to leave the window and the retained entries after it.
        for _ in 0..<20 { try slot(origin!) }
        let channel = try #require(origin!.channel(named: "ch"))
        let before = try MultivariantPlaylist.parse(
            String(decoding: try #require(channel.snapshot.multivariantPlaylist).array, as: UTF8.self))
        for variant in before.variants {
            let name = String(variant.uri.prefix { $0 != "/" })
            let listed = try #require(channel.snapshot.renditions[name]).entries.suffix(6).filter { !$0.isGap }
            let peak = listed.map { Int64(try! #require($0.bytes).count) * 8000 / $0.durationMilliseconds }.max()
            #expect(Int64(variant.bandwidth) == peak, "\(name): BANDWIDTH is the peak of the listed segments")
        }
        origin = nil
        let restarted = try start()
        let after = try MultivariantPlaylist.parse(
            String(
                decoding: try #require(restarted.channel(named: "ch")?.snapshot.multivariantPlaylist).array,
                as: UTF8.self))
        #expect(after == before, "the multivariant playlist changed across the restart")
    }
}
