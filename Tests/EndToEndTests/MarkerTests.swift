import Foundation
import Glibc
import HLSPlaylist
import TestSupport
import Testing

extension EndToEndRestarts {
    /// Ad markers (docs/markers.md): a real ffmpeg pushes two renditions with an ingest token;
    /// 20 markers are posted (open ones closed later by PATCH, SCTE-35 encoded by the origin and raw, scheduled ahead,
    /// END-ON-NEXT chapters); the playlists are read for 35 s; three more are posted just before the kill; the origin
    /// is killed with SIGKILL and restarted on the same port, and no acknowledged marker may be missing. Bad requests
    /// get the documented status.
    @Suite("End to end: ad markers posted, played out and kept across SIGKILL", .tags(.endToEnd))
    struct MarkerTests {
        static let adminToken = "e2e-admin-token"
        static let ingestToken = "e2e-ingest-token"
        static let channel = "live"
        static let names = ["hi", "lo"]
        static let configuration = """
            logLevel: warning
            admin:
              token: \(adminToken)
            ingest:
              autoCreate: false
              token: \(ingestToken)
            channels:
              - name: \(channel)
                segmentDuration: 2
                window: { segments: 6 }
                renditions: [{name: hi}, {name: lo}]
            """
        static let renditions = [
            FFmpeg.PushedRendition(name: "hi", width: 640, height: 360, videoBitrate: "500k"),
            FFmpeg.PushedRendition(name: "lo", width: 320, height: 180, videoBitrate: "200k"),
        ]
        static let rawOut =
            "0xFC302F000000000000FFFFF014054800008F7FEFFE7369C02EFE0052CCF500000000000A0008435545490000013562DBA30A"
        static let path = "/admin/channels/\(channel)/dateranges"

        @Test("20 markers in both renditions, tags only gain attributes, PDT present, none lost across kill -9")
        func markersAcrossKillAndRestart() async throws {
            let port = try OriginProcess.freePort()
            let origin = try await OriginProcess(configuration: Self.configuration, label: "markers", port: port)
            var encoders: [ChildProcess] = []
            var restarted: OriginProcess?
            do {
                try await Self.scenario(origin: origin, port: port, encoders: &encoders) { restarted = $0 }
            } catch {
                for encoder in encoders { encoder.signal(SIGKILL) }
                origin.kill()
                restarted?.kill()
                throw EndToEndError(
                    "\(error)\n--- hlsorigin log tail (\(origin.directory.path)) ---\n\(origin.logTail())\n"
                        + "--- restarted ---\n\(restarted?.logTail() ?? "")")
            }
            for encoder in encoders { encoder.signal(SIGKILL) }
            let status = await restarted?.stop()
            #expect(status == 0, "the restarted origin did not exit cleanly: \(restarted?.logTail() ?? "")")
        }

        /// A JSON request to the admin API with the right token (or `token`), answer decoded as a JSON object.
        struct Admin {
            let client: HTTPClient

            func send(
                _ method: String, _ path: String, json: Any? = nil, raw: [UInt8]? = nil,
                token: String? = MarkerTests.adminToken
            ) async throws -> (status: Int, object: [String: Any], text: String, response: RawHTTPResponse) {
                var headers: [(String, String)] = [("Content-Type", "application/json")]
                if let token { headers.append(("Authorization", "Bearer \(token)")) }
                let body = try raw ?? json.map { Array(try JSONSerialization.data(withJSONObject: $0)) } ?? []
                let response = try await client.request(method, path, headers: headers, body: body)
                let object =
                    (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
                return (response.status, object, response.text, response)
            }
        }

        static func iso(_ date: Date) -> String {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return formatter.string(from: date)
        }

        static func date(_ text: String) -> Date? {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            if let date = formatter.date(from: text) { return date }
            formatter.formatOptions = [.withInternetDateTime]
            return formatter.date(from: text)
        }

