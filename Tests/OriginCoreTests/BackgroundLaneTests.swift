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
        // A thread of its own for each drain: in full test runs every dispatch queue of the process (the background
        // work's and a test's own alike) once waited over 30 s for a thread.
        let lane = BackgroundLane(limit: 10) { delay, work in
            let microseconds = max(0, delay.components.seconds * 1_000_000 + delay.components.attoseconds / 1_000_000_000_000)
            Thread {
                if microseconds > 0 { usleep(useconds_t(clamping: microseconds)) }
                work()
            }.start()
        }
        let seen = Mutex<[String]>([])
        let attempts = Atomic<Int>(0)
        #expect(lane.runStep { attempt in
            attempts.add(1, ordering: .sequentiallyConsistent)
            seen.withLock { $0.append("attempt \(attempt)") }
            return attempt == 0 ? .again(after: .seconds(4)) : .done
        })
        #expect(lane.run { seen.withLock { $0.append("second") } })
        // Generous bounds where only starting matters: the full test run keeps both cores and the background-work
        // threads busy, and nothing here depends on how soon the first attempt runs.
        try await waitUntil("the first attempt to run", timeout: .seconds(30)) { attempts.load(ordering: .relaxed) == 1 }
        // A step sleeping through its wait would keep the lane running for the whole 4 s; waiting, the step keeps its
        // place: the item queued behind it has not run (a lane that let go of the step, or ran the next item while
        // the step waited, would have run it by now).
        try await waitUntil("the lane to wait for the retry, idle, with nothing else run", timeout: .milliseconds(3_500)) {
            !lane.isRunning && seen.withLock { $0 } == ["attempt 0"]
        }
        try await waitUntil("the retry and the item behind it to run", timeout: .seconds(30)) {
            seen.withLock { $0.count } == 3
        }
        #expect(seen.withLock { $0 } == ["attempt 0", "attempt 1", "second"], "the later item waited behind the retry")
    }
}
