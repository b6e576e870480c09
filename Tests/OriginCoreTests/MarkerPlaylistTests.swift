import Foundation
import HLSPackaging
import HLSPlaylist
import HTTPPushInput
import LiveTimeline
import Logging
import Markers
import MediaProbe
import Persistence
import SharedBytes
import TestSource
import TestSupport
import Testing

@testable import OriginCore

/// A push channel with two renditions on a manual clock, journaling markers under a temporary data directory.
final class MarkerHarness {
    let clock: ManualClock
    let directory: String
    let origin: Origin
    var generators: [String: TestStreamGenerator] = [:]
    let renditions = ["180p", "360p"]

    init(directory: String? = nil, clock: ManualClock = ManualClock(), cueTags: CueTagOptions = .daterange) throws {
        self.clock = clock
        self.directory = directory ?? NSTemporaryDirectory() + "markers-" + UUID().uuidString
        var channel = ChannelConfiguration(name: "ch", renditions: renditions.map { RenditionConfiguration(name: $0) })
        channel.cueTags = cueTags.mode
        channel.oatcls = cueTags.oatcls
        var configuration = OriginConfiguration(channels: [channel])
        configuration.dataDirectory = self.directory
        origin = try Origin(
            configuration: configuration, clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        for rendition in renditions {
            generators[rendition] = try TestStreamGenerator(
                profile: TestSourceProfile.named(rendition)!, segmentDuration: 2)
        }
    }

    var channel: Channel { origin.channel(named: "ch")! }

    /// Lets 2 s pass, pushes one segment to every rendition, ticks.
    func slot() throws {
        clock.advance(seconds: 2)
        for rendition in renditions {
            let bytes = SharedBytes(generators[rendition]!.nextSegment().bytes)
            _ = try origin.ingest(channel: "ch", rendition: rendition, fileName: "s.ts", body: bytes)
        }
        origin.tick()
    }

    func text(_ rendition: String) throws -> String {
        String(decoding: try #require(channel.snapshot.renditions[rendition]?.playlist).array, as: UTF8.self)
    }

    /// The DATERANGE lines of a rendition's playlist.
    func dateRangeLines(_ rendition: String) throws -> [String] {
        try text(rendition).split(separator: "\n").map(String.init).filter { $0.hasPrefix("#EXT-X-DATERANGE:") }
    }

    var now: ProgramDateTime { ProgramDateTime(millisecondsSince1970: clock.nowMilliseconds()) }
}

@Suite("Markers in the playlists, journaled across restarts", .offThePool)
struct MarkerPlaylistTests {
    @Test("a marker appears in every rendition, identical, before the segment it starts in, with PDT")
    func appearsInEveryRendition() throws {
        let harness = try MarkerHarness()
        for _ in 0..<4 { try harness.slot() }
        let start = harness.now.adding(milliseconds: -3000)
        let result = try harness.channel.addMarker(
            MarkerRequest(id: "ad", classAttribute: "ad", startDate: start, duration: 10, scte35: .out))
        #expect(result.changed)
        for rendition in harness.renditions {
            let playlist = try MediaPlaylist.parse(try harness.text(rendition))
            let segment = try #require(playlist.segments.first { !$0.dateRanges.isEmpty })
            let pdt = try #require(segment.programDateTime).millisecondsSince1970
            #expect(pdt <= start.millisecondsSince1970 && start.millisecondsSince1970 < pdt + 2000)
            #expect(segment.dateRanges.map(\.id) == ["ad"])
            #expect(playlist.segments.allSatisfy { $0.programDateTime != nil })
            #expect(try harness.dateRangeLines(rendition) == [result.marker.renderedTag])
        }
    }

    @Test("a marker scheduled ahead shows up once the window reaches it and stays identical until it leaves")
    func scheduledAhead() throws {
        let harness = try MarkerHarness()
        for _ in 0..<3 { try harness.slot() }
        let marker = try harness.channel.addMarker(
            MarkerRequest(id: "later", startDate: harness.now.adding(milliseconds: 7000), duration: 4)
        ).marker
        #expect(try harness.dateRangeLines("360p").isEmpty)
        var seen = 0
        var left = false
        for _ in 0..<20 {
            try harness.slot()
            let lines = try harness.dateRangeLines("360p")
            #expect(lines == (try harness.dateRangeLines("180p")))
            if lines.isEmpty {
                if seen > 0 { left = true }
            } else {
                #expect(!left, "a marker came back after leaving")
                #expect(lines == [marker.renderedTag])
                seen += 1
            }
        }
        #expect(seen >= 6)
        #expect(left)
        // Pruned from the book and the journal after it left (with the grace of two target durations).
        #expect(harness.channel.marker(id: "later") == nil)
        let journal = try #require(try MarkerJournal(dataDirectory: harness.directory, channel: "ch").load())
        #expect(journal.markers["later"] == nil)
        #expect(journal.retiredIds["later"] != nil)
    }

    @Test("cue-in adds END-DATE to the shown tag without changing what it showed")
    func cueIn() throws {
        let harness = try MarkerHarness()
        for _ in 0..<4 { try harness.slot() }
        let open = try harness.channel.addMarker(
            MarkerRequest(id: "brk", classAttribute: "ad", startDate: harness.now, plannedDuration: 30, scte35: .out)
        ).marker
        try harness.slot()
        let before = try harness.dateRangeLines("360p")
        #expect(before == [open.renderedTag])
        try harness.slot()
        let closed = try harness.channel.closeMarker(id: "brk", MarkerPatch(endDate: harness.now)).marker
        let after = try harness.dateRangeLines("360p")
        #expect(after == [closed.renderedTag])
        #expect(after == (try harness.dateRangeLines("180p")))
        let shown = try AttributeList.parse(String(before[0].dropFirst("#EXT-X-DATERANGE:".count)))
        let now = try AttributeList.parse(String(after[0].dropFirst("#EXT-X-DATERANGE:".count)))
        for attribute in shown {
            #expect(now.first { $0.name == attribute.name }?.value == attribute.value)
        }
        #expect(Set(now.map(\.name)).subtracting(shown.map(\.name)) == ["END-DATE", "SCTE35-IN"])
    }

    @Test("cue tags follow the break in every rendition, from the first segment starting after the splice")
    func cueTagsInEveryRendition() throws {
        let harness = try MarkerHarness(cueTags: CueTagOptions(mode: .both))
        for _ in 0..<4 { try harness.slot() }
        _ = try harness.channel.addMarker(
            MarkerRequest(id: "brk", startDate: harness.now.adding(milliseconds: 1000), duration: 4, scte35: .out))
        for _ in 0..<4 { try harness.slot() }
        let text = try harness.text("360p")
        let cueLines = text.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-CUE") }
        #expect(
            cueLines == [
                "#EXT-X-CUE-OUT:4.000", "#EXT-X-CUE-OUT-CONT:ElapsedTime=3.000,Duration=4.000", "#EXT-X-CUE-IN",
            ])
        #expect(
            cueLines == (try harness.text("180p")).split(separator: "\n").filter { $0.hasPrefix("#EXT-X-CUE") })
    }

