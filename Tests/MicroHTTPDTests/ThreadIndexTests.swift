import Foundation
import MicroHTTPD
import TestSupport
import Testing

/// Per-thread tables are indexed by `HTTPServer.currentThreadIndex`: indices must stay small however many threads
/// come and go (servers stop and start new threads), or tables indexed by them would stop working.
@Suite("Thread indices", .offThePool)
struct ThreadIndexTests {
    /// The index a new thread gets, read on that thread before it exits.
    static func indexOfAShortLivedThread() -> Int {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var index = -1
        let thread = Thread {
            index = HTTPServer.currentThreadIndex
            done.signal()
        }
        thread.start()
        done.wait()
        return index
    }

    @Test func anExitedThreadsIndexIsGivenToANewThread() throws {
        var highest = 0
        for _ in 0..<300 {
            highest = max(highest, Self.indexOfAShortLivedThread())
            // Let the thread exit (its index is returned by the thread's key destructor).
            usleep(2000)
        }
        // 300 threads one after another; other suites' threads run meanwhile, but far fewer than 300 at once.
        #expect(highest < 100)
    }

    @Test func anIndexIsStableForTheLifeOfItsThread() {
        let first = HTTPServer.currentThreadIndex
        #expect(HTTPServer.currentThreadIndex == first)
    }
}
