import Foundation
import HLSPackaging
import HLSPlaylist
import LiveTimeline
import Logging
import MicroHTTPD
import TestSource
import TestSupport
import Testing

@testable import OriginCore
@testable import OriginServer
@testable import Persistence

/// An origin with a data directory behind a real HTTP server on 127.0.0.1, on a manual clock that a restarted
/// origin can continue: channel `ch` (push, 2 s segments, a live window of 3 segments, no DVR).
final class RecordingStack {
    let clock: ManualClock
    let directory: String
    let origin: Origin
    private let server: HTTPServer
    let port: Int
    private var generators: [String: TestStreamGenerator] = [:]
    /// Segments pushed to each rendition; with no gaps, index = MSN.
    var pushed: [String: [[UInt8]]] = [:]
    let renditions: [String]

    init(
        directory: String, clock: ManualClock = ManualClock(), renditions: [String] = ["360p", "180p"],
        dvrHours: Double? = nil, sharedRecordings: (any SharedRecordings)? = nil
    ) throws {
        self.clock = clock
        self.directory = directory
        self.renditions = renditions
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.threads = 1
        var channel = ChannelConfiguration(
            name: "ch", renditions: renditions.map { RenditionConfiguration(name: $0) })
        channel.window = .segments(3)
        channel.dvr = dvrHours.map { DVRConfiguration(hours: $0) }
        configuration.origin.channels = [channel]
        configuration.origin.dataDirectory = directory
        let logger = Logger(label: "recording-tests", factory: { _ in SwiftLogNoOpLogHandler() })
        origin = try Origin(
            configuration: configuration.origin, clock: clock, logger: logger, sharedRecordings: sharedRecordings)
        let handler = OriginHTTPHandler(
            origin: origin, configuration: configuration, metrics: RequestMetrics(), logger: logger)
        server = HTTPServer(
            configuration: OriginService.httpConfiguration(configuration, threadCount: 1), handler: handler)
        try server.start()
        port = server.boundPort
        for rendition in renditions {
            generators[rendition] = try TestStreamGenerator(
                profile: TestSourceProfile.named(rendition)!, segmentDuration: 2)
        }
    }

    deinit { server.stop() }

    func request(_ method: String, _ target: String, body: String? = nil) throws -> RawHTTPResponse {
        let response = try RawHTTPConnection(port: port).request(method, target, body: body.map { Array($0.utf8) })
        AdminOpenAPIValidator.record(method, target, response)  // every admin answer as described
        return response
    }

    func get(_ target: String) throws -> RawHTTPResponse { try request("GET", target) }

    func playlistText360p() throws -> String { try get("/live/ch/360p/index.m3u8").text }

    /// Lets 2 s pass, pushes the next segment of every rendition, then runs the ingest loop once.
    func slot() throws {
        clock.advance(seconds: 2)
        for rendition in renditions {
            let bytes = generators[rendition]!.nextSegment().bytes
            let response = try RawHTTPConnection(port: port).request(
                "PUT", "/ingest/ch/\(rendition)/s.ts", body: bytes)
            guard response.status == 201 else {
                throw TestFailure("push answered \(response.status): \(response.text)")
            }
            pushed[rendition, default: []].append(bytes)
        }
        origin.tick()
    }

    func slots(_ count: Int) throws {
        for _ in 0..<count { try slot() }
    }

    /// PDT of an MSN (slot 0 starts at the first push; every slot lasts 2 s).
    func pdt(_ msn: Int) -> Int64 { firstPDT + Int64(msn) * 2000 }
    var firstPDT: Int64 = 0

    /// Records the first slot's PDT (call after the first slot).
    func noteFirstPDT() throws {
        let text = try get("/live/ch/\(renditions[0])/index.m3u8").text
        let playlist = try MediaPlaylist.parse(text)
        let first = try #require(playlist.segments.first?.programDateTime)
        firstPDT = first.millisecondsSince1970 - Int64(playlist.mediaSequence) * 2000
    }

    func post(id: String, start: Int64, end: Int64, channel: String = "ch") throws -> RawHTTPResponse {
        try request(
            "POST", "/admin/channels/\(channel)/recordings",
            body: "{\"id\":\"\(id)\",\"start\":\"\(Self.iso(start))\",\"end\":\"\(Self.iso(end))\"}")
    }

