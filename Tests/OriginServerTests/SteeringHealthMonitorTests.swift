import Foundation
import GroupDatabase
import HLSPackaging
import LiveTimeline
import Logging
import MicroHTTPD
import OriginCore
import PeerRepair
import Synchronization
import TestSupport
import Testing

@testable import OriginServer

/// The steering health monitor (docs/content-steering.md, "Health") against a scripted peer and a scripted heartbeat
/// store, with a manual monotonic clock: when a peer becomes down, what a hung read or heartbeat does to the monitor,
/// the pruning schedule, and what `/metrics` shows of it (docs/metrics.md, "Content steering").
@Suite("Content Steering: the health monitor")
struct SteeringHealthMonitorTests {
    static let peer = "http://10.0.0.2:8080"

    /// A peer's `GET /peer/health` as a test scripts it: a report with the channel in a state, a refused connection,
    /// or a read that hangs, cancellation ignored, until released (or 60 s, so a monitor that waits for it is slow
    /// rather than stuck).
    final class ScriptedPeer: PeerFetching {
        enum Behaviour: Sendable {
            case answer(state: String)
            case refuse
            case hang
        }
        let behaviour = Mutex(Behaviour.answer(state: "healthy"))
        let calls = Mutex(0)
        let hang = Hang()

        func get(_ url: PeerURL, timeout: Duration, limit: Int) async throws -> PeerResponse {
            calls.withLock { $0 += 1 }
            switch behaviour.withLock({ $0 }) {
            case .answer(let state):
                let body = #"{"channels":{"ch":{"state":"\#(state)"}},"origin":"\#(SteeringHealthMonitorTests.peer)"}"#
                return PeerResponse(status: 200, body: Array(body.utf8))
            case .refuse:
                throw PeerFetchError(.connect, "cannot connect to 10.0.0.2:8080: connection refused")
            case .hang:
                await hang.wait()
                throw PeerFetchError(.closed, "released")
            }
        }
    }

    /// The group database as a test scripts it: the peer's row, written whenever the peer "beats" (its age counted on
    /// the test's monotonic clock, as the database's own clock would), a failure, or a call that hangs.
    final class ScriptedDatabase: HeartbeatStore {
        enum Behaviour: Sendable {
            case answer
            case fail
            case hang
        }
        let behaviour = Mutex(Behaviour.answer)
        /// Whether the peer still writes its heartbeat.
        let peerBeats = Mutex(true)
        let peerBeatAt = Mutex<Int64?>(nil)
        let now: @Sendable () -> Int64
        let calls = Mutex(0)
        let prunes = Mutex<[Bool]>([])
        let hang = Hang()

        init(now: @escaping @Sendable () -> Int64) { self.now = now }

        func beat(origin: String?, report: String?, prune: Bool) async throws -> [GroupDatabase.Heartbeat] {
            calls.withLock { $0 += 1 }
            prunes.withLock { $0.append(prune) }
            switch behaviour.withLock({ $0 }) {
            case .answer: break
            case .fail: throw GroupDatabaseError("connection refused")
            case .hang:
                await hang.wait()
                throw GroupDatabaseError("released")
            }
            let now = now()
            let beatAt = peerBeatAt.withLock { beatAt -> Int64? in
                if peerBeats.withLock({ $0 }) { beatAt = now }
                return beatAt
            }
            guard let beatAt else { return [] }
            let report = #"{"channels":{"ch":{"state":"healthy"}},"origin":"\#(SteeringHealthMonitorTests.peer)"}"#
            return [GroupDatabase.Heartbeat(origin: SteeringHealthMonitorTests.peer, report: report, ageMilliseconds: now - beatAt)]
        }
    }

