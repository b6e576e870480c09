import Foundation
import Glibc
import HLSPlaylist
import Synchronization
import TestSupport
import Testing

extension EndToEndRestarts {
    /// The release binary killed with SIGKILL at random moments during ingest and admin writes, 50
    /// times, on one data directory and one port: every acknowledged segment, listed entry and marker survives each
    /// kill; and SIGTERM draining a slow reader and flushing the journal.
    @Suite("End to end: SIGKILL loop and SIGTERM drain", .tags(.endToEnd))
    struct CrashRestartTests {
        static let configuration = """
            logLevel: warning
            ingest:
              autoCreate: false
            channels:
              - name: k
                source: push
                targetDuration: 1
                segmentDuration: 1
                window: { segments: 600 }
                renditions:
                  - name: lo
            """

        /// 1-second MPEG-TS segments with continuous timestamps, made once with ffmpeg.
        static func makeSegments(count: Int, in directory: URL) async throws -> [[UInt8]] {
            let output = try await ChildProcess.run(
                "ffmpeg",
                [
                    "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25",
                    "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "\(count)",
                    "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-keyint_min", "25", "-sc_threshold", "0",
                    "-c:a", "aac", "-b:a", "32k", "-f", "hls", "-hls_time", "1", "-hls_list_size", "0",
                    "-hls_segment_filename", directory.appendingPathComponent("s%d.ts").path,
                    directory.appendingPathComponent("s.m3u8").path,
                ], in: directory, timeout: .seconds(120))
            guard output.status == 0 else { throw EndToEndError("ffmpeg failed: \(output.standardError)") }
            var segments: [[UInt8]] = []
            for index in 0..<count {
                guard
                    let data = FileManager.default.contents(
                        atPath: directory.appendingPathComponent("s\(index).ts").path)
                else { break }
                segments.append([UInt8](data))
            }
            guard segments.count >= count - 1 else { throw EndToEndError("ffmpeg made \(segments.count) segments") }
            return segments
        }

        /// Starts the binary on a fixed port and data directory; retries while the port is still taken.
        static func launch(directory: URL, port: Int, label: String) async throws -> ChildProcess {
            let deadline = ContinuousClock.now + .seconds(30)
            while true {
                let child = try ChildProcess(
                    executable: try OriginProcess.binary(),
                    arguments: [
                        "--config", directory.appendingPathComponent("config.yaml").path, "--host", "127.0.0.1",
                        "--port", "\(port)", "--data-dir", directory.appendingPathComponent("data").path,
                    ],
                    directory: directory, label: label)
                try await waitUntil(
                    "hlsorigin to print its listening line", timeout: .seconds(30), interval: .milliseconds(10)
                ) { !child.isRunning || child.standardOutput.contains("hlsorigin listening on ") }
                if child.isRunning { return child }
                guard ContinuousClock.now < deadline else {
                    throw EndToEndError("hlsorigin does not start on port \(port): \(child.standardError)")
                }
                try await Task.sleep(for: .milliseconds(200))
            }
        }

        /// The MSN in a push receipt, "lo: msn 12, 1.0 s, pdt ...".
        static func msn(in receipt: String) -> UInt64? {
            guard let range = receipt.range(of: "msn ") else { return nil }
            return UInt64(receipt[range.upperBound...].prefix { $0.isNumber })
        }