        /// The attributes of an `#EXT-X-DATERANGE:` line, raw values (quoted strings keep their quotes).
        static func attributes(_ tag: String) throws -> [String: String] {
            let list = String(tag.drop { $0 != ":" }.dropFirst())
            return Dictionary(
                try AttributeList.parse(list).map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        }

        static func id(_ tag: String) throws -> String {
            try AttributeList.unquoted(attributes(tag)["ID"] ?? "") ?? ""
        }

        /// What one playlist reload shows: the window on the PDT timeline and the DATERANGE lines.
        struct Snapshot {
            let rendition: String
            let windowStart: Double
            let windowEnd: Double
            let tags: [String]
            let segments: Int
            let programDateTimes: Int
        }

        static func snapshot(_ client: HTTPClient, _ rendition: String) async throws -> Snapshot? {
            let response = try await client.get("/live/\(channel)/\(rendition)/index.m3u8")
            guard response.status == 200 else { return nil }
            let playlist = try MediaPlaylist.parse(response.text)
            let lines = response.text.split(separator: "\n").map(String.init)
            guard let first = playlist.segments.first?.programDateTime, let last = playlist.segments.last,
                let lastStart = last.programDateTime
            else { return nil }
            return Snapshot(
                rendition: rendition, windowStart: Double(first.millisecondsSince1970) / 1000,
                windowEnd: Double(lastStart.millisecondsSince1970) / 1000 + last.duration,
                tags: lines.filter { $0.hasPrefix("#EXT-X-DATERANGE:") }, segments: playlist.segments.count,
                programDateTimes: lines.filter { $0.hasPrefix("#EXT-X-PROGRAM-DATE-TIME:") }.count)
        }

        /// Start and end (nil: open) of every marker from its tag, END-ON-NEXT ending at the next START-DATE of its
        /// class.
        static func ranges(_ tags: [String: String]) throws -> [String: (start: Double, end: Double?)] {
            var result: [String: (start: Double, end: Double?, endOnNext: String?)] = [:]
            for (id, tag) in tags {
                let attributes = try Self.attributes(tag)
                let start = try #require(
                    (AttributeList.unquoted(attributes["START-DATE"] ?? "")).flatMap(date), "\(tag)"
                )
                .timeIntervalSince1970
                var end: Double?
                if let text = attributes["END-DATE"].flatMap(AttributeList.unquoted), let date = date(text) {
                    end = date.timeIntervalSince1970
                } else if let duration = attributes["DURATION"].flatMap(Double.init) {
                    end = start + duration
                }
                let endOnNext = attributes["END-ON-NEXT"] == "YES" ? attributes["CLASS"] : nil
                result[id] = (start, end, endOnNext)
            }
            var final: [String: (start: Double, end: Double?)] = [:]
            for (id, range) in result {
                var end = range.end
                if let kind = range.endOnNext {
                    end = result.values.filter { $0.endOnNext == kind && $0.start > range.start }.map(\.start).min()
                }
                final[id] = (range.start, end)
            }
            return final
        }

        private static func scenario(
            origin: OriginProcess, port: Int, encoders: inout [ChildProcess], restartedOrigin: (OriginProcess) -> Void
        ) async throws {
            let client = HTTPClient(port: port)
            let admin = Admin(client: client)
            func startEncoder(_ label: String) throws {
                encoders.append(
                    try FFmpeg.startPush(
                        port: port, channel: channel, renditions: renditions, directory: origin.directory,
                        label: label, ingestToken: ingestToken))
            }
            try startEncoder("encoder-1")
            try await waitForBothPlaylists(client)

            // Bad requests: the documented status, 400 naming the field.
            try await checkBadRequests(admin: admin, client: client)

            // 20 markers, then the same body again, a conflicting one and refused PATCHes.
            let bodies = markerBodies(now: Date())
            let acknowledged = try await post(bodies, admin: admin)
            #expect(acknowledged.count == 20)
            try await checkRepeatedAndConflictingWrites(bodies: bodies, acknowledged: acknowledged, admin: admin)

            // 35 s of playlists; the open markers are closed after 10 s.
            var watch = MarkerWatch(acknowledged: acknowledged)
            let snapshots = try await watchPlaylistsClosingOpenMarkers(client: client, admin: admin, watch: &watch)
            expectEveryMarkerInBothRenditions(watch)

            // Three more, acknowledged just before the kill: they must come back and be listed after the restart.
            let late = try await postLateMarkers(admin: admin, watch: &watch)

            // kill -9 and restart: no acknowledged marker is missing.
            let before = try await admin.send("GET", path)
            #expect(before.status == 200, "\(before.text)")
            let beforeTags = try listedTags(before.object)
            try expectListMatchesAcknowledged(beforeTags, watch: watch)
            origin.kill()
            _ = await origin.child.wait(timeout: .seconds(5))
            let restarted = try await OriginProcess(
                configuration: configuration, label: "restarted", port: port, restarting: origin.directory)
            restartedOrigin(restarted)
            let after = try await admin.send("GET", path)
            let afterTags = try listedTags(after.object)
            #expect(after.status == 200, "\(after.text)")
            #expect(
                afterTags == beforeTags,
                Comment(
                    rawValue: "after kill -9: \(afterTags.count) markers listed, \(beforeTags.count) before; missing "
                        + "\(Set(beforeTags.keys).subtracting(afterTags.keys).sorted()), changed "
                        + "\(afterTags.filter { beforeTags[$0.key] != nil && beforeTags[$0.key] != $0.value }.keys)"))

