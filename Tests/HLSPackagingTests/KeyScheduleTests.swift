import HLSPackaging
import HLSPlaylist
import LiveTimeline
import Markers
import MediaProbe
import TestSupport
import Testing

@Suite("Key schedule and the EXT-X-KEY decoration", .offThePool)
struct KeyScheduleTests {
    @Test("periods and period starts of one span")
    func oneSpan() {
        var schedule = KeySchedule()
        schedule.change(rotateEvery: 3, fromMSN: 100)
        #expect(schedule.period(of: 99) == nil, "before the first span: clear")
        #expect(schedule.period(of: 100) == 0)
        #expect(schedule.period(of: 102) == 0)
        #expect(schedule.period(of: 103) == 1)
        #expect(schedule.periodStart(of: 105) == 103)
        #expect(schedule.keyChanges(at: 100))
        #expect(!schedule.keyChanges(at: 101))
        #expect(schedule.keyChanges(at: 103))
        #expect(schedule.highestPeriod(below: 100) == nil)
        #expect(schedule.highestPeriod(below: 104) == 1)
    }

    @Test("turned off and on again: the clear span keeps no key, the next span's periods start above every earlier one")
    func offAndOn() {
        var schedule = KeySchedule()
        schedule.change(rotateEvery: 2, fromMSN: 0)
        schedule.change(rotateEvery: nil, fromMSN: 5)
        schedule.change(rotateEvery: 10, fromMSN: 9)
        #expect(schedule.spans.count == 3)
        #expect(schedule.period(of: 4) == 2)
        #expect(schedule.period(of: 5) == nil)
        #expect(schedule.period(of: 8) == nil)
        #expect(schedule.period(of: 9) == 3)
        #expect(schedule.period(of: 19) == 4)
        #expect(schedule.keyChanges(at: 5), "the first clear MSN states METHOD=NONE")
        #expect(schedule.keyChanges(at: 9))
        // Periods are never reused: each period belongs to one span only.
        var spanOfPeriod: [UInt64: UInt64] = [:]
        for msn in UInt64(0)..<40 {
            guard let period = schedule.period(of: msn), let span = schedule.span(at: msn) else { continue }
            #expect(spanOfPeriod.updateValue(span.fromMSN, forKey: period) ?? span.fromMSN == span.fromMSN)
        }
        #expect(spanOfPeriod.count == 7)
    }

    @Test("a change to what is in force does nothing; a change at the same MSN replaces the last span")
    func idempotentChanges() {
        var schedule = KeySchedule()
        schedule.change(rotateEvery: nil, fromMSN: 3)
        #expect(schedule.spans.isEmpty, "turning off a clear channel adds nothing")
        schedule.change(rotateEvery: 4, fromMSN: 3)
        schedule.change(rotateEvery: 4, fromMSN: 8)
        #expect(schedule.spans.count == 1)
        schedule.change(rotateEvery: 2, fromMSN: 8)
        schedule.change(rotateEvery: 5, fromMSN: 8)
        #expect(schedule.spans.count == 2)
        #expect(schedule.spans.last?.rotateEvery == 5)
        #expect(schedule.period(of: 8) == 2, "periods 0 and 1 were used by MSNs 3..7")
    }

    @Test("decoration: KEY on the first listed segment and where the key changes; METHOD=NONE only after encryption")
    func decorationKeys() {
        var schedule = KeySchedule()
        schedule.change(rotateEvery: 3, fromMSN: 10)
        schedule.change(rotateEvery: nil, fromMSN: 16)
        let decoration = PlaylistDecoration(keys: schedule, keyURI: { "../key-\($0).key" })
        #expect(decoration.key(at: 8, isFirstListed: true) == nil, "clear before any span: nothing to state")
        #expect(decoration.key(at: 9, isFirstListed: false) == nil)
        #expect(decoration.key(at: 10, isFirstListed: false) == .aes128(uri: "../key-0.key"))
        #expect(decoration.key(at: 11, isFirstListed: false) == nil)
        #expect(decoration.key(at: 11, isFirstListed: true) == .aes128(uri: "../key-0.key"))
        #expect(decoration.key(at: 13, isFirstListed: false) == .aes128(uri: "../key-1.key"))
        #expect(decoration.key(at: 16, isFirstListed: false) == EncryptionKey.none)
        #expect(decoration.key(at: 16, isFirstListed: true) == nil, "a clear first segment needs no NONE")
        #expect(decoration.key(at: 17, isFirstListed: false) == nil)
        #expect(PlaylistDecoration.none.key(at: 10, isFirstListed: true) == nil)
    }

    static func entries(_ msns: ClosedRange<UInt64>) -> [DVREntry] {
        msns.map { msn in
            DVREntry(
                slot: SlotRecord(
                    msn: msn, programDateTimeMilliseconds: 1_795_000_000_000 + Int64(msn) * 2000,
                    durationMilliseconds: 2000, discontinuitySequence: 0, discontinuity: false),
                record: nil)
        }
    }

