import Foundation
@testable import HLSPackaging
import HLSPlaylist
import Markers
import MediaProbe
import SharedBytes
import TestSupport
import Testing

@testable import LiveTimeline

/// A channel's store records as the ingest loop writes them: closed slots on one PDT timeline (uneven durations,
/// discontinuities), and one rendition's records (segments, GAPs, unpersisted segments, none before it started,
/// fMP4 init section changes, EXTINFs a little shorter than their slot), plus random markers.
struct DVRFixture {
    static let t0: Int64 = 1_795_416_545_123
    static let rendition = "v"

    var records: DVRRecordArrays
    var markers = MarkerBook()
    let container: MediaContainer

    /// - Parameters:
    ///   - joinedAfter: the rendition has no record for this many first slots.
    ///   - plain: every record a segment of its slot's duration, no discontinuity (the live-equivalence fixture).
    init(
        seed: UInt64, firstMSN: UInt64, count: Int, container: MediaContainer = .mpegTS, joinedAfter: Int = 0,
        markerCount: Int = 0, plain: Bool = false
    ) throws {
        self.container = container
        var random = SplitMix64(seed: seed)
        var slots: [SlotRecord] = []
        var segments: [UInt64: SegmentRecord] = [:]
        slots.reserveCapacity(count)
        var pdt = Self.t0
        var dsn: UInt64 = 3
        var version = 0
        let durations: [Int64] = [2000, 2000, 2000, 1960, 2040, 1001, 4000]
        for index in 0..<count {
            let msn = firstMSN + UInt64(index)
            let duration = plain ? 2000 : durations[random.below(durations.count)]
            let discontinuity = !plain && index > 0 && random.below(40) == 0
            if discontinuity { dsn += 1 }
            slots.append(
                SlotRecord(
                    msn: msn, programDateTimeMilliseconds: pdt, durationMilliseconds: duration,
                    discontinuitySequence: dsn, discontinuity: discontinuity))
            if !plain, container == .fragmentedMP4Segment, random.below(300) == 0 { version += 1 }
            let roll = plain ? 50 : random.below(100)
            if index >= joinedAfter, roll >= 2 {
                let kind: SegmentRecord.Kind = roll < 12 ? .gap : roll < 15 ? .unpersisted : .segment
                segments[msn] = SegmentRecord(
                    kind: kind, msn: msn, programDateTimeMilliseconds: pdt,
                    durationMilliseconds: kind == .segment && roll % 7 == 0 ? duration - 30 : duration,
                    discontinuity: discontinuity, startsWithKeyframe: true, container: container,
                    location: kind == .segment
                        ? StoredSegment(chunk: 0, offset: UInt64(index) * 1000, length: 1000, crc: 0) : nil,
                    initSectionVersion: container == .fragmentedMP4Segment ? version : nil,
                    mediaEndTicks: nil, mediaTimescale: 90_000)
            }
            pdt += duration
        }
        records = DVRRecordArrays(slots: slots, segments: [Self.rendition: segments])
        for number in 0..<markerCount {
            let start = Self.t0 - 10_000 + Int64(random.below(Int(pdt - Self.t0 + 20_000)))
            let seconds = Double(1 + random.below(120))
            let request: MarkerRequest
            switch random.below(3) {
            case 0:
                request = MarkerRequest(
                    id: "m\(number)", startDate: ProgramDateTime(millisecondsSince1970: start), duration: seconds,
                    scte35: .out)
            case 1:
                request = MarkerRequest(
                    id: "m\(number)", startDate: ProgramDateTime(millisecondsSince1970: start),
                    plannedDuration: seconds)
            default:
                request = MarkerRequest(
                    id: "m\(number)", classAttribute: "com.example.ad",
                    startDate: ProgramDateTime(millisecondsSince1970: start),
                    endDate: ProgramDateTime(millisecondsSince1970: start + Int64(seconds * 1000)), scte35: .out)
            }
            _ = try markers.add(request, nowMilliseconds: Self.t0)
        }
    }

    func options(cueTags: CueTagOptions = .daterange) -> DVRPlaylistOptions {
        DVRPlaylistOptions(
            rendition: Self.rendition, container: container, targetDuration: 4, independentSegments: true,
            cueTags: cueTags)
    }

    /// The plain render of `selection`: every entry rendered, markers overlaid on all of them.
    func plainText(_ selection: DVRSelection, cueTags: CueTagOptions = .daterange) -> String {
        DVRPlaylist.playlist(
            entries: DVRPlaylist.entries(selection.msns, rendition: Self.rendition, source: records),
            selection: selection, options: options(cueTags: cueTags), markers: markers
        ).render()
    }
}