        /// The loop lasts about 100 s on the PDT timeline (50 restarts, 1-second segments): a 600-segment window keeps
        /// every MSN it lists, so "still within retention" is everything.
        @Test("50 SIGKILLs during pushes and marker posts: acknowledged and listed segments and markers survive")
        func sigkillLoop() async throws {
            let directory = try TemporaryDirectory.make("hlsorigin-e2e-sigkill")
            try Data(Self.configuration.utf8).write(to: directory.appendingPathComponent("config.yaml"))
            let segmentDirectory = directory.appendingPathComponent("segments")
            try FileManager.default.createDirectory(at: segmentDirectory, withIntermediateDirectories: true)
            let segments = try await Self.makeSegments(count: 130, in: segmentDirectory)
            let port = try OriginProcess.freePort()
            let client = HTTPClient(port: port)
            var next = 0
            var acknowledged = Acknowledged()
            var generator = SystemRandomNumberGenerator()
            // Pushes are paced to real time: the origin refuses media more than one target duration ahead of the
            // clock, and the journal keeps PDT from going back across restarts.
            let began = ContinuousClock.now
            var mediaSeconds = 0.0
            func paced() async throws {
                let due = began + .milliseconds(Int((mediaSeconds - 0.5) * 1000))
                if ContinuousClock.now < due { try await Task.sleep(until: due) }
                mediaSeconds += 1
            }

            var restored = RestoreLedger()
            for iteration in 0..<50 {
                let origin = try await Self.launch(directory: directory, port: port, label: "origin-\(iteration)")
                // Before anything is pushed to it: the window and every acknowledged segment are back.
                try await restored.expectRestored(client: client, iteration: iteration)
                try await Self.expectJournalReadableAndMarkersKept(
                    client: client, markers: acknowledged.markers, iteration: iteration)
                // One push that completes: its MSN is above every MSN acknowledged before any crash.
                try await paced()
                let pushed = try await client.request("PUT", "/ingest/k/lo/s\(next).ts", body: segments[next])
                if pushed.status == 201 {
                    let msn = try #require(Self.msn(in: pushed.text))
                    acknowledged.push(msn: msn, iteration: iteration)
                    restored.acknowledged[msn] = segments[next]
                } else {
                    #expect(pushed.status == 429, "iteration \(iteration): \(pushed.status) \(pushed.text)")
                }
                next += 1
                // What the playlist lists before the kill must be listed again after it.
                try await restored.noteListing(client: client, iteration: iteration)
                // A push or a marker post, killed 0-300 ms after it started.
                let isMarker = Bool.random(using: &generator)
                let markerID = "kill-\(iteration)"
                let segmentIndex = next
                if !isMarker {
                    next += 1
                    try await paced()
                }
                let answer = await Self.killDuring(origin, using: &generator) {
                    if isMarker {
                        return try? await Self.postMarker(id: markerID, iteration: iteration, client: client)
                    }
                    return try? await client.request(
                        "PUT", "/ingest/k/lo/s\(segmentIndex).ts", body: segments[segmentIndex])
                }
                if let answer {
                    if isMarker, answer.status == 201 { acknowledged.markers.append(markerID) }
                    if !isMarker, answer.status == 201, let msn = Self.msn(in: answer.text) {
                        acknowledged.push(msn: msn, iteration: iteration)
                        restored.acknowledged[msn] = segments[segmentIndex]
                    }
                } else {
                    acknowledged.killedMidRequest += 1
                }
            }
            try await Self.expectEverythingAcknowledgedAfterALastStart(
                directory: directory, port: port, client: client, acknowledged: acknowledged,
                nextSegment: segments[next], nextIndex: next, restored: &restored)
        }

        /// What the SIGKILL loop saw acknowledged and listed, checked against each restarted origin.
        struct RestoreLedger {
            /// The bytes of every segment answered 201, by the MSN in its receipt.
            var acknowledged: [UInt64: [UInt8]] = [:]
            /// Every entry any playlist listed before a kill, as first seen (the tracker also checks that no reload
            /// changes an MSN's URI, EXTINF, PDT, DSN or GAP).
            var tracker = RenditionTracker(name: "lo")
            /// Restarts after which something was missing, with what.
            var problems: [String] = []
            /// Restarts checked against something listed or acknowledged before, and segments compared byte for byte.
            var restartsChecked = 0
            var segmentsCompared = 0
            private let began = ContinuousClock.now

            static let playlistPath = "/live/k/lo/index.m3u8"

            private var now: Double { (ContinuousClock.now - began).seconds }

            mutating func problem(_ iteration: Int, _ text: String) {
                if problems.count < 400 { problems.append("iteration \(iteration): \(text)") }
            }

            /// Reads the media playlist and writes its entries down; returns the playlist (nil if not 200).
            @discardableResult
            mutating func noteListing(client: HTTPClient, iteration: Int) async throws -> MediaPlaylist? {
                let sent = now
                let answer = try await client.get(Self.playlistPath)
                guard answer.status == 200 else {
                    if tracker.lastMSN != nil || !acknowledged.isEmpty {
                        problem(iteration, "the media playlist answered \(answer.status) \(answer.text)")
                    }
                    return nil
                }
                let playlist = try MediaPlaylist.parse(answer.text)
                tracker.observe(playlist, text: answer.text, sent: sent, received: now)
                return playlist
            }