            // The playlists of the restarted origin: the same tags, every stored marker that overlaps the window.
            watch.ranges = try ranges(beforeTags)
            watch.requireOverlapping = true
            let (afterSnapshots, restartedEncoder) = try await watchRestartedOrigin(
                client: client, watch: &watch, encoder: encoders.last, startEncoder: startEncoder)
            #expect(afterSnapshots >= 10, "only \(afterSnapshots) playlists after the restart")
            #expect(
                watch.problems.isEmpty,
                "\(watch.problems.count) problems:\n\(watch.problems.prefix(40).joined(separator: "\n"))")
            for id in ["chapter-3", "late-fixed", "late-open", "late-ahead"] {
                #expect(watch.listedAfterRestart.contains(id), "\(id) is not listed after the restart")
            }
            print(
                "ad markers: \(acknowledged.count) + \(late) markers acknowledged, \(snapshots) playlists read "
                    + "in 35 s, "
                    + "\(beforeTags.count) listed before kill -9 and \(afterTags.count) after, \(afterSnapshots) "
                    + "playlists after the restart listing \(watch.listedAfterRestart.sorted()), encoder restarted: "
                    + "\(restartedEncoder), \(watch.checkedOverlaps) overlap checks")
        }

        /// Waits (at most 30 s) until both renditions serve a playlist with PDT.
        static func waitForBothPlaylists(_ client: HTTPClient) async throws {
            let ready = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < ready {
                var both = true
                for name in names where try await snapshot(client, name) == nil { both = false }
                if both { break }
                try await Task.sleep(for: .milliseconds(500))
            }
            for name in names {
                _ = try #require(try await snapshot(client, name), "\(name): no playlist within 30 s")
            }
        }

        /// 20 markers: five open ones (closed later by PATCH), five fixed with client attributes, four scheduled
        /// ahead, four END-ON-NEXT chapters, two with raw SCTE-35.
        static func markerBodies(now: Date) -> [[String: Any]] {
            var bodies: [[String: Any]] = []
            for i in 0..<5 {
                bodies.append([
                    "id": "open-\(i)", "class": "ad", "startDate": iso(now - Double(i)), "plannedDuration": 20,
                    "scte35": "out",
                ])
            }
            for i in 0..<5 {
                bodies.append([
                    "id": "fixed-\(i)", "startDate": iso(now - 2 + Double(i) * 0.5), "duration": 6 + i,
                    "scte35": "out", "clientAttributes": ["X-AD-ID": "ad\(i)", "X-N": i],
                ])
            }
            for i in 0..<4 {
                bodies.append(["id": "ahead-\(i)", "startDate": iso(now + 10 + 5 * Double(i)), "duration": 4])
            }
            for i in 0..<4 {
                bodies.append([
                    "id": "chapter-\(i)", "class": "chapter", "startDate": iso(now + 6 * Double(i)), "endOnNext": true,
                ])
            }
            for i in 0..<2 {
                bodies.append([
                    "id": "raw-\(i)", "duration": 8, "scte35": ["out": rawOut],
                    "clientAttributes": ["X-BLOB": ["hex": "0x0A0B"]],
                ])
            }
            return bodies
        }

        /// POSTs every body (each must answer 201 with a tag of its ID); returns the acknowledged tag per ID.
        static func post(_ bodies: [[String: Any]], admin: Admin) async throws -> [String: [String]] {
            /// Every tag the origin acknowledged per ID (the POST's, then the PATCH's).
            var acknowledged: [String: [String]] = [:]
            for body in bodies {
                let id = body["id"] as! String
                let answer = try await admin.send("POST", path, json: body)
                #expect(answer.status == 201, "POST \(id): \(answer.status) \(answer.text)")
                if answer.status == 201, let tag = answer.object["tag"] as? String {
                    acknowledged[id] = [tag]
                    #expect(try Self.id(tag) == id)
                }
            }
            return acknowledged
        }