@Suite("DVR playlists from store records", .offThePool)
struct DVRPlaylistTests {
    @Test("entries are listed exactly as the live playlist lists the same MSNs")
    func entriesMatchTheLivePlaylist() throws {
        let fixture = try DVRFixture(seed: 1, firstMSN: 100, count: 40, plain: true)
        var window = LiveWindow(length: .segments(1000), targetDuration: 4, discontinuitySequence: 3)
        let slots = fixture.records.slotRecords
        for (index, slot) in slots.enumerated() {
            // A GAP and a discontinuity, as the ingest loop writes them in both places.
            let gap = index == 7
            let discontinuity = index == 20
            window.append(
                WindowEntry(
                    msn: slot.msn, durationMilliseconds: slot.durationMilliseconds,
                    programDateTimeMilliseconds: slot.programDateTimeMilliseconds, discontinuity: discontinuity,
                    content: gap ? .gap(filler: nil) : .segment(SharedBytes([1]), startsWithKeyframe: true),
                    container: .mpegTS, initSectionVersion: nil),
                nowMilliseconds: DVRFixture.t0)
        }
        var records = fixture.records
        records.slotRecords[20].discontinuity = true
        for index in 20..<slots.count { records.slotRecords[index].discontinuitySequence += 1 }
        records.segmentRecords[DVRFixture.rendition]?[slots[7].msn]?.kind = .gap
        records.segmentRecords[DVRFixture.rendition]?[slots[7].msn]?.location = nil

        let live = window.playlist(independentSegments: true)
        let selection = DVRSelection(msns: 100...139, playlistType: nil, endList: false, start: nil)
        let dvr = DVRPlaylist.playlist(
            entries: DVRPlaylist.entries(selection.msns, rendition: DVRFixture.rendition, source: records),
            selection: selection, options: fixture.options(), markers: MarkerBook())
        #expect(dvr == live)
        #expect(dvr.render() == live.render())
        var cache = DVRBlockCache(capacityBytes: 1 << 20)
        #expect(
            DVRPlaylist.render(
                selection: selection, options: fixture.options(), source: records, markers: MarkerBook(),
                revision: 0, cache: &cache) == live.render())
    }

    @Test("header: MEDIA-SEQUENCE, DSN = dsn(first) - disc(first), type, START, ENDLIST; GAP for no record")
    func header() throws {
        var fixture = try DVRFixture(seed: 2, firstMSN: 10, count: 6, joinedAfter: 2, plain: true)
        fixture.records.slotRecords[3].discontinuity = true
        for index in 3..<6 { fixture.records.slotRecords[index].discontinuitySequence += 1 }
        let selection = DVRSelection(
            msns: 13...14, playlistType: .vod, endList: true, start: StartOffset(timeOffset: 0.5, precise: true))
        #expect(
            fixture.plainText(selection) == """
                #EXTM3U
                #EXT-X-VERSION:3
                #EXT-X-TARGETDURATION:4
                #EXT-X-MEDIA-SEQUENCE:13
                #EXT-X-DISCONTINUITY-SEQUENCE:3
                #EXT-X-PLAYLIST-TYPE:VOD
                #EXT-X-INDEPENDENT-SEGMENTS
                #EXT-X-START:TIME-OFFSET=0.500,PRECISE=YES
                #EXT-X-DISCONTINUITY
                #EXT-X-PROGRAM-DATE-TIME:2026-11-23T06:49:11.123Z
                #EXTINF:2.000,
                13.ts
                #EXT-X-PROGRAM-DATE-TIME:2026-11-23T06:49:13.123Z
                #EXTINF:2.000,
                14.ts
                #EXT-X-ENDLIST

                """)
        let beforeJoin = DVRSelection(msns: 10...11, playlistType: .event, endList: false, start: nil)
        let text = fixture.plainText(beforeJoin)
        #expect(text.contains("#EXT-X-GAP\n#EXTINF:2.000,\n10.ts\n"))
        #expect(text.contains("#EXT-X-GAP\n#EXTINF:2.000,\n11.ts\n"))
        #expect(text.contains("#EXT-X-DISCONTINUITY-SEQUENCE:3\n"))
    }

    @Test("fMP4: EXT-X-MAP at the start and on every init section change, EXT-X-VERSION 6")
    func fragmentedMP4Maps() throws {
        var fixture = try DVRFixture(
            seed: 3, firstMSN: 0, count: 600, container: .fragmentedMP4Segment, plain: true)
        for msn in UInt64(300)..<600 {
            fixture.records.segmentRecords[DVRFixture.rendition]?[msn]?.initSectionVersion = 1
        }
        let selection = DVRSelection(msns: 10...599, playlistType: .event, endList: false, start: nil)
        var cache = DVRBlockCache(capacityBytes: 1 << 20)
        let text = DVRPlaylist.render(
            selection: selection, options: fixture.options(), source: fixture.records, markers: fixture.markers,
            revision: 0, cache: &cache)
        #expect(text == fixture.plainText(selection))
        #expect(text.contains("#EXT-X-VERSION:6\n"))
        #expect(text.components(separatedBy: "#EXT-X-MAP:").count == 3)
        #expect(text.contains("#EXT-X-MAP:URI=\"init-0.mp4\"\n#EXT-X-PROGRAM-DATE-TIME"))
        #expect(text.contains("#EXT-X-MAP:URI=\"init-1.mp4\"\n#EXT-X-PROGRAM-DATE-TIME:2026-11-23T06:59:05.123Z\n"))
    }

    /// The equivalence property: for random ranges (within one block, across many, on block edges), random records,
    /// markers, legacy cue tags and containers, the text assembled from cached blocks is byte for byte the plain
    /// render, cold and warm, and with a cache too small to hold everything.
    @Test(
        "block-assembled text equals the plain render for random ranges",
        arguments: [
            (UInt64(11), MediaContainer.mpegTS, 1 << 24),
            (UInt64(12), MediaContainer.fragmentedMP4Segment, 1 << 24),
            (UInt64(13), MediaContainer.mpegTS, 40_000),
        ])
    func assembledEqualsPlain(seed: UInt64, container: MediaContainer, capacity: Int) throws {
        var random = SplitMix64(seed: seed)
        let firstMSN = UInt64(1000 + random.below(600))
        let fixture = try DVRFixture(
            seed: seed, firstMSN: firstMSN, count: 3000, container: container, joinedAfter: random.below(300),
            markerCount: 40)
        var cache = DVRBlockCache(capacityBytes: capacity)
        let lastMSN = firstMSN + 2999
        let blockLength = DVRPlaylist.blockLength
        for round in 0..<60 {
            var first = firstMSN + UInt64(random.below(3000))
            var last = first + UInt64(random.below(round % 3 == 0 ? 200 : 2000))
            if round % 5 == 1 { first = (first / blockLength + 1) * blockLength }
            if round % 7 == 2 { last = (last / blockLength + 1) * blockLength - 1 }
            first = min(first, lastMSN)
            last = min(max(last, first), lastMSN)
            // Every cue tag mode: the cue tags of a block follow from the entry before it as in the plain render.
            let cueTags = [
                CueTagOptions.daterange, CueTagOptions(mode: .cue), .daterange, CueTagOptions(mode: .both, oatcls: true),
            ][round % 4]
            let selection = DVRSelection(
                msns: first...last, playlistType: round % 2 == 0 ? .event : .vod, endList: round % 3 == 1,
                start: round % 2 == 0 ? StartOffset(timeOffset: Double(round) / 10, precise: true) : nil)
            let plain = fixture.plainText(selection, cueTags: cueTags)
            for pass in 0..<2 {
                let assembled = DVRPlaylist.render(
                    selection: selection, options: fixture.options(cueTags: cueTags), source: fixture.records,
                    markers: fixture.markers, revision: 7, cache: &cache)
                #expect(assembled == plain, "round \(round) pass \(pass): \(first)...\(last)")
            }
            #expect(cache.bytes <= capacity)
        }
        #expect(cache.hits > 0)
        #expect(fixture.markers.markers.count == 40)
    }

    @Test("a new revision (markers changed) renders new text; the old blocks are not used")
    func revisionChangesText() throws {
        var fixture = try DVRFixture(seed: 4, firstMSN: 0, count: 1024, plain: true)
        var cache = DVRBlockCache(capacityBytes: 1 << 24)
        let selection = DVRSelection(msns: 0...1023, playlistType: .event, endList: false, start: nil)
        let before = DVRPlaylist.render(
            selection: selection, options: fixture.options(), source: fixture.records, markers: fixture.markers,
            revision: 1, cache: &cache)
        #expect(!before.contains("DATERANGE"))
        _ = try fixture.markers.add(
            MarkerRequest(
                id: "late", startDate: ProgramDateTime(millisecondsSince1970: DVRFixture.t0 + 1000 * 2000 + 500),
                duration: 30),
            nowMilliseconds: DVRFixture.t0)
        let after = DVRPlaylist.render(
            selection: selection, options: fixture.options(), source: fixture.records, markers: fixture.markers,
            revision: 2, cache: &cache)
        #expect(after == fixture.plainText(selection))
        #expect(after.contains("#EXT-X-DATERANGE:ID=\"late\""))
        #expect(
            after.contains(
                "#EXT-X-DATERANGE:ID=\"late\",START-DATE=\"2026-11-23T07:22:25.623Z\",DURATION=30\n"
                    + "#EXT-X-PROGRAM-DATE-TIME:2026-11-23T07:22:25.123Z\n#EXTINF:2.000,\n1000.ts\n"))
    }

    /// 24 h of 2 s segments: 43,200 entries. Prints the times (not an assertion: debug builds and shared cores).
    @Test("a 24 h playlist (43,200 entries) is assembled from cached blocks: cold and warm times")
    func twentyFourHours() throws {
        let fixture = try DVRFixture(seed: 5, firstMSN: 1_000_000, count: 43_200, markerCount: 200)
        var cache = DVRBlockCache(capacityBytes: 64 << 20)
        let selection = DVRSelection(
            msns: 1_000_000...1_043_199, playlistType: .event, endList: false,
            start: StartOffset(timeOffset: 0, precise: true))
        let clock = ContinuousClock()
        var cold = ""
        let coldTime = clock.measure {
            cold = DVRPlaylist.render(
                selection: selection, options: fixture.options(), source: fixture.records, markers: fixture.markers,
                revision: 0, cache: &cache)
        }
        var warm = ""
        let warmTime = clock.measure {
            warm = DVRPlaylist.render(
                selection: selection, options: fixture.options(), source: fixture.records, markers: fixture.markers,
                revision: 0, cache: &cache)
        }
        var plain = ""
        let plainTime = clock.measure { plain = fixture.plainText(selection) }
        #expect(cold == plain)
        #expect(warm == plain)
        #expect(cache.count == 168)
        print(
            "DVR playlist, 43,200 entries, \(plain.utf8.count) bytes: cold \(coldTime), warm \(warmTime), "
                + "plain render \(plainTime); \(cache.count) blocks cached, \(cache.bytes) bytes")
    }

    // MARK: - Selection

    /// Slots of 2 s from MSN 50 at t0, with a 10 s hole after MSN 59.
    static func holeFixture() throws -> DVRRecordArrays {
        var records = try DVRFixture(seed: 6, firstMSN: 50, count: 20, plain: true).records
        for index in 10..<20 { records.slotRecords[index].programDateTimeMilliseconds += 10_000 }
        return records
    }

    @Test("start-over begins with the slot containing T, EXT-X-START at T - PDT(first), PRECISE=YES")
    func startOverSelection() throws {
        let records = try Self.holeFixture()
        let interval = DVRInterval(kind: .startOver, startMilliseconds: DVRFixture.t0 + 5_300)
        #expect(
            interval.selection(in: records)
                == DVRSelection(
                    msns: 52...69, playlistType: .event, endList: false,
                    start: StartOffset(timeOffset: 1.3, precise: true)))
        // In the hole: the slot after it, from its start.
        let inHole = DVRInterval(kind: .startOver, startMilliseconds: DVRFixture.t0 + 25_000).selection(in: records)
        #expect(inHole?.msns == 60...69)
        #expect(inHole?.start == StartOffset(timeOffset: 0, precise: true))
        // Past the live edge: the newest slot, the offset within it.
        let pastEdge = DVRInterval(kind: .sliding, startMilliseconds: DVRFixture.t0 + 99_000).selection(in: records)
        #expect(pastEdge?.msns == 69...69)
        #expect(pastEdge?.playlistType == nil)
        #expect(pastEdge?.start == StartOffset(timeOffset: 2, precise: true))
        #expect(
            DVRInterval(kind: .startOver, startMilliseconds: 0).selection(in: DVRRecordArrays(slots: [], segments: [:]))
                == nil)
    }

    @Test("catch-up lists exactly the slots overlapping [T, E)")
    func catchUpSelection() throws {
        let records = try Self.holeFixture()
        let t0 = DVRFixture.t0
        let onBoundary = DVRInterval(kind: .catchUp, startMilliseconds: t0 + 2000, endMilliseconds: t0 + 8000)
        #expect(onBoundary.selection(in: records)?.msns == 51...53)
        #expect(onBoundary.selection(in: records)?.endList == true)
        #expect(onBoundary.selection(in: records)?.playlistType == .vod)
        let inside = DVRInterval(kind: .catchUp, startMilliseconds: t0 + 2001, endMilliseconds: t0 + 8001)
        #expect(inside.selection(in: records)?.msns == 51...54)
        let endInHole = DVRInterval(kind: .catchUp, startMilliseconds: t0, endMilliseconds: t0 + 25_000)
        #expect(endInHole.selection(in: records)?.msns == 50...59)
    }

    @Test("an EVENT with E ahead grows to the edge, then ends with ENDLIST at the slot containing E once it closes")
    func eventEndsOnceTheSlotContainingEndCloses() throws {
        let full = try DVRFixture(seed: 7, firstMSN: 0, count: 30, plain: true).records
        let interval = DVRInterval(
            kind: .event, startMilliseconds: DVRFixture.t0 + 1000, endMilliseconds: DVRFixture.t0 + 41_000)
        var growing = full
        growing.slotRecords = Array(full.slotRecords.prefix(15))
        #expect(interval.selection(in: growing)?.msns == 0...14)
        #expect(interval.selection(in: growing)?.endList == false)
        // The slot containing E (MSN 20, [40 s, 42 s)) is not closed yet.
        growing.slotRecords = Array(full.slotRecords.prefix(20))
        #expect(interval.selection(in: growing)?.endList == false)
        growing.slotRecords = Array(full.slotRecords.prefix(21))
        #expect(interval.selection(in: growing)?.msns == 0...20)
        #expect(interval.selection(in: growing)?.endList == true)
        #expect(interval.selection(in: full)?.msns == 0...20)
        #expect(interval.selection(in: full)?.playlistType == .event)
    }

    // MARK: - Cache and multivariant

    @Test("the block cache stays within its byte budget, dropping the least recently used blocks")
    func cacheEvictsLeastRecentlyUsed() {
        var cache = DVRBlockCache(capacityBytes: 1000)
        func key(_ block: UInt64) -> DVRBlockCache.Key {
            DVRBlockCache.Key(rendition: "v", block: block, revision: 0, incomingMap: nil, cueTags: .daterange)
        }
        let text = String(repeating: "x", count: 300)
        for block in 0..<3 {
            cache.insert(DVRBlockCache.Block(text: text, outgoingMap: nil, hasMap: false), for: key(UInt64(block)))
        }
        #expect(cache.bytes == 900)
        #expect(cache.block(for: key(0)) != nil)
        cache.insert(DVRBlockCache.Block(text: text, outgoingMap: nil, hasMap: false), for: key(3))
        #expect(cache.bytes <= 750)
        #expect(cache.block(for: key(0)) != nil)
        #expect(cache.block(for: key(3)) != nil)
        #expect(cache.block(for: key(1)) == nil)
        cache.insert(
            DVRBlockCache.Block(text: String(repeating: "y", count: 2000), outgoingMap: nil, hasMap: false),
            for: key(9))
        #expect(cache.block(for: key(9)) == nil)
        cache.removeAll(rendition: "v")
        #expect(cache.count == 0)
        #expect(cache.bytes == 0)
    }

    @Test("the multivariant passes the resolved interval on to every variant and media URI")
    func multivariantPassThrough() {
        let multivariant = MultivariantPlaylist(
            independentSegments: true,
            renditions: [
                Rendition(type: .audio, groupID: "aud", name: "a,URI=", uri: "audio/index.m3u8")
            ],
            variants: [
                VariantStream(uri: "360p/index.m3u8", bandwidth: 800_000, codecs: ["avc1.4d401e", "mp4a.40.2"]),
                VariantStream(uri: "720p/index.m3u8?token=a", bandwidth: 2_000_000, audioGroup: "aud"),
            ]
        ).render()
        let interval = DVRInterval(
            kind: .catchUp, startMilliseconds: DVRFixture.t0, endMilliseconds: DVRFixture.t0 + 60_000)
        let rewritten = interval.passThrough(multivariant: multivariant)
        let expected =
            multivariant
            .replacingOccurrences(
                of: "360p/index.m3u8\n", with: "360p/index.m3u8?start=1795416545.123&end=1795416605.123\n"
            )
            .replacingOccurrences(
                of: "720p/index.m3u8?token=a\n",
                with: "720p/index.m3u8?token=a&start=1795416545.123&end=1795416605.123\n"
            )
            .replacingOccurrences(
                of: "URI=\"audio/index.m3u8\"", with: "URI=\"audio/index.m3u8?start=1795416545.123&end=1795416605.123\""
            )
        #expect(rewritten == expected)
        #expect(rewritten != multivariant)
        #expect(rewritten.contains("NAME=\"a,URI=\","))
    }
}
