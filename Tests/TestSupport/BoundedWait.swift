import Foundation
import Glibc
import Synchronization

/// Polls `condition` until it holds; throws a `TestFailure` naming `what` if `timeout` passes first. Blocks the calling
/// thread (for synchronous tests that watch server threads); async callers get the overload below, which sleeps.
/// - Parameters:
///   - what: the awaited state, for the message, e.g. "the handler to suspend the request".
///   - interval: time between polls.
@_disfavoredOverload
public func waitUntil(
    _ what: String, timeout: Duration = .seconds(10), interval: Duration = .milliseconds(1),
    _ condition: () throws -> Bool
) throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else {
            throw TestFailure("timed out after \(timeout) waiting for \(what)")
        }
        let (seconds, attoseconds) = interval.components
        usleep(UInt32(seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
    }
}

/// Polls `condition` until it holds; throws a `TestFailure` naming `what` if `timeout` passes first. Sleeps between
/// polls without blocking a thread.
public func waitUntil(
    _ what: String, timeout: Duration = .seconds(10), interval: Duration = .milliseconds(20),
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            throw TestFailure("timed out after \(timeout) waiting for \(what)")
        }
        try await Task.sleep(for: interval)
    }
}

/// Runs `body` on its own thread and waits for it at most `timeout`; throws a `TestFailure` naming `what` if it has
/// not returned by then (the thread is left behind: the test fails instead of hanging). For calls that block until
/// the code under test finishes something, such as stopping a server.
public func finishWithin(_ timeout: Duration, _ what: String, _ body: @escaping @Sendable () -> Void) throws {
    let done = Mutex(false)
    let thread = Thread {
        body()
        done.withLock { $0 = true }
    }
    thread.start()
    try waitUntil(what, timeout: timeout) { done.withLock { $0 } }
}
