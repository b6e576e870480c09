import Dispatch
import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

@testable import OriginCore

/// A channel's shared-book changes from the stream run on a `BackgroundLane`: in the order given (an out-point before
/// its cue-in), one at a time, and never more than its limit waiting.
@Suite("A background lane runs its work in order, one at a time, within its limit")
struct BackgroundLaneTests {
    @Test func workRunsInTheOrderItWasQueuedAndNeverTwoAtOnce() async throws {
        let lane = BackgroundLane(limit: 1_000)
        let seen = Mutex<(order: [Int], running: Int, overlapped: Bool)>(([], 0, false))
        for item in 0..<500 {
            #expect(lane.run {
                seen.withLock {
                    $0.running += 1
                    if $0.running > 1 { $0.overlapped = true }
                }
                seen.withLock {
                    $0.order.append(item)
                    $0.running -= 1
                }
            })
        }
        try await waitUntil("the lane to run all 500 items", timeout: .seconds(5)) {
            seen.withLock { $0.order.count } == 500
        }
        #expect(seen.withLock { $0.order } == Array(0..<500))
        #expect(!seen.withLock { $0.overlapped })
    }

    @Test func workBeyondTheLimitIsRefusedWhileTheLaneIsBusy() async throws {
        let lane = BackgroundLane(limit: 2)
        let release = Atomic<Bool>(false)
        let started = Atomic<Bool>(false)
        #expect(lane.run {
            started.store(true, ordering: .sequentiallyConsistent)
            while !release.load(ordering: .sequentiallyConsistent) { usleep(1_000) }
        })
        try await waitUntil("the first item to start", timeout: .seconds(5)) {
            started.load(ordering: .sequentiallyConsistent)
        }
        #expect(lane.run {})
        #expect(lane.run {})
        #expect(!lane.run {})
        release.store(true, ordering: .sequentiallyConsistent)
    }

    @Test func aStepAskingToRunAgainKeepsItsPlaceWithoutHoldingAThreadMeanwhile() async throws {
        // The lane's retries are held here and fired by the test (a manual clock for the lane): what the lane does
        // while a step waits is then seen whatever the machine's load (in full test runs this task was once starved
        // for longer than the step's whole wait, and a test on the real clock saw the retry done already).
        let retries = Mutex<[(delay: Duration, work: @Sendable () -> Void)]>([])
        let drainsStarted = Atomic<Int>(0)
        let lane = BackgroundLane(limit: 10) { delay, work in
            if delay <= .zero {
                drainsStarted.add(1, ordering: .sequentiallyConsistent)
                Thread { work() }.start()
            } else {
                retries.withLock { $0.append((delay, work)) }
            }
        }
        let seen = Mutex<[String]>([])
        #expect(lane.runStep { attempt in
            seen.withLock { $0.append("attempt \(attempt)") }
            return attempt == 0 ? .again(after: .seconds(4)) : .done
        })
        #expect(lane.run { seen.withLock { $0.append("second") } })
        try await waitUntil("the first attempt to ask for its retry", timeout: .seconds(30)) {
            retries.withLock { $0.count } == 1
        }
        // Waiting, the step keeps its place and no thread runs the lane: the item queued behind it has not run, and
        // the lane's thread let go (a lane that dropped the step or ran the next item meanwhile would have run it).
        try await waitUntil("the drain that asked for the retry to end", timeout: .seconds(30)) { !lane.isRunning }
        #expect(seen.withLock { $0 } == ["attempt 0"], "nothing ran while the step waited for its retry")
        #expect(retries.withLock { $0.map(\.delay) } == [.seconds(4)], "the retry is asked for after the step's wait")
        #expect(lane.run { seen.withLock { $0.append("third") } }, "work queued during the wait is accepted")
        #expect(drainsStarted.load(ordering: .sequentiallyConsistent) == 1, "work queued during the wait starts no drain of its own")

        let retry = retries.withLock { $0.removeFirst().work }
        Thread { retry() }.start()
        try await waitUntil("the retry and the items behind it to run", timeout: .seconds(30)) {
            seen.withLock { $0.count } == 4
        }
        #expect(seen.withLock { $0 } == ["attempt 0", "attempt 1", "second", "third"], "the later items waited behind the retry")
        #expect(retries.withLock { $0.isEmpty }, "a step that is done asks for no retry")
    }
}
