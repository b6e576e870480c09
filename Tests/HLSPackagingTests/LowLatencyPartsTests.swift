@testable import HLSPackaging
import HLSPlaylist
import MediaProbe
import SharedBytes
import TestSupport
import Testing

@testable import LiveTimeline
import TestSource

/// Parts of streamed pushes in the ingest loop: listing, retention, GAP parts, failures, playlists.
@Suite("Low-Latency parts in the ingest loop", .offThePool)
struct LowLatencyPartsTests {
    /// The design's worked example: at 01:00:16.800 segment 1008 of 720p has two parts, 360p is one part behind.
    static func workedExample() throws -> LowLatencyChannel {
        var channel = try LowLatencyChannel()
        channel.slot(lagging: ["360p"])
        try channel.addMarker(id: "ad-7", startMilliseconds: LowLatencyChannel.start + 5000, plannedDuration: 30)
        for _ in 0..<7 { channel.slot(lagging: ["360p"]) }
        // 01:00:16.000 + two parts.
        channel.begin("720p")
        channel.begin("audio")
        for _ in 0..<2 {
            channel.now += 400
            channel.step("720p")
            channel.step("audio")
            channel.step("360p")
            if channel.pushes["360p"] == nil { channel.begin("360p") }
        }
        return channel
    }

