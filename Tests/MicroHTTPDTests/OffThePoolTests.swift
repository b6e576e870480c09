import Dispatch
import Foundation
import TestSupport
import Testing

/// `offThePool` (TestSupport), which the suites of blocking tests here run under: a body that blocks holds a thread
/// of its own, never one of the Swift concurrency pool's.
@Suite struct OffThePoolTests {
    /// More bodies than the pool has threads each block until a task on the pool, which sleeps first, releases them:
    /// had they blocked pool threads, that task could not run before every wait had timed out.
    @Test func blockingBodiesLeaveThePoolToOtherTasks() async throws {
        let count = ProcessInfo.processInfo.activeProcessorCount + 2
        let release = DispatchSemaphore(value: 0)
        let released = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<count {
                group.addTask {
                    try await offThePool { release.wait(timeout: .now() + 10) == .success }
                }
            }
            group.addTask {
                try await Task.sleep(for: .milliseconds(50))
                for _ in 0..<count { release.signal() }
                return true
            }
            return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        #expect(released == count + 1)
    }
}