            /// Right after a restart, before any push: the media playlist answers 200; every MSN listed before
            /// (600-segment window: all of them) is listed again, unchanged (the tracker compares the facts); every
            /// acknowledged segment is listed at the MSN of its receipt and its URL serves the same bytes.
            mutating func expectRestored(client: HTTPClient, iteration: Int) async throws {
                let known = tracker.msns
                guard !known.isEmpty || !acknowledged.isEmpty else { return }
                restartsChecked += 1
                // A segment acknowledged while its slot was still open is listed once that slot closes.
                var playlist = try await noteListing(client: client, iteration: iteration)
                let deadline = ContinuousClock.now + .seconds(2)
                while let current = playlist, let highest = acknowledged.keys.max(),
                    current.mediaSequence + UInt64(current.segments.count) <= highest, ContinuousClock.now < deadline
                {
                    try await Task.sleep(for: .milliseconds(100))
                    playlist = try await noteListing(client: client, iteration: iteration)
                }
                guard let playlist else {
                    problem(
                        iteration,
                        "no media playlist before the first push: \(known.count) listed MSNs and "
                            + "\(acknowledged.count) acknowledged segments not served")
                    return
                }
                let listed = Dictionary(
                    uniqueKeysWithValues: playlist.segments.enumerated().map {
                        (playlist.mediaSequence + UInt64($0.offset), $0.element)
                    })
                let missing = known.filter { listed[$0] == nil }
                if !missing.isEmpty {
                    problem(
                        iteration,
                        "\(missing.count) MSNs listed before are not listed again (\(Self.ranges(missing))); the "
                            + "restarted origin lists \(playlist.mediaSequence)..."
                            + "\(playlist.mediaSequence + UInt64(max(playlist.segments.count, 1)) - 1)")
                }
                for (msn, bytes) in acknowledged.sorted(by: { $0.key < $1.key }) {
                    guard let segment = listed[msn] else {
                        if !missing.contains(msn) { problem(iteration, "acknowledged MSN \(msn) is not listed") }
                        continue
                    }
                    if segment.gap {
                        problem(iteration, "acknowledged MSN \(msn) is listed as a GAP")
                        continue
                    }
                    let answer = try await client.get("/live/k/lo/\(segment.uri)")
                    segmentsCompared += 1
                    if answer.status != 200 {
                        problem(iteration, "acknowledged MSN \(msn) (\(segment.uri)) answered \(answer.status)")
                    } else if answer.body != bytes {
                        problem(
                            iteration,
                            "acknowledged MSN \(msn) (\(segment.uri)): \(answer.body.count) bytes served, not the "
                                + "\(bytes.count) pushed")
                    }
                }
            }

            /// MSNs as compact ranges, "3...9, 12".
            static func ranges(_ msns: [UInt64]) -> String {
                var runs: [ClosedRange<UInt64>] = []
                for msn in msns {
                    if let last = runs.last, msn == last.upperBound + 1 {
                        runs[runs.count - 1] = last.lowerBound...msn
                    } else {
                        runs.append(msn...msn)
                    }
                }
                return runs.map { $0.lowerBound == $0.upperBound ? "\($0.lowerBound)" : "\($0)" }
                    .joined(separator: ", ")
            }
        }

        /// What the SIGKILL loop saw acknowledged, and how many requests the kill cut.
        struct Acknowledged {
            var markers: [String] = []
            var highestMSN: UInt64?
            var pushes = 0
            var killedMidRequest = 0

            /// A push answered 201 with `msn`: it must be above every MSN acknowledged before.
            mutating func push(msn: UInt64, iteration: Int) {
                if let highest = highestMSN {
                    #expect(msn > highest, "iteration \(iteration): msn \(msn) after \(highest) was acknowledged")
                }
                highestMSN = max(highestMSN ?? 0, msn)
                pushes += 1
            }
        }

        /// After a restart the journal was readable and every acknowledged marker survived.
        static func expectJournalReadableAndMarkersKept(
            client: HTTPClient, markers: [String], iteration: Int
        ) async throws {
            let status = try await client.get("/admin/channels/k")
            #expect(status.status == 200)
            #expect(!status.text.contains("unreadable"), "iteration \(iteration): \(status.text)")
            #expect(!status.text.contains("write failed"), "iteration \(iteration): \(status.text)")
            let listed = try await client.get("/admin/channels/k/dateranges").text
            for id in markers {
                #expect(listed.contains("\"id\" : \"\(id)\""), "iteration \(iteration): marker \(id) lost")
            }
        }

