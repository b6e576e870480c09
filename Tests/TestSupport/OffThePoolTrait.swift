import Foundation
import Synchronization
public import Testing

/// Runs each test of a suite (or one test) with `offThePool`: on a thread of its own, so the test may block (socket
/// reads from an in-process server, `usleep`, a server's `stop()`) without holding one of the Swift concurrency
/// pool's few threads. At most as many such tests as the machine has cores (at least 2) run at once, as many as the
/// pool let run before; the others wait for a turn without holding a thread. For suites of synchronous tests: an async
/// test under it also holds a turn while it awaits. `@Suite(.offThePool)` or `@Test(.offThePool)`.
public struct OffThePoolTrait: TestTrait, SuiteTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        test.isSuite || testCase == nil ? nil : self
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        await OffThePoolTurns.shared.take()
        defer { OffThePoolTurns.shared.give() }
        try await TestSupport.offThePool { try await function() }
    }
}

extension Trait where Self == OffThePoolTrait {
    /// Runs the test (each test of the suite) on a thread of its own: see `OffThePoolTrait`.
    public static var offThePool: Self { Self() }
}

/// Turns for `OffThePoolTrait`: a count, and the tasks waiting for one (suspended, holding no thread).
final class OffThePoolTurns: Sendable {
    static let shared = OffThePoolTurns(count: max(2, ProcessInfo.processInfo.activeProcessorCount))

    private struct State {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state: Mutex<State>

    init(count: Int) { state = Mutex(State(free: count)) }

    func take() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                guard state.free > 0 else {
                    state.waiting.append(continuation)
                    return false
                }
                state.free -= 1
                return true
            }
            if now { continuation.resume() }
        }
    }

    func give() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.free += 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