    @Test func theWorkedExampleListsPartsOfTheLastThreeTargetDurationsTheSegmentInProgressAndReports() throws {
        var channel = try Self.workedExample()
        #expect(channel.now == LowLatencyChannel.start + 16_800)
        let playlist = channel.playlist("720p")
        #expect(playlist.mediaSequence == 1000)
        #expect(playlist.segments.map(\.uri) == (1000...1007).map { "\($0).ts" })
        #expect(playlist.segments.map(\.duration) == Array(repeating: 2.0, count: 8))
        #expect(playlist.segments[0].programDateTime?.millisecondsSince1970 == LowLatencyChannel.start)
        #expect(playlist.segments.prefix(5).allSatisfy { $0.parts.isEmpty })
        #expect(playlist.segments.map { $0.dateRanges.map(\.id) } == [[], [], ["ad-7"], [], [], [], [], []])
        for segment in playlist.segments.suffix(3) {
            let msn = segment.uri.dropLast(3)
            #expect(segment.parts.map(\.uri) == (0..<5).map { "\(msn).\($0).ts" })
            #expect(segment.parts.map(\.duration) == Array(repeating: 0.4, count: 5))
            #expect(segment.parts.map(\.independent) == [true, false, false, false, false])
        }
        let progress = try #require(playlist.segmentInProgress)
        #expect(progress.programDateTime?.millisecondsSince1970 == LowLatencyChannel.start + 16_000)
        #expect(progress.parts.map(\.uri) == ["1008.0.ts", "1008.1.ts"])
        #expect(playlist.preloadHints == [PreloadHint(type: .part, uri: "1008.2.ts")])
        #expect(
            playlist.renditionReports == [
                RenditionReport(uri: "../360p/index.m3u8", lastMSN: 1008, lastPart: 0),
                RenditionReport(uri: "../audio/index.m3u8", lastMSN: 1008, lastPart: 1),
            ])
        #expect(
            playlist.serverControl
                == ServerControl(
                    canBlockReload: true, canSkipUntil: 12, canSkipDateRanges: true, holdBack: 6, partHoldBack: 1.2))
        #expect(playlist.partTarget == 0.4)
        #expect(playlist.targetDuration == 2)
        let published = try #require(channel.lowLatency("720p"))
        #expect(published.lastPart == PartPosition(msn: 1008, part: 1))
        #expect(published.preloadHint == PartPosition(msn: 1008, part: 2))
        #expect(published.maximumPartsPerSegment == 7)
        #expect(published.partTargetMilliseconds == 400)
    }

    @Test
    func theWorkedExampleIsRenderedByteExact() throws {
        var channel = try Self.workedExample()
        var segments = ""
        for msn in 1000...1007 {
            let second = (msn - 1000) * 2
            if msn == 1002 {
                segments += """
                    #EXT-X-DATERANGE:ID="ad-7",CLASS="com.example.ad",START-DATE="2026-11-24T01:00:05.000Z",\
                    PLANNED-DURATION=30

                    """
            }
            segments += "#EXT-X-PROGRAM-DATE-TIME:2026-11-24T01:00:\(second < 10 ? "0" : "")\(second).000Z\n"
            if msn >= 1005 {
                for part in 0..<5 {
                    segments +=
                        "#EXT-X-PART:DURATION=0.400,URI=\"\(msn).\(part).ts\"\(part == 0 ? ",INDEPENDENT=YES" : "")\n"
                }
            }
            segments += "#EXTINF:2.000,\n\(msn).ts\n"
        }
        let expected = """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:2
            #EXT-X-MEDIA-SEQUENCE:1000
            #EXT-X-DISCONTINUITY-SEQUENCE:0
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=12.000,CAN-SKIP-DATERANGES=YES,\
            HOLD-BACK=6.000,PART-HOLD-BACK=1.200
            #EXT-X-PART-INF:PART-TARGET=0.400

            """ + segments + """
                #EXT-X-PROGRAM-DATE-TIME:2026-11-24T01:00:16.000Z
                #EXT-X-PART:DURATION=0.400,URI="1008.0.ts",INDEPENDENT=YES
                #EXT-X-PART:DURATION=0.400,URI="1008.1.ts"
                #EXT-X-PRELOAD-HINT:TYPE=PART,URI="1008.2.ts"
                #EXT-X-RENDITION-REPORT:URI="../360p/index.m3u8",LAST-MSN=1008,LAST-PART=0
                #EXT-X-RENDITION-REPORT:URI="../audio/index.m3u8",LAST-MSN=1008,LAST-PART=1

                """
        #expect(channel.playlist("720p").render() == expected)
    }

    @Test func aDateRangeStartingInTheSegmentInProgressIsListedBeforeItsParts() throws {
        var channel = try Self.workedExample()
        try channel.addMarker(id: "goal", startMilliseconds: LowLatencyChannel.start + 16_500, plannedDuration: 10)
        let progress = try #require(channel.playlist("720p").segmentInProgress)
        #expect(progress.dateRanges.map(\.id) == ["goal"])
        #expect(channel.playlist("720p").segments.allSatisfy { !$0.dateRanges.contains { $0.id == "goal" } })
    }

    @Test func dateRangesThatLeaveThePlaylistAreRememberedForCanSkipUntil() throws {
        var channel = try LowLatencyChannel()
        channel.slot()
        try channel.addMarker(id: "blip", startMilliseconds: LowLatencyChannel.start + 1000, duration: 1)
        for _ in 0..<8 { channel.slot() }
        #expect((channel.text("720p") ?? "").contains("blip"))
        #expect(channel.snapshot.memory.recentlyRemovedDateRanges.isEmpty)
        // It ends at 01:00:02: gone once the window starts after it, and remembered for CAN-SKIP-UNTIL (12 s).
        for _ in 0..<2 { channel.slot() }
        #expect(!(channel.text("720p") ?? "").contains("blip"))
        #expect(channel.snapshot.memory.recentlyRemovedDateRanges == ["blip"])
        for _ in 0..<7 { channel.slot() }
        #expect(channel.snapshot.memory.recentlyRemovedDateRanges.isEmpty)
    }

    @Test func everySegmentIsExactlyItsPartsForTenMinutes() throws {
        var channel = try LowLatencyChannel(renditions: ["720p", "360p"])
        for _ in 0..<300 { channel.slot(lagging: ["360p"]) }
        for rendition in ["720p", "360p"] {
            let segments = try #require(channel.closedSegments[rendition])
            #expect(segments.count >= 299)
            for (msn, segment) in segments {
                let joined = segment.parts.flatMap(\.bytes.array)
                #expect(joined == segment.bytes.array, "msn \(msn)")
            }
            // Listed parts name exactly the bytes they were cut from, and add up to the segment's EXTINF.
            let published = try #require(channel.snapshot.renditions[rendition])
            let parts = try #require(published.lowLatency?.parts)
            for (msn, listed) in parts {
                guard let entry = published.entry(msn: msn), let bytes = entry.bytes else { continue }
                #expect(listed.compactMap(\.bytes).flatMap(\.array) == bytes.array)
                #expect(listed.reduce(0) { $0 + $1.durationMilliseconds } == entry.durationMilliseconds)
            }
        }
    }

    @Test func partsLeaveThePlaylistAtThreeTargetDurationsAndTheirURLsStayThreeMore() throws {
        var channel = try LowLatencyChannel()
        for _ in 0..<10 { channel.slot() }
        // The last part ends at the end of 1009: 1006 ends 6 s before it (not listed), 1007 4 s (listed).
        let playlist = channel.playlist("720p")
        let listed = playlist.segments.filter { !$0.parts.isEmpty }.map(\.uri)
        #expect(listed == ["1007.ts", "1008.ts", "1009.ts"])
        let parts = try #require(channel.lowLatency("720p")?.parts)
        // Retained while their segment ended within 6 TD of the last part's end.
        #expect(parts[1006] != nil && parts[1003] != nil)
        #expect(parts[1002] == nil)
        for _ in 0..<3 { channel.slot() }
        let later = try #require(channel.lowLatency("720p")?.parts)
        #expect(later[1005] == nil)
        #expect(later[1006] != nil)
    }

    @Test func aStalledRenditionNeverHoldsTheOthersPlaylistBack() throws {
        var channel = try LowLatencyChannel(renditions: ["720p", "360p"])
        for _ in 0..<4 { channel.slot() }
        // 360p starts a segment and stops after two parts; 720p keeps going.
        channel.begin("360p")
        channel.begin("720p")
        for _ in 0..<2 {
            channel.now += 400
            channel.step("720p")
            channel.step("360p")
        }
        var lastParts: [PartPosition] = []
        for _ in 0..<20 {
            channel.now += 400
            if channel.pushes["720p"] == nil { channel.begin("720p") }
            channel.step("720p")
            if channel.state.tick(nowMilliseconds: channel.now).publish { channel.publish() }
            lastParts.append(try #require(channel.lowLatency("720p")?.lastPart))
        }
        // 720p's last listed part advanced at least every 0.4 s after the stall was detected (1.2 s).
        for (earlier, later) in zip(lastParts.dropFirst(3), lastParts.dropFirst(4)) { #expect(earlier < later) }
        let stalledTicket = OpenSegmentTicket(rendition: "360p", msn: 1004)
        #expect(channel.state.lowLatency.closedTickets[stalledTicket] == .pushStalled)
        let entry = try #require(channel.snapshot.renditions["360p"]?.entry(msn: 1004))
        #expect(entry.durationMilliseconds == 800)
        let part = LowLatencyChannel.cut(channel.generators["360p"]!.nextSegment())[0]
        let refused = channel.state.appendPart(part, ticket: stalledTicket, nowMilliseconds: channel.now)
        #expect(throws: IngestError.self) { try refused.get() }
        if case .failure(let error) = refused { #expect(error.reason == .pushStalled) }
    }

    @Test func gapPartsMarkAnOutageAndTheReturnStartsADiscontinuityAtTheSameMSNEverywhere() throws {
        var channel = try LowLatencyChannel(renditions: ["720p", "360p"])
        for _ in 0..<4 { channel.slot() }
        // 360p's encoder is gone for 3 slots.
        var sawGapPart = false
        for _ in 0..<3 {
            channel.slot(pushing: ["720p"])
            let published = try #require(channel.lowLatency("360p"))
            if let last = published.lastPart, let part = published.part(last), part.bytes == nil { sawGapPart = true }
            #expect(published.preloadHint == nil || published.lastPart.map { $0.msn < 1004 } == true)
        }
        #expect(sawGapPart)
        let gapMSN: UInt64 = 1005
        let gapParts = try #require(channel.lowLatency("360p")?.parts[gapMSN])
        #expect(gapParts.allSatisfy { $0.bytes == nil })
        let gapEntry = try #require(channel.snapshot.renditions["360p"]?.entry(msn: gapMSN))
        #expect(gapEntry.isGap)
        #expect(gapParts.reduce(0) { $0 + $1.durationMilliseconds } == gapEntry.durationMilliseconds)
        // 720p was never held back by 360p's outage.
        #expect(channel.snapshot.renditions["720p"]?.entries.last.map(\.msn) ?? 0 >= 1006)
        // The encoder returns: its first segment takes a slot nobody opened, with a discontinuity in both.
        channel.generators["360p"]!.restartTimestamps(startPTS: 900_000)
        for _ in 0..<3 { channel.slot() }
        let low = channel.playlist("360p")
        let high = channel.playlist("720p")
        let lowDiscontinuities = low.segments.filter(\.discontinuity).map(\.uri)
        let highDiscontinuities = high.segments.filter(\.discontinuity).map(\.uri)
        #expect(lowDiscontinuities.count == 1)
        #expect(lowDiscontinuities == highDiscontinuities)
        let returned = try #require(low.segments.first { $0.discontinuity })
        #expect(!returned.gap)
        #expect(returned.parts.first?.independent == true)
    }

    @Test func duringAnOutageTheRenditionGainsAGapPartEveryPartTargetAndHintsNothing() throws {
        var channel = try LowLatencyChannel(renditions: ["720p", "360p"])
        for _ in 0..<4 { channel.slot() }
        // 360p's last part ended at 01:00:08.000; its encoder is gone from then on.
        channel.lose("360p")
        var positions: [PartPosition?] = []
        var hints: [PartPosition?] = []
        for _ in 0..<6 {
            channel.now += 400
            if channel.pushes["720p"] == nil { channel.begin("720p") }
            channel.step("720p")
            channel.advance(0)
            positions.append(channel.lowLatency("360p")?.lastPart)
            hints.append(channel.lowLatency("360p")?.preloadHint)
        }
        let expected: [PartPosition] = [
            .init(msn: 1003, part: 4), .init(msn: 1004, part: 1), .init(msn: 1004, part: 2),
            .init(msn: 1004, part: 3), .init(msn: 1004, part: 4), .init(msn: 1005, part: 0),
        ]
        #expect(positions == expected)
        #expect(hints == [PartPosition(msn: 1004, part: 0), nil, nil, nil, nil, nil])
        let gap = try #require(channel.snapshot.renditions["360p"]?.entry(msn: 1004))
        #expect(gap.isGap)
        let parts = try #require(channel.lowLatency("360p")?.parts[1004])
        #expect(parts.map(\.durationMilliseconds) == [400, 400, 400, 400, 400])
        #expect(parts.allSatisfy { $0.bytes == nil })
    }

    @Test func aSegmentRunningPastTheTargetDurationIsClosedAtItsLastPart() throws {
        var channel = try LowLatencyChannel(renditions: ["720p"])
        for _ in 0..<3 { channel.slot() }
        var parts = LowLatencyChannel.cut(channel.generators["720p"]!.nextSegment())
        parts += LowLatencyChannel.cut(channel.generators["720p"]!.nextSegment()).map {
            CutPart(
                index: $0.index + 5, bytes: $0.bytes, decodeTime: $0.decodeTime, durationTicks: $0.durationTicks,
                independent: $0.independent)
        }
        let ticket = try channel.state.openSegment(
            rendition: "720p", firstPart: parts[0], container: .mpegTS, nowMilliseconds: channel.now
        ).get()
        var refusal: IngestError?
        for part in parts {
            channel.now += 400
            if case .failure(let error) = channel.state.appendPart(part, ticket: ticket, nowMilliseconds: channel.now) {
                refusal = error
                break
            }
        }
        #expect(refusal?.reason == .segmentTooLong)
        channel.advance(50)
        let entry = try #require(channel.state.renditions[0].lastEntry)
        #expect(entry.msn == ticket.msn)
        #expect(entry.durationMilliseconds == 2400)
        #expect(entry.bytes?.array == parts.prefix(6).flatMap(\.bytes.array))
    }

    @Test func anAbandonedPushIsClosedAtItsLastPartOrLeavesNothing() throws {
        var channel = try LowLatencyChannel(renditions: ["720p"])
        for _ in 0..<3 { channel.slot() }
        let parts = LowLatencyChannel.cut(channel.generators["720p"]!.nextSegment())
        let ticket = try channel.state.openSegment(
            rendition: "720p", firstPart: parts[0], container: .mpegTS, nowMilliseconds: channel.now
        ).get()
        for part in parts.prefix(2) {
            channel.now += 400
            _ = try channel.state.appendPart(part, ticket: ticket, nowMilliseconds: channel.now).get()
        }
        #expect(channel.state.abandonSegment(ticket: ticket, nowMilliseconds: channel.now).publish)
        let entry = try #require(channel.state.renditions[0].lastEntry)
        #expect(entry.msn == ticket.msn && entry.durationMilliseconds == 800)
        #expect(entry.bytes?.array == parts.prefix(2).flatMap(\.bytes.array))

        // Abandoned before its first part was listed: nothing is listed, the slot closes by the usual rules.
        let next = LowLatencyChannel.cut(channel.generators["720p"]!.nextSegment())
        let second = try channel.state.openSegment(
            rendition: "720p", firstPart: next[0], container: .mpegTS, nowMilliseconds: channel.now
        ).get()
        #expect(second.msn == ticket.msn + 1)
        #expect(!channel.state.abandonSegment(ticket: second, nowMilliseconds: channel.now).publish)
        #expect(channel.state.renditions[0].lastMSN == ticket.msn)
    }

    @Test func aSecondPushWhileOneIsOpenIsRefused() throws {
        var channel = try LowLatencyChannel(renditions: ["720p"])
        for _ in 0..<3 { channel.slot() }
        let parts = LowLatencyChannel.cut(channel.generators["720p"]!.nextSegment())
        _ = try channel.state.openSegment(
            rendition: "720p", firstPart: parts[0], container: .mpegTS, nowMilliseconds: channel.now
        ).get()
        let second = channel.state.openSegment(
            rendition: "720p", firstPart: parts[0], container: .mpegTS, nowMilliseconds: channel.now)
        #expect(throws: IngestError.self) { try second.get() }
        if case .failure(let error) = second { #expect(error.reason == .concurrentPush) }
    }

    @Test func afterARestartTheSlotWhosePartsWereListedIsAGapAndItsMSNIsNeverReused() throws {
        var channel = try LowLatencyChannel(renditions: ["720p", "360p"])
        channel.state.store.keepsRecords = true
        for _ in 0..<6 { channel.slot() }
        channel.begin("720p")
        channel.begin("360p")
        for _ in 0..<2 {
            channel.now += 400
            channel.step("720p")
            channel.step("360p")
        }
        #expect(channel.lowLatency("720p")?.lastPart == PartPosition(msn: 1006, part: 1))
        let stored = channel.stored()
        channel.now += 5000
        var restored = ChannelState(
            configuration: channel.state.configuration, firstMSN: try #require(ChannelState.firstRestoredMSN(stored)))
        restored.store.keepsRecords = true
        restored.restore(stored, targetDuration: 2, nowMilliseconds: channel.now)
        for name in ["720p", "360p"] where restored.index[name] == nil { restored.addRendition(name) }
        for rendition in restored.renditions {
            #expect(rendition.held.first { $0.msn == 1006 }?.isGap == true, "\(rendition.name)")
        }
        channel.state = restored
        channel.pushes = [:]
        for _ in 0..<4 { channel.slot() }
        for rendition in ["720p", "360p"] {
            let playlist = channel.playlist(rendition)
            let gap = try #require(playlist.segments.first { $0.uri == "1006.ts" })
            #expect(gap.gap)
            // Its part URLs never answer other bytes.
            #expect(channel.lowLatency(rendition)?.parts[1006]?.contains { $0.bytes != nil } != true)
            let returned = try #require(playlist.segments.first { !$0.gap && $0.uri > "1006.ts" })
            #expect(returned.discontinuity)
        }
    }

    @Test func aRegularChannelHasNoLowLatencySnapshot() throws {
        var state = ChannelState(
            configuration: ChannelConfiguration(name: "c", renditions: [.init(name: "r")]), firstMSN: 10)
        state.addRendition("r")
        let info = SegmentInfo(
            container: .mpegTS,
            tracks: [TrackInfo(kind: .video, codec: "avc1.42c01e", trackID: 256, timescale: 90_000)],
            startTime: MediaTime(ticks: 900_000, timescale: 90_000),
            duration: MediaTime(ticks: 180_000, timescale: 90_000),
            startsWithKeyframe: true, byteCount: 188)
        _ = state.accept(rendition: "r", bytes: SharedBytes([0x47]), info: info, nowMilliseconds: 1_000_000)
        let snapshot = HLSPackager.render(
            state,
            name: "c",
            previous: ChannelSnapshot(
                name: "c", version: 0, multivariantPlaylist: nil, multivariantModifiedMilliseconds: 0, renditions: [:]),
            nowMilliseconds: 1_000_000)
        #expect(snapshot.renditions["r"]?.lowLatency == nil)
        let text = try #require(snapshot.renditions["r"]?.playlist).array
        #expect(!String(decoding: text, as: UTF8.self).contains("EXT-X-PART"))
    }
}