        /// Starts `request`, sends SIGKILL to `origin` 0-300 ms later and waits for both; returns the answer if one
        /// came.
        static func killDuring(
            _ origin: ChildProcess, using generator: inout SystemRandomNumberGenerator,
            _ request: @escaping @Sendable () async -> RawHTTPResponse?
        ) async -> RawHTTPResponse? {
            let running = Task { await request() }
            // 0-300 ms, most of them short: a request takes a few milliseconds, and a kill should often land
            // inside one (during the marker journal's fsync, the probe, the state journal write).
            let fraction = Double.random(in: 0...1, using: &generator)
            try? await Task.sleep(for: .microseconds(Int(300_000 * fraction * fraction * fraction)))
            origin.signal(SIGKILL)
            let answer = await running.value
            _ = await origin.wait(timeout: .seconds(10))
            return answer
        }

        static func postMarker(id: String, iteration: Int, client: HTTPClient) async throws -> RawHTTPResponse {
            let body = """
                {"id": "\(id)", "startDate": "2099-01-01T00:00:00.000Z", "duration": 30,
                 "clientAttributes": {"X-ITERATION": "\(iteration)"}}
                """
            return try await client.request(
                "POST", "/admin/channels/k/dateranges", headers: [("Content-Type", "application/json")],
                body: Array(body.utf8))
        }

        /// A last start: everything acknowledged is still there, a new push continues above the highest MSN, and the
        /// loop did what it claims (many acknowledged writes, some requests cut by the kill).
        static func expectEverythingAcknowledgedAfterALastStart(
            directory: URL, port: Int, client: HTTPClient, acknowledged: Acknowledged, nextSegment: [UInt8],
            nextIndex: Int, restored: inout RestoreLedger
        ) async throws {
            let origin = try await Self.launch(directory: directory, port: port, label: "origin-final")
            defer {
                origin.signal(SIGKILL)
            }
            try await restored.expectRestored(client: client, iteration: 50)
            #expect(
                restored.problems.isEmpty,
                Comment(
                    rawValue: "\(restored.problems.count) restarts lost something listed or acknowledged:\n"
                        + restored.problems.prefix(30).joined(separator: "\n")))
            #expect(
                restored.tracker.violations.isEmpty,
                Comment(
                    rawValue: "listed entries changed across restarts:\n"
                        + restored.tracker.violations.prefix(30).joined(separator: "\n")))
            #expect(restored.restartsChecked >= 49, "only \(restored.restartsChecked) restarts checked")
            let listed = try await client.get("/admin/channels/k/dateranges").text
            for id in acknowledged.markers { #expect(listed.contains("\"id\" : \"\(id)\""), "marker \(id) lost") }
            let status = try await client.get("/admin/channels/k")
            #expect(!status.text.contains("unreadable"))
            let last = try await client.request("PUT", "/ingest/k/lo/s\(nextIndex).ts", body: nextSegment)
            if last.status == 201, let msn = Self.msn(in: last.text), let highest = acknowledged.highestMSN {
                #expect(msn > highest)
            }
            #expect(acknowledged.pushes >= 40, "only \(acknowledged.pushes) pushes acknowledged")
            #expect(!acknowledged.markers.isEmpty)
            print(
                "SIGKILL loop: 50 kills, \(acknowledged.pushes) pushes and \(acknowledged.markers.count) markers "
                    + "acknowledged, \(acknowledged.killedMidRequest) requests cut by the kill, highest msn "
                    + "\(acknowledged.highestMSN.map(String.init) ?? "none"); \(restored.restartsChecked) restarts "
                    + "checked against \(restored.tracker.msns.count) listed MSNs and \(restored.acknowledged.count) "
                    + "acknowledged segments (\(restored.segmentsCompared) downloads compared byte for byte), "
                    + "\(restored.problems.count) problems")
        }

