import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

extension EndToEndRestarts {
    /// A slow group database (PostgreSQL holding the marker table locked) while players fetch playlists and a marker
    /// client posts: playback is not slowed, the marker posts answer 503 with the reason (or succeed late), and no
    /// acknowledged marker is lost (docs/outages.md).
    @Suite("End to end: a slow PostgreSQL slows only the admin calls that need it", .tags(.endToEnd))
    struct DatabaseFaultTests {
        static let path = "/admin/channels/demo/dateranges"

        static func post(_ client: HTTPClient, _ id: String) async throws -> RawHTTPResponse {
            let body = #"{"id": "\#(id)", "class": "com.example.ad", "plannedDuration": 30}"#
            return try await client.request(
                "POST", path, headers: [("Content-Type", "application/json")], body: Array(body.utf8))
        }

        @Test func aDatabaseHeldLockedLeavesPlaylistLatencyUnchangedAndLosesNoAcknowledgedMarker() async throws {
            let database = try await PostgresCluster(label: "slow")
            defer { Task { await database.remove() } }
            let configuration = """
                logLevel: info
                database:
                  url: \(database.url)
                channels:
                  - name: demo
                    source: test-source
                    segmentDuration: 2
                    window: { segments: 6 }
                    renditions:
                      - { name: 360p, profile: 360p }
                """
            try await OriginProcess.withRunning(configuration: configuration, label: "slow-db") { origin in
                let client = HTTPClient(port: origin.port)
                try await waitUntil("the demo playlist", timeout: .seconds(20)) {
                    (try? await client.get("/live/demo/360p/index.m3u8"))?.status == 200
                }
                #expect(try await Self.post(client, "before").status == 201)
                let port = origin.port
                let quiet = await Task.detached {
                    EndToEnd.HostileClientTests.playlistLatencies(port: port, seconds: 6)
                }.value
                // The marker table locked for 12 s: every read and write of a marker book waits for it.
                let psql = try PostgresCluster.program("psql")
                async let lock = ChildProcess.run(
                    psql.path,
                    [
                        "-h", "127.0.0.1", "-p", "\(database.port)", "-U", "hlsorigin", "-d", "postgres", "-c",
                        "BEGIN; LOCK TABLE hlsorigin_marker_books IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(12); COMMIT;",
                    ], in: origin.directory, timeout: .seconds(30))
                try await Task.sleep(for: .milliseconds(500))
                // Four marker clients post one after another meanwhile, while four players fetch the playlist.
                let answers = Answers()
                let posters = Task {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for poster in 0..<4 {
                            group.addTask {
                                let end = ContinuousClock.now + .seconds(9)
                                var index = 0
                                while ContinuousClock.now < end {
                                    let id = "slow-\(poster)-\(index)"
                                    let started = ContinuousClock.now
                                    let response = try await Self.post(client, id)
                                    let elapsed = ContinuousClock.now - started
                                    let seconds =
                                        Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                                    answers.record(Answer(id: id, status: response.status, seconds: seconds, text: response.text))
                                    index += 1
                                }
                            }
                        }
                        try await group.waitForAll()
                    }
                }
                let slow = await Task.detached {
                    EndToEnd.HostileClientTests.playlistLatencies(port: port, seconds: 9)
                }.value
                try await posters.value
                let locked = try await lock
                #expect(locked.status == 0, "psql: \(locked.standardError)")
                let posted = answers.all
                let statuses = Dictionary(posted.map { ($0.status, 1) }, uniquingKeysWith: +)
                print(
                    """
                    marker table locked 12 s: \(posted.count) marker POSTs, statuses \(statuses), longest answer \
                    \(String(format: "%.1f", posted.map(\.seconds).max() ?? -1)) s; a 503 says: \
                    \(posted.first { $0.status == 503 }?.text.split(whereSeparator: \.isNewline).joined(separator: " ") ?? "-")
                    loopback playlist GETs, database answering: \(EndToEnd.HostileClientTests.summary(quiet))
                    loopback playlist GETs, database locked:    \(EndToEnd.HostileClientTests.summary(slow))
                    """)
                #expect(posted.allSatisfy { $0.status == 201 || $0.status == 503 }, "\(statuses)")
                #expect(statuses[503, default: 0] > 0, "the locked database was not felt by any marker POST")
                #expect(posted.filter { $0.status == 503 }.allSatisfy { $0.text.contains("database") })
                #expect(posted.allSatisfy { $0.seconds < 12 }, "an admin call waited longer than its deadline")
                // Playback did not wait for the database.
                let quietP99 = EndToEnd.HostileClientTests.percentile(quiet, 0.99)
                let slowP99 = EndToEnd.HostileClientTests.percentile(slow, 0.99)
                #expect(slow.last ?? .infinity < 10_000, "a player's request failed while the database was locked")
                #expect(slowP99 <= max(quietP99 * 3, quietP99 + 50), "p99 \(slowP99) ms vs \(quietP99) ms")
                // Once the lock is gone: every acknowledged marker is there, and the refused ones can be sent again.
                try await waitUntil("a marker post to succeed again", timeout: .seconds(20)) {
                    (try? await Self.post(client, "after"))?.status == 201
                }
                let book = try await client.get(Self.path).text
                for answer in posted where answer.status == 201 {
                    #expect(book.contains("\"\(answer.id)\""), "acknowledged marker \(answer.id) lost")
                }
                #expect(book.contains("\"before\"") && book.contains("\"after\""))
                for answer in posted where answer.status == 503 {
                    let again = try await Self.post(client, answer.id).status
                    #expect(again == 201 || again == 200, "\(answer.id) sent again: \(again)")
                }
            }
        }
    }
}

/// One marker POST's answer.
private struct Answer: Sendable {
    let id: String
    let status: Int
    let seconds: Double
    let text: String
}

/// The answers of the marker clients, recorded from several tasks.
private final class Answers: Sendable {
    private let values = Mutex<[Answer]>([])
    func record(_ answer: Answer) { values.withLock { $0.append(answer) } }
    var all: [Answer] { values.withLock { $0 } }
}
