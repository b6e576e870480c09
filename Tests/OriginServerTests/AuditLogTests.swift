import Logging
import MicroHTTPD
import OriginCore
import OriginServer
import TestSupport
import Testing

/// The audit log keeps every admin action and creation, and refusals at a bounded rate per client address, so a
/// client looping on refused requests cannot fill the disk with it.
@Suite("Audit log: refusals at a bounded rate per client, everything else always", .offThePool)
struct AuditLogTests {
    static func refuse(_ audit: AuditLog, from address: String, times: Int) {
        for _ in 0..<times {
            audit.record(
                "PUT /ingest/ch/r/0.ts", by: Requester(credential: "none", address: address),
                outcome: "forbidden_remote", refused: true)
        }
    }

    @Test func aFloodOfRefusalsIsWrittenAsABurstThenAtTheRateWithTheCountLeftOut() {
        let log = CapturedLog()
        let clock = ManualClock()
        let audit = AuditLog(logger: log.logger(), clock: clock)
        Self.refuse(audit, from: "192.0.2.7", times: 1_000)
        #expect(log.all.count == AuditLog.refusalBurst)
        #expect(log.all.allSatisfy { $0.metadata["audit.suppressed"] == nil && $0.level == .warning })
        // A second later: the rate's worth of entries, the first saying how many were left out.
        clock.advance(seconds: 1)
        Self.refuse(audit, from: "192.0.2.7", times: 1_000)
        let after = Array(log.all.dropFirst(AuditLog.refusalBurst))
        #expect(after.count == AuditLog.refusalsPerSecond)
        #expect(after.first?.metadata["audit.suppressed"] == "\(1_000 - AuditLog.refusalBurst)")
        #expect(after.dropFirst().allSatisfy { $0.metadata["audit.suppressed"] == nil })
        #expect(after.first?.metadata["audit.remote"] == "192.0.2.7")
    }

    @Test func anotherClientsRefusalsAndAdminActionsAreWrittenDuringAFlood() {
        let log = CapturedLog()
        let clock = ManualClock()
        let audit = AuditLog(logger: log.logger(), clock: clock)
        Self.refuse(audit, from: "192.0.2.7", times: 500)
        Self.refuse(audit, from: "198.51.100.1", times: 1)
        audit.record("POST /admin/reload", by: Requester(credential: "ops", address: "127.0.0.1"), outcome: "200")
        audit.record("channel created", by: Requester(credential: "loopback", address: "::1"), outcome: "created")
        let others = log.all.filter { $0.metadata["audit.remote"] != "192.0.2.7" }
        #expect(others.map { $0.metadata["audit.outcome"] } == ["forbidden_remote", "200", "created"])
        #expect(others.map(\.level) == [.warning, .notice, .notice])
    }

    @Test func tenThousandAddressesKeepTheBookkeepingBoundedAndShareOneBudgetPastIt() {
        let log = CapturedLog()
        let clock = ManualClock()
        let audit = AuditLog(logger: log.logger(), clock: clock)
        for index in 0..<10_000 {
            Self.refuse(audit, from: "2001:db8::\(String(index, radix: 16))", times: 1)
        }
        // One entry for each address tracked, then the shared budget's burst; nothing more however many come.
        #expect(log.all.count == 1_024 + AuditLog.refusalBurst)
        // Once their buckets have refilled, tracked addresses that left nothing out make room for new ones.
        clock.advance(seconds: 10)
        Self.refuse(audit, from: "203.0.113.9", times: 1)
        #expect(log.all.last?.metadata["audit.remote"] == "203.0.113.9")
        #expect(log.all.last?.metadata["audit.suppressed"] == nil)
    }

    @Test func refusedPushesFromALoopingClientAreCountedInMetricsAndWrittenAtTheRate() throws {
        let log = CapturedLog()
        let stack = try OriginTestStack(audit: log.logger())
        for _ in 0..<500 {
            let refused = try #require(
                send(stack.handler, "PUT", "/ingest/ch/360p/0.ts", body: [0x47], remote: AccessControlTests.remote))
            #expect(refused.status == 403)
        }
        let metrics = try stack.get("/metrics").text
        #expect(metrics.contains("hlsorigin_refusals_total{route=\"ingest\",reason=\"forbidden_remote\"} 500\n"))
        let written = log.all.filter { $0.metadata["audit.outcome"] == "forbidden_remote" }.count
        print("500 refused pushes: \(written) audit entries")
        // The burst, plus what the clock refilled while the loop ran (the test's clock stands still).
        #expect(written >= AuditLog.refusalBurst && written < AuditLog.refusalBurst + 2 * AuditLog.refusalsPerSecond)
    }
}