        @Test("SIGTERM: a slow reader of a large segment gets it whole, the journal is flushed, exit 0 within 5 s")
        func sigtermDrains() async throws {
            let directory = try TemporaryDirectory.make("hlsorigin-e2e-sigterm")
            try Data(Self.configuration.utf8).write(to: directory.appendingPathComponent("config.yaml"))
            let segmentDirectory = directory.appendingPathComponent("segments")
            try FileManager.default.createDirectory(at: segmentDirectory, withIntermediateDirectories: true)
            let segments = try await Self.makeSegments(count: 4, in: segmentDirectory)
            let port = try OriginProcess.freePort()
            let origin = try await Self.launch(directory: directory, port: port, label: "origin")
            defer { origin.signal(SIGKILL) }
            let client = HTTPClient(port: port)
            // A large first segment: 16 MiB of MPEG-TS null packets after real media.
            var nullPacket = [UInt8](repeating: 0xFF, count: 188)
            nullPacket[0...3] = [0x47, 0x1F, 0xFF, 0x10]
            let large = segments[0] + Array([[UInt8]](repeating: nullPacket, count: 16 * 1024 * 1024 / 188).joined())
            let first = try await client.request("PUT", "/ingest/k/lo/s0.ts", body: large)
            #expect(first.status == 201, "\(first.text)")
            var lastMSN = try #require(Self.msn(in: first.text))
            for index in 1..<3 {
                let pushed = try await client.request("PUT", "/ingest/k/lo/s\(index).ts", body: segments[index])
                #expect(pushed.status == 201, "\(pushed.text)")
                lastMSN = try #require(Self.msn(in: pushed.text))
            }

            // The slow reader: a 64 KiB receive buffer read every 10 ms (a few MB/s: 2-3 s for the segment, most of
            // it still queued in the origin when SIGTERM arrives).
            let reader = SlowReader(port: port, path: "/live/k/lo/\(lastMSN - 2).ts")
            let reading = Thread { reader.run() }
            reading.start()
            try await waitUntil("the slow reader's first 256 KiB", timeout: .seconds(30), interval: .milliseconds(5)) {
                reader.receivedCount >= 256 * 1024 || reader.isDone
            }
            let signalledAt = Int64(Date().timeIntervalSince1970 * 1000)
            let receivedAtSignal = reader.receivedCount
            origin.signal(SIGTERM)
            let status = await origin.wait(timeout: .seconds(5))
            #expect(
                status == 0, "no clean exit within 5 s after SIGTERM: \(status.map(String.init) ?? "still running")")
            try await waitUntil("the slow reader to finish", timeout: .seconds(60)) { reader.isDone }
            let body = try #require(reader.body)
            #expect(body.count == large.count, "the reader got \(body.count) of \(large.count) bytes")
            #expect(body == large)
            #expect(receivedAtSignal < large.count / 2, "the answer was still in flight at SIGTERM")

            // The journal holds the newest MSN and was written at shutdown.
            let journalPath = directory.appendingPathComponent("data/channels/k.state.json").path
            let data = try #require(FileManager.default.contents(atPath: journalPath))
            let journal = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let renditions = try #require(journal["renditions"] as? [String: Any])
            let rendition = try #require(renditions["lo"] as? [String: Any])
            #expect((rendition["lastMSN"] as? NSNumber)?.uint64Value == lastMSN)
            let written = try #require((journal["writtenAtMilliseconds"] as? NSNumber)?.int64Value)
            #expect(written >= signalledAt, "the journal was last written before SIGTERM")
        }
    }
}

/// Reads one GET answer slowly on its own thread, with a small receive buffer, until the server closes.
final class SlowReader: Sendable {
    private struct State {
        var received: [UInt8] = []
        var done = false
    }

    let port: Int
    let path: String
    private let state = Mutex(State())

    init(port: Int, path: String) {
        self.port = port
        self.path = path
    }

    var receivedCount: Int { state.withLock { $0.received.count } }
    var isDone: Bool { state.withLock { $0.done } }

    /// The body, if the head was complete and the answer was 200.
    var body: [UInt8]? {
        state.withLock { state in
            let separator: [UInt8] = [13, 10, 13, 10]
            guard let end = state.received.firstRange(of: separator),
                String(decoding: state.received[..<end.lowerBound], as: UTF8.self).hasPrefix("HTTP/1.1 200")
            else { return nil }
            return Array(state.received[end.upperBound...])
        }
    }

    func run() {
        defer { state.withLock { $0.done = true } }
        guard
            let connection = try? RawHTTPConnection(port: port, receiveBufferSize: 65536, timeout: .seconds(15)),
            connection.sendIfOpen("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        else { return }
        while true {
            let piece = connection.receive(upTo: 64 * 1024)
            if piece.isEmpty { return }
            state.withLock { $0.received += piece }
            usleep(10_000)
        }
    }
}