    @Test("after a restart every journaled marker is back with the same attributes")
    func restart() throws {
        let clock = ManualClock()
        let first = try MarkerHarness(clock: clock)
        for _ in 0..<4 { try first.slot() }
        var tags: [String: String] = [:]
        for index in 0..<10 {
            let request = MarkerRequest(
                id: "m\(index)", classAttribute: index % 3 == 0 ? "ad" : nil,
                startDate: first.now.adding(milliseconds: Int64(index) * 500 - 4000),
                duration: index % 2 == 0 ? 60 : nil, scte35: index % 4 == 0 ? .out : nil,
                clientAttributes: [MarkerAttribute(name: "X-N", value: .number(Double(index)))])
            tags[request.id] = try first.channel.addMarker(request).marker.renderedTag
        }
        tags["m1"] = try first.channel.closeMarker(id: "m1", MarkerPatch(duration: 50)).marker.renderedTag
        // The process dies here; a new origin starts from the same data directory.
        let second = try MarkerHarness(directory: first.directory, clock: clock)
        #expect(Dictionary(uniqueKeysWithValues: second.channel.allMarkers.map { ($0.id, $0.renderedTag) }) == tags)
        for _ in 0..<3 { try second.slot() }
        for rendition in second.renditions {
            #expect(Set(try second.dateRangeLines(rendition)) == Set(tags.values))
        }
        // Idempotency survives the restart too.
        let again = try second.channel.addMarker(first.channel.marker(id: "m2")!.request)
        #expect(!again.changed)
    }

    @Test("an unreadable journal is moved aside and the channel starts without markers")
    func unreadableJournal() throws {
        let directory = NSTemporaryDirectory() + "markers-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory + "/markers", withIntermediateDirectories: true)
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: directory + "/markers/ch.json"))
        let harness = try MarkerHarness(directory: directory)
        #expect(harness.channel.allMarkers.isEmpty)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory + "/markers")
        #expect(names.contains { $0.hasPrefix("ch.json.unreadable-") })
        _ = try harness.channel.addMarker(MarkerRequest(id: "fresh"))
        #expect(try MarkerJournal(dataDirectory: directory, channel: "ch").load()?.markers["fresh"] != nil)
    }
}