    /// A call that hangs, deaf to cancellation and using no thread, until released (or 60 s after the first waiter,
    /// so a monitor that waits for it is slow rather than stuck; far beyond the bounds the tests wait with, which
    /// allow for a full parallel test run starving the monitor's loops for seconds).
    final class Hang: Sendable {
        private let state = Mutex<(released: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

        func wait() async {
            await withCheckedContinuation { continuation in
                let first = state.withLock { state -> Bool? in
                    if state.released { return nil }
                    state.waiters.append(continuation)
                    return state.waiters.count == 1
                }
                switch first {
                case nil: continuation.resume()
                case true?: DispatchQueue.global().asyncAfter(deadline: .now() + 60) { self.release() }
                case false?: break
                }
            }
        }

        func release() {
            let waiters = state.withLock { state in
                state.released = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// The route table's harness (channel `ch` steered, origin-a this origin, origin-b the peer) and a monitor on it.
    struct Setup {
        let harness: RouteTableTests.Harness
        let monotonic = ManualClock(microseconds: 0)
        let peer = ScriptedPeer()
        let database: ScriptedDatabase?
        let monitor: SteeringHealthMonitor

        init(
            database withDatabase: Bool, realMonotonic: Bool = false, pause: Duration = .seconds(1),
            readTimeout: Duration = .milliseconds(800), heartbeatTimeout: Duration = .seconds(3),
            steering: ContentSteeringConfiguration = ContentSteeringTests.steering
        ) throws {
            harness = try ContentSteeringTests.steeredHarness()
            let monotonic = self.monotonic
            let now: @Sendable () -> Int64
            if realMonotonic {
                now = { SteeringHealthMonitor.monotonicMilliseconds() }
            } else {
                now = { monotonic.nowMilliseconds() }
            }
            database = withDatabase ? ScriptedDatabase(now: now) : nil
            monitor = SteeringHealthMonitor(
                origin: harness.origin, steering: steering, database: database, fetcher: peer,
                logger: Logger(label: "steering-monitor-tests", factory: { _ in SwiftLogNoOpLogHandler() }),
                monotonic: now, pause: pause, readTimeout: readTimeout, heartbeatTimeout: heartbeatTimeout)
            harness.handler.steering.monitor = monitor
            monitor.startWatching()
        }

        /// origin-b's health for channel `ch` as the steering manifest would rank it now.
        var peerHealth: PathwayHealth? {
            monitor.pathwayHealth(ContentSteeringTests.steering, channel: nil, name: "ch")["origin-b"]
        }

        func advance(seconds: Double) { monotonic.advance(seconds: seconds) }

        /// `seconds` monitor rounds, a second apart, each with a heartbeat when there is a database.
        func run(seconds: Int) async {
            for _ in 0..<seconds {
                advance(seconds: 1)
                await monitor.round()
                if database != nil { await monitor.beat() }
            }
        }

        /// `/metrics` as scraped now.
        func metrics() throws -> String { try ContentSteeringTests.get(harness, "/metrics").text }
    }

    @Test func withoutADatabaseAPeerIsDownOnceItHasNotAnsweredFor6Seconds() async throws {
        let setup = try Setup(database: false)
        await setup.monitor.round()
        #expect(setup.peerHealth == .healthy)
        setup.peer.behaviour.withLock { $0 = .refuse }
        await setup.run(seconds: 6)
        // Its report is 6 s old: the last instant it counts.
        #expect(setup.peerHealth == .healthy)
        setup.advance(seconds: 0.001)
        #expect(setup.peerHealth?.name == "down")
    }

    @Test func withADatabaseAPeerIsDownOnlyWhenNeitherHTTPNorItsHeartbeatHasReportedFor6Seconds() async throws {
        let setup = try Setup(database: true)
        let database = try #require(setup.database)
        await setup.monitor.round()
        await setup.monitor.beat()
        #expect(setup.peerHealth == .healthy)
        // Unreachable over HTTP for 10 s, but still beating: its heartbeat keeps it judged by its own report.
        setup.peer.behaviour.withLock { $0 = .refuse }
        await setup.run(seconds: 10)
        #expect(setup.peerHealth == .healthy)
        // Its heartbeat stops too: down once the row is over 6 s old, not before.
        database.peerBeats.withLock { $0 = false }
        await setup.run(seconds: 6)
        #expect(setup.peerHealth == .healthy)
        setup.advance(seconds: 0.001)
        #expect(setup.peerHealth?.name == "down")
        // And back as soon as one source reports again.
        setup.peer.behaviour.withLock { $0 = .answer(state: "stale") }
        await setup.monitor.round()
        #expect(setup.peerHealth?.name == "stale")
    }

    @Test func agesAreMeasuredOnTheMonotonicClockNotTheWallClock() async throws {
        let setup = try Setup(database: false)
        await setup.monitor.round()
        setup.peer.behaviour.withLock { $0 = .refuse }
        // The wall clock steps an hour forward: the report read a moment ago does not age.
        setup.harness.clock.advance(seconds: 3600)
        #expect(setup.peerHealth == .healthy)
        #expect(try setup.metrics().contains(#"hlsorigin_steering_peer_report_age_seconds{peer="\#(Self.peer)",source="http"} 0.0"#))
        // The monotonic clock moves 7 s: it has aged past its lifetime.
        setup.advance(seconds: 7)
        #expect(setup.peerHealth?.name == "down")
        #expect(try setup.metrics().contains(#"hlsorigin_steering_peer_report_age_seconds{peer="\#(Self.peer)",source="http"} 7.0"#))
    }

    @Test func aPeerReadThatHangsPastItsDeadlineEndsTheRoundInTime() async throws {
        let setup = try Setup(database: false, readTimeout: .milliseconds(100))
        await setup.monitor.round()
        setup.peer.behaviour.withLock { $0 = .hang }
        defer { setup.peer.hang.release() }
        let clock = ContinuousClock()
        // Deadline: twice the read timeout plus the margin, 300 ms; the hung fetch ignores its cancellation.
        let first = await clock.measure { await setup.monitor.round() }
        // (3 s: room for a loaded machine, far below the 60 s the hung read lasts.)
        #expect(first >= .milliseconds(300) && first < .seconds(3), "round took \(first)")
        // The next round starts no second read of the peer while the first still runs, and ends in time too.
        let second = await clock.measure { await setup.monitor.round() }
        #expect(second < .seconds(3), "round took \(second)")
        #expect(setup.peer.calls.withLock { $0 } == 2)
        let metrics = try setup.metrics()
        #expect(metrics.contains(#"hlsorigin_steering_peer_read_failures_total{peer="\#(Self.peer)",reason="timeout"} 2"#))
        // A pathway whose origin this origin just failed to read gets no RELOAD-URI (its report still counts).
        #expect(setup.monitor.unconfirmedPathways(ContentSteeringTests.steering) == ["origin-b"])
        #expect(setup.peerHealth == .healthy)
    }

    @Test func aPlayerThatFledADeathTheMonitorHasNotReadYetReloadsFromThePathwayItReached() async throws {
        let setup = try Setup(database: false)
        await setup.monitor.round()
        // A player streaming from origin-b (the peer) reloads its manifest from origin-a (this origin).
        var answer = try Self.steeringAnswer(setup, query: [("_HLS_pathway", "origin-b")])
        #expect(answer.pathwayPriority == ["origin-b", "origin-a"])
        #expect(answer.reloadURI.hasPrefix("http://10.0.0.1:8080/live/ch/steering.json"))
        // origin-b is killed; the player's own error handling takes it to origin-a before this origin's monitor has
        // read origin-b again (its last read succeeded, its report is fresh): the reload must not name origin-b.
        setup.peer.behaviour.withLock { $0 = .refuse }
        answer = try Self.steeringAnswer(setup, following: answer, streamingFrom: "origin-a")
        #expect(answer.pathwayPriority == ["origin-a", "origin-b"])
        #expect(answer.reloadURI.hasPrefix("http://10.0.0.1:8080/live/ch/steering.json"), "\(answer.reloadURI)")
        // The next round reads origin-b's death: the reloads stay on origin-a.
        setup.advance(seconds: 1)
        await setup.monitor.round()
        answer = try Self.steeringAnswer(setup, following: answer, streamingFrom: "origin-a")
        #expect(answer.reloadURI.hasPrefix("http://10.0.0.1:8080/live/ch/steering.json"), "\(answer.reloadURI)")
        // origin-b answers again: the player stays on origin-a, and its reloads go to origin-b, so that origin-a's
        // death would not take its steering server too.
        setup.peer.behaviour.withLock { $0 = .answer(state: "healthy") }
        setup.advance(seconds: 1)
        await setup.monitor.round()
        answer = try Self.steeringAnswer(setup, following: answer, streamingFrom: "origin-a")
        #expect(answer.pathwayPriority == ["origin-a", "origin-b"])
        #expect(answer.reloadURI.hasPrefix("http://10.0.0.2:8080/live/ch/steering.json"), "\(answer.reloadURI)")
    }

    /// This origin's steering manifest for channel `ch` with `query`.
    static func steeringAnswer(_ setup: Setup, query: [(String, String?)]) throws -> SteeringManifestShape {
        let response = try ContentSteeringTests.get(setup.harness, "/live/ch/steering.json", query)
        #expect(response.status == 200, "\(response.text)")
        return try JSONDecoder().decode(SteeringManifestShape.self, from: Data(response.text.utf8))
    }

    /// The reload a player sends after `previous` (its RELOAD-URI's arguments, `_HLS_pathway` set as hls.js sets
    /// it), answered by this origin (the test's one origin answers every RELOAD-URI that names it).
    static func steeringAnswer(
        _ setup: Setup, following previous: SteeringManifestShape, streamingFrom pathway: String
    ) throws -> SteeringManifestShape {
        let components = try #require(URLComponents(string: previous.reloadURI))
        let own = (components.queryItems ?? []).filter { $0.name != "_HLS_pathway" }.map { ($0.name, $0.value) }
        return try steeringAnswer(setup, query: own + [("_HLS_pathway", pathway)])
    }

    /// The steering manifest's JSON, as a player reads it.
    struct SteeringManifestShape: Decodable {
        var reloadURI: String
        var pathwayPriority: [String]
        enum CodingKeys: String, CodingKey {
            case reloadURI = "RELOAD-URI"
            case pathwayPriority = "PATHWAY-PRIORITY"
        }
    }

    @Test func aHungHeartbeatHoldsUpNeitherThePeerReadsNorGoesUnseen() async throws {
        let setup = try Setup(
            database: true, realMonotonic: true, pause: .milliseconds(50), heartbeatTimeout: .milliseconds(200))
        let database = try #require(setup.database)
        database.behaviour.withLock { $0 = .hang }
        defer { database.hang.release() }
        setup.peer.behaviour.withLock { $0 = .answer(state: "stale") }
        let running = Task { await setup.monitor.run() }
        // The HTTP loop goes on reading the peer (bounded well below the 60 s the hung call lasts), and judges it by
        // its answer.
        let monitor = setup.monitor
        let peer = setup.peer
        try await waitUntil("five reads of the peer and the heartbeat's timeout", timeout: .seconds(30)) {
            peer.calls.withLock { $0 } >= 5 && monitor.statistics().heartbeatFailures["timeout"] != nil
        }
        #expect(setup.peerHealth?.name == "stale")
        // Hung calls, no more than two at once: each counted as a timeout (and each beat skipped meanwhile), its age
        // growing.
        #expect((1...SteeringHealthMonitor.heartbeatCallsAtOnce).contains(database.calls.withLock { $0 }))
        let statistics = setup.monitor.statistics()
        #expect(statistics.heartbeatFailures.keys.sorted() == ["timeout"])
        #expect((statistics.heartbeatAgeMilliseconds ?? 0) >= 200)
        let metrics = try setup.metrics()
        #expect(metrics.contains(#"hlsorigin_steering_heartbeat_failures_total{reason="timeout"} "#))
        #expect(metrics.contains(#"hlsorigin_steering_heartbeat_failures_total{reason="error"} 0"#))
        // Once the call ends (failed), the loop beats again.
        database.behaviour.withLock { $0 = .answer }
        database.hang.release()
        try await waitUntil("a heartbeat written", timeout: .seconds(30)) {
            database.calls.withLock { $0 } >= 2 && monitor.statistics().heartbeatAgeMilliseconds ?? .max < 1000
        }
        running.cancel()
        await running.value
    }

    @Test func whileAHeartbeatHangsEverySkippedBeatIsATimeoutAndAFreshCallStartsAfterThreeTimeouts() async throws {
        let setup = try Setup(database: true, heartbeatTimeout: .milliseconds(100))
        let database = try #require(setup.database)
        database.behaviour.withLock { $0 = .hang }
        defer { database.hang.release() }
        func timeouts() -> Int { setup.monitor.statistics().heartbeatFailures["timeout"] ?? 0 }
        // The first call hangs (for ever, as on a half-dead connection): one timeout after 100 ms.
        await setup.monitor.beat()
        #expect(database.calls.withLock { $0 } == 1)
        #expect(timeouts() == 1)
        // Each beat while it runs, under 3 x 100 ms after it began, is skipped and counted.
        setup.advance(seconds: 0.1)
        await setup.monitor.beat()
        setup.advance(seconds: 0.199)
        await setup.monitor.beat()
        #expect(database.calls.withLock { $0 } == 1)
        #expect(timeouts() == 3)
        // 300 ms after it began, a fresh call starts beside it (hung too here: one more timeout).
        setup.advance(seconds: 0.001)
        await setup.monitor.beat()
        #expect(database.calls.withLock { $0 } == 2)
        #expect(timeouts() == 4)
        // Two calls hang: no third, however long they last; every beat counts.
        setup.advance(seconds: 10)
        await setup.monitor.beat()
        #expect(database.calls.withLock { $0 } == 2)
        #expect(timeouts() == 5)
        #expect(try setup.metrics().contains(#"hlsorigin_steering_heartbeat_failures_total{reason="timeout"} 5"#))
        // Once they end, the next beat writes.
        database.behaviour.withLock { $0 = .answer }
        database.hang.release()
        try await waitUntil("the hung calls ended", timeout: .seconds(3)) {
            await setup.monitor.beat()
            return database.calls.withLock { $0 } == 3
        }
        #expect(setup.monitor.statistics().heartbeatAgeMilliseconds == 0)
    }

    @Test func withoutSteeringSelfAHeartbeatReadsTheRowsButKeepsTheHeartbeatAge() async throws {
        var steering = ContentSteeringTests.steering
        steering.selfURL = nil
        let setup = try Setup(database: true, steering: steering)
        setup.advance(seconds: 5)
        await setup.monitor.beat()
        // The peer's row is read; no row of this origin's was written, so its heartbeat age runs on from the watch.
        #expect(setup.monitor.observations()[Self.peer]?.database != nil)
        #expect(setup.monitor.statistics().heartbeatAgeMilliseconds == 5000)
        #expect(try setup.metrics().contains("hlsorigin_steering_heartbeat_age_seconds 5.0"))
    }

    /// A status line, headers announcing 100 bytes, and 10 of them.
    static let partialAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789"

    @Test func aPeerClosingMidAnswerCountsAsClosedAndOneThatNeverAnswersAsTimeout() async throws {
        /// The reason `/metrics` counts for one fetch from `server` (it must fail with a `PeerFetchError`).
        func reason(_ server: PartialAnswerServer, timeout: Duration) async throws -> String? {
            let url = try #require(PeerURL("http://127.0.0.1:\(server.port)/peer/health"))
            let error = await #expect(throws: PeerFetchError.self) {
                _ = try await PeerClient().get(url, timeout: timeout, limit: 1 << 20)
            }
            return error.map { SteeringHealthMonitor.failureReason($0) }
        }
        // The peer closes on the request, answering nothing (the old client called that a timeout).
        #expect(try await reason(PartialAnswerServer(answer: "", thenClose: true), timeout: .seconds(5)) == "closed")
        // Headers and part of the body, then the peer closes.
        let closing = try PartialAnswerServer(answer: Self.partialAnswer, thenClose: true)
        #expect(try await reason(closing, timeout: .seconds(5)) == "closed")
        // The same headers and part, then nothing: the deadline ends it.
        let silent = try PartialAnswerServer(answer: Self.partialAnswer, thenClose: false)
        #expect(try await reason(silent, timeout: .milliseconds(200)) == "timeout")
        silent.stop()
    }

    @Test func manifestCountsOfARemovedChannelAreNoLongerShown() async throws {
        let setup = try Setup(database: false)
        _ = try ContentSteeringTests.get(setup.harness, "/live/ch/steering.json")
        #expect(try setup.metrics().contains(#"hlsorigin_steering_manifests_total{channel="ch",pathway="origin-a"} 1"#))
        // A reload without it stops the channel.
        var configuration = setup.harness.origin.configuration
        configuration.channels.removeAll { $0.name == "ch" }
        _ = try setup.harness.origin.reload(configuration)
        #expect(try !setup.metrics().contains(#"hlsorigin_steering_manifests_total{channel="ch""#))
    }

    @Test func aFailedHeartbeatIsCountedAndPeersAreStillReadOverHTTP() async throws {
        let setup = try Setup(database: true)
        let database = try #require(setup.database)
        database.behaviour.withLock { $0 = .fail }
        await setup.monitor.beat()
        await setup.monitor.beat()
        await setup.monitor.round()
        #expect(setup.monitor.statistics().heartbeatFailures == ["error": 2])
        #expect(setup.peerHealth == .healthy)
        #expect(try setup.metrics().contains(#"hlsorigin_steering_heartbeat_failures_total{reason="error"} 2"#))
    }

    @Test func heartbeatsPruneOnTheFirstBeatAndThenEvery3600th() async throws {
        let setup = try Setup(database: true)
        let database = try #require(setup.database)
        for _ in 0...SteeringHealthMonitor.beatsBetweenPrunes { await setup.monitor.beat() }
        let prunes = database.prunes.withLock { $0 }
        #expect(prunes.count == 3601)
        #expect(prunes.indices.filter { prunes[$0] } == [0, 3600])
    }

    /// The `steering` part of `GET /admin/channels/ch` now, checked against the admin API's description.
    static func steeringStatus(_ setup: Setup) throws -> [String: Any] {
        let answer = try #require(setup.harness.request("GET", "/admin/channels/ch"))
        #expect(answer.status == 200)
        let problems = AdminOpenAPIValidator.shared.problems(
            method: "GET", target: "/admin/channels/ch", status: 200, contentType: "application/json",
            body: Array(answer.text.utf8))
        #expect(problems == [], "\(answer.text)")
        let status = try #require(try JSONSerialization.jsonObject(with: Data(answer.text.utf8)) as? [String: Any])
        return try #require(status["steering"] as? [String: Any], "\(answer.text)")
    }

    /// One pathway's entry of a `steering` status, and its only origin's.
    static func pathway(_ id: String, in steering: [String: Any]) throws -> (
        pathway: [String: Any], origin: [String: Any]
    ) {
        let pathways = try #require(steering["pathways"] as? [[String: Any]])
        let pathway = try #require(pathways.first { $0["id"] as? String == id })
        let origins = try #require(pathway["origins"] as? [[String: Any]])
        #expect(origins.count == 1)
        return (pathway, try #require(origins.first))
    }

    @Test func theAdminStatusShowsEachPathwaysJudgementAndWhyWithThePeersReportAge() async throws {
        let setup = try Setup(database: false)
        await setup.monitor.round()
        setup.advance(seconds: 2)
        let before = try Self.pathway("origin-b", in: try Self.steeringStatus(setup))
        #expect(before.pathway["state"] as? String == "healthy")
        #expect(before.origin["origin"] as? String == Self.peer)
        #expect(before.origin["httpReportAgeMilliseconds"] as? Int == 2000)
        #expect(before.origin["heartbeatAgeMilliseconds"] == nil)
        // This origin's own pathway is judged by itself, with no report age.
        let own = try Self.pathway("origin-a", in: try Self.steeringStatus(setup))
        #expect(own.origin["self"] as? Bool == true)
        #expect(own.origin["httpReportAgeMilliseconds"] == nil)
        // The peer stops answering: down 7 s after its last report, and the status says why.
        setup.peer.behaviour.withLock { $0 = .refuse }
        setup.advance(seconds: 5)
        await setup.monitor.round()
        let steering = try Self.steeringStatus(setup)
        #expect(steering["heartbeat"] == nil)
        let after = try Self.pathway("origin-b", in: steering)
        #expect(after.pathway["state"] as? String == "down")
        #expect((after.pathway["reason"] as? String)?.contains("no answer for 6000 ms") == true)
        #expect(after.origin["state"] as? String == "down")
        #expect(after.origin["httpReportAgeMilliseconds"] as? Int == 7000)
        #expect((after.origin["lastReadError"] as? String)?.contains("connection refused") == true)
        #expect(after.origin["readFailures"] as? [String: Int] == ["connect": 1])
    }

    @Test func theAdminStatusShowsAFailingHungOrStaleHeartbeatWithItsLastError() async throws {
        let setup = try Setup(database: true, heartbeatTimeout: .milliseconds(100))
        let database = try #require(setup.database)
        func heartbeat() throws -> [String: Any] {
            try #require(try Self.steeringStatus(setup)["heartbeat"] as? [String: Any])
        }
        // Written: its age, and the peer's row's age beside its HTTP report's.
        await setup.monitor.round()
        await setup.monitor.beat()
        setup.advance(seconds: 1)
        #expect(try heartbeat()["state"] as? String == "written")
        #expect(try heartbeat()["ageMilliseconds"] as? Int == 1000)
        #expect(try heartbeat()["lastError"] == nil)
        let peer = try Self.pathway("origin-b", in: try Self.steeringStatus(setup)).origin
        #expect(peer["heartbeatAgeMilliseconds"] as? Int == 1000)
        #expect(peer["httpReportAgeMilliseconds"] as? Int == 1000)
        // Failing: the database refuses; the error and when.
        database.behaviour.withLock { $0 = .fail }
        await setup.monitor.beat()
        setup.advance(seconds: 0.5)
        var failing = try heartbeat()
        #expect(failing["state"] as? String == "failing")
        #expect(failing["ageMilliseconds"] as? Int == 1500)
        #expect((failing["lastError"] as? String)?.contains("connection refused") == true)
        #expect(failing["lastErrorAgeMilliseconds"] as? Int == 500)
        #expect(failing["failures"] as? [String: Int] == ["error": 1, "timeout": 0])
        // Hung: a call past its deadline still runs, and for how long.
        database.behaviour.withLock { $0 = .hang }
        defer { database.hang.release() }
        await setup.monitor.beat()
        setup.advance(seconds: 2)
        let hung = try heartbeat()
        #expect(hung["state"] as? String == "hung")
        #expect((hung["reason"] as? String)?.contains("running for 2000 ms") == true, "\(hung)")
        #expect((hung["lastError"] as? String)?.contains("no answer within") == true)
        #expect(hung["failures"] as? [String: Int] == ["error": 1, "timeout": 1])
        // The call ends and the next one writes: written again, the last error still shown with its age.
        database.behaviour.withLock { $0 = .answer }
        database.hang.release()
        try await waitUntil("the hung call ended", timeout: .seconds(30)) {
            await setup.monitor.beat()
            return database.calls.withLock { $0 } >= 4
        }
        failing = try heartbeat()
        #expect(failing["state"] as? String == "written")
        #expect(failing["ageMilliseconds"] as? Int == 0)
        #expect(failing["lastErrorAgeMilliseconds"] as? Int == 2000)
        // Stale: nothing written for longer than a report counts (the loop starved or stopped), no call failing.
        setup.advance(seconds: 7)
        let stale = try heartbeat()
        #expect(stale["state"] as? String == "stale")
        #expect((stale["reason"] as? String)?.contains("7000 ms") == true, "\(stale)")
    }

    @Test func anUnsteeredChannelsStatusHasNoSteeringPart() async throws {
        let setup = try Setup(database: false)
        let answer = try #require(setup.harness.request("GET", "/admin/channels/plain"))
        let status = try #require(try JSONSerialization.jsonObject(with: Data(answer.text.utf8)) as? [String: Any])
        #expect(status["name"] as? String == "plain")
        #expect(status["steering"] == nil)
    }

    @Test func metricsShowEachPathwaysStateAndTheManifestsAnswered() async throws {
        let setup = try Setup(database: false)
        await setup.monitor.round()
        let metrics = try setup.metrics()
        #expect(metrics.contains(#"hlsorigin_steering_pathway_state{channel="ch",pathway="origin-a"} 0"#))
        #expect(metrics.contains(#"hlsorigin_steering_pathway_state{channel="ch",pathway="origin-b"} 0"#))
        // No heartbeat families without a database; the unsteered channel has no pathway.
        #expect(!metrics.contains("hlsorigin_steering_heartbeat"))
        #expect(!metrics.contains(#"channel="plain",pathway"#))
        // The peer stops answering; 7 s later it is down (3) and listed last.
        setup.peer.behaviour.withLock { $0 = .refuse }
        setup.advance(seconds: 7)
        await setup.monitor.round()
        _ = try ContentSteeringTests.get(setup.harness, "/live/ch/steering.json", [("_HLS_pathway", "origin-b")])
        _ = try ContentSteeringTests.get(setup.harness, "/live/ch/steering.json")
        let later = try setup.metrics()
        #expect(later.contains(#"hlsorigin_steering_pathway_state{channel="ch",pathway="origin-b"} 3"#))
        #expect(later.contains(#"hlsorigin_steering_peer_read_failures_total{peer="\#(Self.peer)",reason="connect"} 1"#))
        #expect(later.contains(#"hlsorigin_steering_manifests_total{channel="ch",pathway="origin-a"} 2"#))
        #expect(!later.contains(#"hlsorigin_steering_manifests_total{channel="ch",pathway="origin-b"}"#))
    }
}

/// A peer on 127.0.0.1 that reads one connection's request, writes `answer`, then closes the connection
/// (`thenClose`) or holds it open, silent, until `stop()`.
final class PartialAnswerServer: Sendable {
    let port: Int
    private let listener: Int32
    private let held = Mutex<Int32>(-1)

    init(answer: String, thenClose: Bool) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(listener, socketAddress, length) == 0 && listen(listener, 1) == 0
                    && getsockname(listener, socketAddress, &length) == 0
            }
        }
        guard bound else { throw PeerFetchError(.connect, "cannot listen on 127.0.0.1") }
        port = Int(UInt16(bigEndian: address.sin_port))
        DispatchQueue.global().async {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            var request = [UInt8](repeating: 0, count: 4096)
            _ = read(connection, &request, request.count)
            let bytes = Array(answer.utf8)
            if !bytes.isEmpty { _ = bytes.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) } }
            if thenClose { close(connection) } else { self.held.withLock { $0 = connection } }
        }
    }

    func stop() {
        held.withLock { connection in
            if connection >= 0 { close(connection) }
            connection = -1
        }
    }

    deinit {
        stop()
        close(listener)
    }
}