    static func iso(_ milliseconds: Int64) -> String { ProgramDateTime(millisecondsSince1970: milliseconds).formatted }

    /// The channel's store horizon (everything below may have been evicted).
    var horizon: UInt64 { origin.channel(named: "ch")?.status().storage?.horizonMSN ?? 0 }
}

extension RawHTTPResponse {
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:] }
}

@Suite("Recordings: admin routes, pins, VOD playlists and segments, restarts", .offThePool)
struct RecordingRouteTests {
    static func stack(dvrHours: Double? = nil) throws -> RecordingStack {
        try RecordingStack(directory: try TemporaryDirectory.make("recordings").path, dvrHours: dvrHours)
    }

    @Test func postAnswers201Then200ForTheSameBodyAnd409ForAnother() throws {
        let stack = try Self.stack()
        try stack.slot()
        try stack.noteFirstPDT()
        try stack.slots(3)
        let created = try stack.post(id: "show", start: stack.pdt(1), end: stack.pdt(20))
        #expect(created.status == 201, "\(created.text)")
        let recording = created.json
        #expect(recording["id"] as? String == "show")
        #expect(recording["state"] as? String == "recording")
        #expect(recording["vod"] as? String == "/vod/show/index.m3u8")
        #expect(try stack.post(id: "show", start: stack.pdt(1), end: stack.pdt(20)).status == 200)
        let other = try stack.post(id: "show", start: stack.pdt(1), end: stack.pdt(21))
        #expect(other.status == 409)
        #expect(other.json["field"] as? String == "id")
        let scheduled = try stack.post(id: "later", start: stack.pdt(100), end: stack.pdt(110))
        #expect(scheduled.json["state"] as? String == "scheduled")
        let list = try stack.get("/admin/channels/ch/recordings").json["recordings"] as? [[String: Any]]
        #expect(list?.map { $0["id"] as? String } == ["show", "later"])
        #expect(try stack.get("/admin/channels/ch/recordings/show").json["state"] as? String == "recording")
        #expect(try stack.get("/admin/channels/ch/recordings/nothing").status == 404)
        #expect(try stack.get("/admin/channels/other/recordings").status == 404)
        let put = try stack.request("PUT", "/admin/channels/ch/recordings/show", body: "{}")
        #expect(put.status == 405)
        #expect(put.header("Allow") == "GET, HEAD, DELETE, OPTIONS")
        #expect(try stack.request("PATCH", "/admin/channels/ch/recordings", body: "{}").status == 405)
    }

    @Test func refusalsSayWhatIsWrong() throws {
        let stack = try Self.stack()
        try stack.slot()
        try stack.noteFirstPDT()
        try stack.slots(30)
        #expect(stack.horizon > 0, "the store evicted the oldest slots")
        let early = try stack.post(id: "early", start: stack.pdt(0) - 60_000, end: stack.pdt(10))
        #expect(early.status == 422, "\(early.text)")
        #expect(early.json["field"] as? String == "start")
        let backwards = try stack.post(id: "backwards", start: stack.pdt(28), end: stack.pdt(28))
        #expect(backwards.status == 422)
        #expect(backwards.json["field"] as? String == "end")
        let long = try stack.post(id: "long", start: stack.pdt(28), end: stack.pdt(28) + 24 * 3_600_000 + 1)
        #expect(long.status == 400)
        for body in [
            "not json", "[]", "{\"id\":\"a\",\"start\":\"2026-01-01T00:00:00Z\"}",
            "{\"id\":\"a b\",\"start\":1767225600,\"end\":1767225700}",
            "{\"id\":\"a\",\"start\":\"yesterday\",\"end\":1767225700}",
            "{\"id\":\"a\",\"start\":1767225600,\"end\":1767225700,\"title\":\"x\"}",
            "{\"id\":7,\"start\":1767225600,\"end\":1767225700}",
        ] {
            let answer = try stack.request("POST", "/admin/channels/ch/recordings", body: body)
            #expect(answer.status == 400, "\(body): \(answer.status) \(answer.text)")
            #expect(answer.json["error"] is String)
        }
        let unknown = try stack.post(id: "x", start: stack.pdt(28), end: stack.pdt(29), channel: "nope")
        #expect(unknown.status == 404)
        #expect(OriginHTTPHandler.status(of: .tooMany) == 429)
        #expect(OriginHTTPHandler.status(of: .notPersisted(outOfSpace: true)) == 507)
        #expect(OriginHTTPHandler.status(of: .notPersisted(outOfSpace: false)) == 500)
    }