    @Test("DVR playlists: the same KEY placement as live, whatever the blocks the text is assembled from")
    func dvrKeyPlacement() {
        var schedule = KeySchedule()
        schedule.change(rotateEvery: 100, fromMSN: 0)
        let decoration = PlaylistDecoration(keys: schedule, keyURI: { "../key-\($0).key" })
        let options = DVRPlaylistOptions(
            rendition: "ch/360p", container: .mpegTS, targetDuration: 2, independentSegments: true)
        let msns: ClosedRange<UInt64> = 50...700
        let entries = Self.entries(msns)
        let selection = DVRSelection(msns: msns, playlistType: .event, endList: false, start: nil)
        let value = DVRPlaylist.playlist(
            entries: entries, selection: selection, options: options, markers: MarkerBook(), decoration: decoration)
        let keyed = value.segments.enumerated().compactMap { index, segment in
            segment.key.map { (msns.lowerBound + UInt64(index), $0) }
        }
        #expect(keyed.map(\.0) == [50, 100, 200, 300, 400, 500, 600, 700])
        #expect(keyed.first?.1 == .aes128(uri: "../key-0.key"))
        #expect(keyed.last?.1 == .aes128(uri: "../key-7.key"))
        // Assembled from cached blocks (twice: the second from the cache), the text equals the plain render.
        let source = DVRRecordArrays(slots: entries.map(\.slot), segments: [:])
        var cache = DVRBlockCache(capacityBytes: 1 << 20)
        for _ in 0..<2 {
            let text = DVRPlaylist.render(
                selection: selection, options: options, source: source, markers: MarkerBook(), revision: 1,
                cache: &cache, decoration: decoration)
            #expect(text == value.render())
        }
        // A playlist starting inside a period states its key first.
        let later = DVRSelection(msns: 260...700, playlistType: .event, endList: false, start: nil)
        let text = DVRPlaylist.render(
            selection: later, options: options, source: source, markers: MarkerBook(), revision: 1, cache: &cache,
            decoration: decoration)
        #expect(
            text
                == DVRPlaylist.playlist(
                    entries: Self.entries(260...700), selection: later, options: options, markers: MarkerBook(),
                    decoration: decoration
                ).render())
    }

    @Test(
        "the design's worked example: KEY first, at period 34, kept over a GAP and a discontinuity")
    func workedExample() throws {
        var schedule = KeySchedule()
        schedule.change(rotateEvery: 3, fromMSN: 0)
        let decoration = PlaylistDecoration(keys: schedule, keyURI: { "../key-\($0).key" })
        let start = try #require(ProgramDateTime(iso8601: "2026-11-24T00:40:00.000Z")).millisecondsSince1970
        let entries = (UInt64(100)...103).map { msn in
            let pdt = start + Int64(msn - 100) * 2000
            let duration: Int64 = msn == 103 ? 1960 : 2000
            return DVREntry(
                slot: SlotRecord(
                    msn: msn, programDateTimeMilliseconds: pdt, durationMilliseconds: duration,
                    discontinuitySequence: msn == 103 ? 5 : 4, discontinuity: msn == 103),
                record: msn == 101
                    ? nil
                    : SegmentRecord(
                        kind: .segment, msn: msn, programDateTimeMilliseconds: pdt, durationMilliseconds: duration,
                        discontinuity: msn == 103, startsWithKeyframe: true, container: .mpegTS,
                        location: StoredSegment(chunk: 0, offset: 0, length: 1, crc: 0), initSectionVersion: nil,
                        mediaEndTicks: nil, mediaTimescale: 90_000))
        }
        let playlist = DVRPlaylist.playlist(
            entries: entries, selection: DVRSelection(msns: 100...103, playlistType: nil, endList: false, start: nil),
            options: DVRPlaylistOptions(
                rendition: "news/hi", container: .mpegTS, targetDuration: 2, independentSegments: true),
            markers: MarkerBook(), decoration: decoration)
        #expect(
            playlist.render() == """
                #EXTM3U
                #EXT-X-VERSION:3
                #EXT-X-TARGETDURATION:2
                #EXT-X-MEDIA-SEQUENCE:100
                #EXT-X-DISCONTINUITY-SEQUENCE:4
                #EXT-X-INDEPENDENT-SEGMENTS
                #EXT-X-KEY:METHOD=AES-128,URI="../key-33.key"
                #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:00.000Z
                #EXTINF:2.000,
                100.ts
                #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:02.000Z
                #EXT-X-GAP
                #EXTINF:2.000,
                101.ts
                #EXT-X-KEY:METHOD=AES-128,URI="../key-34.key"
                #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:04.000Z
                #EXTINF:2.000,
                102.ts
                #EXT-X-DISCONTINUITY
                #EXT-X-PROGRAM-DATE-TIME:2026-11-24T00:40:06.000Z
                #EXTINF:1.960,
                103.ts

                """)
    }
}