        /// The same body again is 200 with the same tag; a different body under an existing ID, closing an END-ON-NEXT
        /// marker and changing a shown DURATION are 409.
        static func checkRepeatedAndConflictingWrites(
            bodies: [[String: Any]], acknowledged: [String: [String]], admin: Admin
        ) async throws {
            let again = try await admin.send("POST", path, json: bodies[5])
            #expect(again.status == 200, "the same body again: \(again.status) \(again.text)")
            #expect(again.object["tag"] as? String == acknowledged["fixed-0"]?.first, "\(again.text)")
            var changed = bodies[5]
            changed["duration"] = 99
            let conflict = try await admin.send("POST", path, json: changed)
            #expect(conflict.status == 409, "a different body with an existing id: \(conflict.status) \(conflict.text)")
            let chapterPatch = try await admin.send("PATCH", "\(path)/chapter-0", json: ["duration": 3])
            #expect(
                chapterPatch.status == 409, "closing an END-ON-NEXT marker: \(chapterPatch.status) \(chapterPatch.text)"
            )
            let fixedPatch = try await admin.send("PATCH", "\(path)/fixed-1", json: ["duration": 1])
            #expect(
                fixedPatch.status == 409,
                "a PATCH changing a shown DURATION: \(fixedPatch.status) \(fixedPatch.text)")
        }

        /// Reads both playlists every second for 35 s into `watch`; after 10 s closes the open markers by PATCH (a
        /// second PATCH to another END-DATE is 409). Returns the number of playlists read.
        static func watchPlaylistsClosingOpenMarkers(
            client: HTTPClient, admin: Admin, watch: inout MarkerWatch
        ) async throws -> Int {
            let started = ContinuousClock.now
            var closed = false
            var snapshots = 0
            while ContinuousClock.now - started < .seconds(35) {
                let round = ContinuousClock.now
                if !closed, round - started > .seconds(10) {
                    closed = true
                    for i in 0..<5 {
                        let answer = try await admin.send(
                            "PATCH", "\(path)/open-\(i)", json: ["endDate": iso(Date())])
                        #expect(answer.status == 200, "PATCH open-\(i): \(answer.status) \(answer.text)")
                        if let tag = answer.object["tag"] as? String { watch.acknowledged["open-\(i)"]!.append(tag) }
                        let same = try await admin.send(
                            "PATCH", "\(path)/open-\(i)", json: ["endDate": iso(Date() + 1)])
                        #expect(same.status == 409, "PATCH open-\(i) to another END-DATE: \(same.status) \(same.text)")
                    }
                }
                for name in names {
                    if let snapshot = try await snapshot(client, name) {
                        snapshots += 1
                        try watch.observe(snapshot)
                    }
                }
                try await Task.sleep(until: round + .seconds(1))
            }
            return snapshots
        }

        /// Every acknowledged marker showed in both renditions, with the same tags.
        static func expectEveryMarkerInBothRenditions(_ watch: MarkerWatch) {
            for id in watch.acknowledged.keys.sorted() {
                #expect(
                    watch.seenIn[id] == Set(names),
                    "\(id) appeared in \(watch.seenIn[id].map { $0.sorted() } ?? []), expected both renditions")
                let hi = watch.history["hi", default: [:]][id] ?? []
                let lo = watch.history["lo", default: [:]][id] ?? []
                #expect(Set(hi) == Set(lo), "\(id): hi showed \(hi), lo showed \(lo)")
            }
        }

        /// POSTs a fixed, an open and a scheduled-ahead marker; returns how many.
        static func postLateMarkers(admin: Admin, watch: inout MarkerWatch) async throws -> Int {
            let late: [[String: Any]] = [
                ["id": "late-fixed", "class": "ad", "duration": 30, "scte35": "out"],
                ["id": "late-open", "class": "ad", "plannedDuration": 60, "scte35": "out"],
                ["id": "late-ahead", "startDate": iso(Date() + 4), "duration": 10],
            ]
            for body in late {
                let id = body["id"] as! String
                let answer = try await admin.send("POST", path, json: body)
                #expect(answer.status == 201, "POST \(id): \(answer.status) \(answer.text)")
                if let tag = answer.object["tag"] as? String { watch.acknowledged[id] = [tag] }
            }
            return late.count
        }

        /// The list holds each marker's last acknowledged tag; a marker missing from it must have been pruned (ended
        /// two target durations before the window).
        static func expectListMatchesAcknowledged(_ listed: [String: String], watch: MarkerWatch) throws {
            for (id, tag) in listed {
                #expect(
                    watch.acknowledged[id]?.last == tag,
                    "\(id): stored \(tag), acknowledged \(watch.acknowledged[id] ?? [])")
            }
            let acknowledgedRanges = try ranges(watch.acknowledged.compactMapValues(\.last))
            for id in Set(watch.acknowledged.keys).subtracting(listed.keys) {
                let end = try #require(acknowledgedRanges[id]?.end, "\(id) is open and missing from the list")
                // The origin prunes against its window at that moment, which may have slid by up to two 2 s segments
                // since the test's last playlist read.
                #expect(
                    end < watch.lastWindowStart - 4 + 4,
                    "\(id) missing from the list though it ended at \(end), window starts \(watch.lastWindowStart)")
            }
        }

        /// Reads both playlists of the restarted origin every second for 15 s into `watch`, restarting the encoder
        /// once if it gave up (ffmpeg's HLS muxer does when its PUT fails). Returns the playlists read and whether the
        /// encoder was restarted.
        static func watchRestartedOrigin(
            client: HTTPClient, watch: inout MarkerWatch, encoder: ChildProcess?,
            startEncoder: (String) throws -> Void
        ) async throws -> (snapshots: Int, restartedEncoder: Bool) {
            let restartedAt = ContinuousClock.now
            var restartedEncoder = false
            var afterSnapshots = 0
            while ContinuousClock.now - restartedAt < .seconds(15) {
                let round = ContinuousClock.now
                if !restartedEncoder, let encoder, !encoder.isRunning {
                    restartedEncoder = true  // ffmpeg's HLS muxer gives up when its PUT fails
                    try startEncoder("encoder-2")
                }
                for name in names {
                    if let snapshot = try await snapshot(client, name) {
                        afterSnapshots += 1
                        try watch.observe(snapshot)
                    }
                }
                try await Task.sleep(until: round + .seconds(1))
            }
            return (afterSnapshots, restartedEncoder)
        }

        static func listedTags(_ object: [String: Any]) throws -> [String: String] {
            let markers = try #require(object["markers"] as? [[String: Any]], "no markers array")
            var tags: [String: String] = [:]
            for entry in markers {
                let tag = try #require(entry["tag"] as? String)
                tags[try id(tag)] = tag
            }
            return tags
        }

        /// The bad requests of docs/markers.md, each with its documented status.
        static func checkBadRequests(admin: Admin, client: HTTPClient) async throws {
            let noToken = try await admin.send("GET", path, token: nil)
            #expect(noToken.status == 401, "no token: \(noToken.status) \(noToken.text)")
            #expect(
                noToken.response["WWW-Authenticate"] == #"Bearer realm="hlsorigin""#,
                "WWW-Authenticate \(noToken.response["WWW-Authenticate"] ?? "none")")
            let wrong = try await admin.send("POST", path, json: ["id": "x"], token: "wrong")
            #expect(wrong.status == 401, "wrong token: \(wrong.status) \(wrong.text)")
            #expect(!wrong.text.contains(adminToken))
            let ingest = try await client.request(
                "PUT", "/ingest/\(channel)/hi/x.ts", headers: [("Authorization", "Bearer wrong")], body: [0x47])
            #expect(ingest.status == 401, "ingest with a wrong token: \(ingest.status) \(ingest.text)")

            let invalidJSON = try await admin.send("POST", path, raw: Array("{nope".utf8))
            #expect(invalidJSON.status == 400, "invalid JSON: \(invalidJSON.status) \(invalidJSON.text)")
            #expect(invalidJSON.object["error"] is String, "\(invalidJSON.text)")
            let notObject = try await admin.send("POST", path, raw: Array("[1]".utf8))
            #expect(notObject.status == 400, "a JSON array: \(notObject.status) \(notObject.text)")
            let huge = try await admin.send(
                "POST", path,
                raw: Array(#"{"id": "big", "class": ""#.utf8) + Array(repeating: 0x78, count: 70000)
                    + Array(#""}"#.utf8))
            #expect(huge.status == 413, "body over 64 KiB: \(huge.status) \(huge.text)")
            let past = iso(Date() - 10)
            let cases: [(body: [String: Any], field: String)] = [
                (["id": "u", "what": 1], "what"),
                (["class": "ad"], "id"),
                (["id": "a/b"], "id"),
                (["id": "u", "duration": -1], "duration"),
                (["id": "u", "duration": "ten"], "duration"),
                (["id": "u", "plannedDuration": -2], "plannedDuration"),
                (["id": "u", "startDate": "yesterday"], "startDate"),
                (["id": "u", "startDate": past, "endDate": iso(Date() - 20)], "endDate"),
                (["id": "u", "endOnNext": true], "endOnNext"),
                (["id": "u", "class": "c", "endOnNext": true, "duration": 3], "endOnNext"),
                (["id": "u", "clientAttributes": ["Y-NAME": "v"]], "clientAttributes"),
                (["id": "u", "scte35": "sideways"], "scte35"),
                (["id": "u", "scte35": ["out": "0xFC30"]], "scte35.out"),
                (["id": "u", "cue": ["SOMETIMES"]], "cue"),
            ]
            for (body, field) in cases {
                let answer = try await admin.send("POST", path, json: body)
                let named = answer.object["field"] as? String ?? "none"
                #expect(
                    answer.status == 400 && (named == field || named.hasPrefix("\(field).")),
                    "POST \(body): \(answer.status), field \(named) (expected 400 naming \(field)): \(answer.text)")
            }
            let missing = try await admin.send("PATCH", "\(path)/nobody", json: ["duration": 1])
            #expect(missing.status == 404, "PATCH of an unknown marker: \(missing.status) \(missing.text)")
            let badPatch = try await admin.send("PATCH", "\(path)/nobody", json: ["class": "x"])
            #expect([400, 404].contains(badPatch.status), "PATCH with class: \(badPatch.status) \(badPatch.text)")
        }
    }

    /// What the marker test saw in the playlists.
    struct MarkerWatch {
        /// Tags acknowledged per ID, in order.
        var acknowledged: [String: [String]]
        /// Tag texts seen per rendition and ID, in order of first sight.
        var history: [String: [String: [String]]] = [:]
        var seenIn: [String: Set<String>] = [:]
        var problems: [String] = []
        var lastWindowStart: Double = 0
        /// After the restart: every stored marker overlapping the window must be listed.
        var requireOverlapping = false
        var ranges: [String: (start: Double, end: Double?)] = [:]
        var listedAfterRestart: Set<String> = []
        var checkedOverlaps = 0

        init(acknowledged: [String: [String]]) { self.acknowledged = acknowledged }

        mutating func fail(_ message: String) { if problems.count < 200 { problems.append(message) } }

        mutating func observe(_ snapshot: EndToEndRestarts.MarkerTests.Snapshot) throws {
            let rendition = snapshot.rendition
            lastWindowStart = snapshot.windowStart
            if !snapshot.tags.isEmpty, snapshot.programDateTimes != snapshot.segments {
                fail(
                    "\(rendition): \(snapshot.programDateTimes) PDT tags for \(snapshot.segments) segments with "
                        + "DATERANGE"
                )
            }
            var listed: Set<String> = []
            for tag in snapshot.tags {
                let id = try EndToEndRestarts.MarkerTests.id(tag)
                listed.insert(id)
                if requireOverlapping { listedAfterRestart.insert(id) }
                seenIn[id, default: []].insert(rendition)
                guard let tags = acknowledged[id] else {
                    fail("\(rendition): a marker never acknowledged is listed: \(tag)")
                    continue
                }
                if !tags.contains(tag) { fail("\(rendition): \(id) shown as \(tag), acknowledged \(tags)") }
                var shown = history[rendition, default: [:]][id] ?? []
                if shown.last != tag {
                    if let previous = shown.last {
                        let old = try EndToEndRestarts.MarkerTests.attributes(previous)
                        let new = try EndToEndRestarts.MarkerTests.attributes(tag)
                        if !old.allSatisfy({ new[$0.key] == $0.value }) {
                            fail("\(rendition): \(id) changed a shown attribute: \(previous) -> \(tag)")
                        }
                        if shown.contains(tag) { fail("\(rendition): \(id) went back to \(tag)") }
                    }
                    shown.append(tag)
                    history[rendition, default: [:]][id] = shown
                }
            }
            guard requireOverlapping else { return }
            for (id, range) in ranges {
                // Listed while its range overlaps the window (first PDT to the end of the last segment).
                let overlaps =
                    range.start < snapshot.windowEnd - 0.001
                    && (range.end.map { $0 > snapshot.windowStart + 0.001 } ?? true)
                guard overlaps else { continue }
                checkedOverlaps += 1
                if !listed.contains(id) {
                    fail(
                        "\(rendition): \(id) (\(range.start)...\(range.end.map { "\($0)" } ?? "open")) overlaps the "
                            + "window \(snapshot.windowStart)...\(snapshot.windowEnd) but is not listed")
                }
            }
        }
    }
}