    @Test func moreThanAThousandRecordingsAreRefused() throws {
        let store = RecordingStore(logger: Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }))
        for index in 0..<RecordingStore.maximumRecordings {
            let request = RecordingRequest(
                id: "r\(index)", requestedStart: "0", requestedEnd: "10", startMilliseconds: 0, endMilliseconds: 10_000)
            _ = try store.create(request, channel: "ch", nowMilliseconds: 0) { 0 }
        }
        let request = RecordingRequest(
            id: "one-more", requestedStart: "0", requestedEnd: "10", startMilliseconds: 0, endMilliseconds: 10_000)
        do throws(RecordingError) {
            _ = try store.create(request, channel: "ch", nowMilliseconds: 0) { 0 }
            Issue.record("recording 1001 was created")
        } catch {
            #expect(error.reason == .tooMany)
        }
    }

    @Test func manifestsRoundTripAndUnreadableOnesAreLeftOut() throws {
        let directory = try TemporaryDirectory.make("recording-journal").path
        let journal = RecordingJournal(dataDirectory: directory)
        let manifest = RecordingManifest(
            id: "a", channel: "ch", requestedStart: "1767225600", requestedEnd: "-10",
            startMilliseconds: 1_767_225_600_000,
            endMilliseconds: 1_767_225_610_000, createdMilliseconds: 1_767_225_590_000)
        try journal.save(manifest)
        try Data("{\"format\": \"other\"}".utf8).write(to: URL(fileURLWithPath: journal.path(id: "b")))
        let (loaded, unreadable) = journal.loadAll()
        #expect(loaded == [manifest])
        #expect(unreadable.map(\.path) == [journal.path(id: "b")])
        try journal.remove(id: "a")
        try journal.remove(id: "a")
        #expect(journal.loadAll().manifests.isEmpty)
        #expect(RecordingJournal.isOutOfSpace(DurableWriteError("fsync x: " + String(cString: strerror(ENOSPC)))))
        #expect(!RecordingJournal.isOutOfSpace(DurableWriteError("fsync x: " + String(cString: strerror(EIO)))))
    }

    @Test func deleteAnswers204ThenTheRecordingIsGone() throws {
        let stack = try Self.stack()
        try stack.slot()
        try stack.noteFirstPDT()
        #expect(try stack.post(id: "gone", start: stack.pdt(0), end: stack.pdt(5)).status == 201)
        let manifest = stack.directory + "/recordings/gone.json"
        #expect(FileManager.default.fileExists(atPath: manifest))
        #expect(try stack.request("DELETE", "/admin/channels/ch/recordings/gone").status == 204)
        #expect(!FileManager.default.fileExists(atPath: manifest))
        #expect(try stack.get("/admin/channels/ch/recordings/gone").status == 404)
        #expect(try stack.request("DELETE", "/admin/channels/ch/recordings/gone").status == 404)
        #expect(try stack.get("/vod/gone/index.m3u8").status == 404)
    }

    @Test func theVODPlaylistListsExactlyTheIntervalWithEndlistAndTheSameBytes() throws {
        let stack = try Self.stack()
        try stack.slot()
        try stack.noteFirstPDT()
        try stack.slots(2)
        // [PDT(2) + 0.5 s, PDT(6)): the slots 2, 3, 4 and 5.
        #expect(try stack.post(id: "clip", start: stack.pdt(2) + 500, end: stack.pdt(6)).status == 201)
        let marker = try stack.request(
            "POST", "/admin/channels/ch/dateranges",
            body: "{\"id\":\"ad\",\"startDate\":\"\(RecordingStack.iso(stack.pdt(3)))\",\"duration\":2}")
        #expect(marker.status == 201, "\(marker.text)")
        try stack.slots(2)
        let early = try stack.get("/vod/clip/index.m3u8")
        #expect(early.status == 404)
        #expect(early.text.contains("recording 'clip' finishes at \(RecordingStack.iso(stack.pdt(6)))"))
        try stack.slots(40)
        let recording = try stack.get("/admin/channels/ch/recordings/clip").json
        #expect(recording["state"] as? String == "finished")
        let contents = recording["contents"] as? [String: Any]
        #expect(contents?["firstMSN"] as? Int == 2)
        #expect(contents?["lastMSN"] as? Int == 5)
        #expect((contents?["dateRanges"] as? [String])?.first?.contains("ID=\"ad\"") == true)

        let multivariant = try stack.get("/vod/clip/index.m3u8")
        #expect(multivariant.status == 200)
        #expect(multivariant.text.contains("360p/index.m3u8") && multivariant.text.contains("180p/index.m3u8"))
        #expect(!multivariant.text.contains("I-FRAME"), "I-frame playlists are live only: \(multivariant.text)")
        for rendition in stack.renditions {
            let response = try stack.get("/vod/clip/\(rendition)/index.m3u8")
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "application/vnd.apple.mpegurl")
            let gzipped = try RawHTTPConnection(port: stack.port).request(
                "GET", "/vod/clip/\(rendition)/index.m3u8", headers: [("Accept-Encoding", "gzip")])
            #expect(gzipped.header("Content-Encoding") == "gzip")
            let playlist = try MediaPlaylist.parse(response.text)
            #expect(playlist.playlistType == .vod)
            #expect(playlist.endList)
            #expect(playlist.mediaSequence == 2)
            #expect(playlist.segments.map(\.uri) == ["2.ts", "3.ts", "4.ts", "5.ts"])
            #expect(
                playlist.segments.map { $0.programDateTime?.millisecondsSince1970 } == (2...5).map { stack.pdt($0) })
            #expect(playlist.start?.timeOffset == 0.5)
            #expect(playlist.segments[1].dateRanges.map(\.id) == ["ad"], "the copied marker")
            for msn in 2...5 {
                let segment = try stack.get("/vod/clip/\(rendition)/\(msn).ts")
                #expect(segment.status == 200)
                #expect(segment.body == stack.pushed[rendition]![msn], "\(rendition) \(msn): other bytes")
                // CMSD: a recording's segment is of the type its channel's rendition carries, every one available.
                #expect(segment.header("CMSD-Static")?.hasSuffix(",ot=av,sf=h,st=v") == true, "\(rendition) \(msn)")
            }
            #expect(try stack.get("/vod/clip/\(rendition)/6.ts").status == 404, "outside the recording")
            #expect(try stack.get("/vod/clip/\(rendition)/1.ts").status == 404, "outside the recording")
            #expect(try stack.get("/vod/clip/\(rendition)/3.m4s").status == 404)
        }
        #expect(try stack.get("/vod/clip/720p/index.m3u8").status == 404)
        #expect(try stack.request("POST", "/vod/clip/index.m3u8", body: "x").status == 405)
    }

    @Test func markersOfAnUnfinishedRecordingStayUntilTheyAreCopied() throws {
        let stack = try Self.stack()
        try stack.slot()
        try stack.noteFirstPDT()
        try stack.slots(2)
        #expect(try stack.post(id: "long", start: stack.pdt(1), end: stack.pdt(30)).status == 201)
        let marker = try stack.request(
            "POST", "/admin/channels/ch/dateranges",
            body: "{\"id\":\"early-ad\",\"startDate\":\"\(RecordingStack.iso(stack.pdt(2)))\",\"duration\":2}")
        #expect(marker.status == 201, "\(marker.text)")
        try stack.slots(20)
        let channel = try #require(stack.origin.channel(named: "ch"))
        #expect(!(try stack.playlistText360p().contains("early-ad")), "the marker left the live window")
        #expect(channel.marker(id: "early-ad") != nil, "kept in the book: the recording has not copied it yet")
        try stack.slots(30)
        #expect(channel.marker(id: "early-ad") == nil, "pruned once the recording copied it")
        let playlist = try MediaPlaylist.parse(try stack.get("/vod/long/360p/index.m3u8").text)
        #expect(playlist.segments.flatMap(\.dateRanges).map(\.id) == ["early-ad"])
        #expect(playlist.segments.count == 29)
    }

    @Test func pinnedSlotsAreNotEvictedWhateverTheDVRWindow() throws {
        let pinned = try Self.stack()
        let unpinned = try Self.stack()
        for stack in [pinned, unpinned] {
            try stack.slot()
            try stack.noteFirstPDT()
            try stack.slots(4)
        }
        #expect(try pinned.post(id: "keep", start: pinned.pdt(3), end: pinned.pdt(5)).status == 201)
        // A scheduled recording pins its slots too, once they exist.
        #expect(try pinned.post(id: "ahead", start: pinned.pdt(30), end: pinned.pdt(32)).status == 201)
        for stack in [pinned, unpinned] { try stack.slots(40) }
        #expect(unpinned.horizon > 20, "without recordings the store keeps only the window: \(unpinned.horizon)")
        #expect(pinned.horizon <= 3, "slots 3 and 4 are pinned: horizon \(pinned.horizon)")
        for msn in [3, 4] {
            #expect(try pinned.get("/vod/keep/360p/\(msn).ts").body == pinned.pushed["360p"]![msn])
        }
        // Deleting the older recording releases its pin; the scheduled one (now finished) keeps its slots.
        #expect(try pinned.request("DELETE", "/admin/channels/ch/recordings/keep").status == 204)
        try pinned.slots(10)
        #expect(pinned.horizon > 4 && pinned.horizon <= 30, "horizon \(pinned.horizon)")
        #expect(try pinned.get("/vod/ahead/180p/30.ts").body == pinned.pushed["180p"]![30])
    }

    @Test func byteLimitEvictionStopsAtAPinnedSlot() throws {
        let pinned = try Self.stack(dvrHours: 1)
        let unpinned = try Self.stack(dvrHours: 1)
        for stack in [pinned, unpinned] {
            try stack.slot()
            try stack.noteFirstPDT()
            try stack.slots(30)
        }
        #expect(try pinned.post(id: "keep", start: pinned.pdt(5), end: pinned.pdt(8)).status == 201)
        for stack in [pinned, unpinned] {
            #expect(stack.origin.channel(named: "ch")?.evictOldest(until: 0) == false, "the live window stays")
        }
        #expect(unpinned.horizon > 20, "without a recording everything below the live window goes")
        #expect(pinned.horizon <= 5, "nothing from the recording's first slot on: horizon \(pinned.horizon)")
        try pinned.slots(5)
        #expect(try pinned.get("/vod/keep/360p/5.ts").body == pinned.pushed["360p"]![5])
    }

    @Test func recordingsSurviveARestartWithTheSamePlaylistsAndBytes() throws {
        let directory = try TemporaryDirectory.make("recordings-restart").path
        let clock = ManualClock()
        var first: RecordingStack? = try RecordingStack(directory: directory, clock: clock)
        try first!.slot()
        try first!.noteFirstPDT()
        try first!.slots(2)
        #expect(try first!.post(id: "kept", start: first!.pdt(1), end: first!.pdt(4)).status == 201)
        #expect(try first!.post(id: "pending", start: first!.pdt(2), end: first!.pdt(80)).status == 201)
        try first!.slots(10)
        let playlist = try first!.get("/vod/kept/360p/index.m3u8").text
        let pushed = first!.pushed
        let firstPDT = first!.firstPDT
        first = nil
        clock.advance(seconds: 30)
        let second = try RecordingStack(directory: directory, clock: clock)
        second.firstPDT = firstPDT
        second.origin.tick()
        #expect(try second.get("/admin/channels/ch/recordings/kept").json["state"] as? String == "finished")
        #expect(try second.get("/admin/channels/ch/recordings/pending").json["state"] as? String == "recording")
        #expect(try second.get("/vod/kept/360p/index.m3u8").text == playlist)
        for msn in 1...3 {
            #expect(try second.get("/vod/kept/360p/\(msn).ts").body == pushed["360p"]![msn])
        }
        #expect(try second.post(id: "kept", start: firstPDT + 2000, end: firstPDT + 8000).status == 200)
    }
}
