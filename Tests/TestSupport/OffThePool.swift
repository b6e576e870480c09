import Foundation

/// Runs `body` with a thread of its own as its task executor (SE-0417) and returns what it returns. What `body` does
/// synchronously (a blocking socket read, `usleep`, a child process's wait, a server's `stop()`) then blocks that
/// thread, never one of the Swift concurrency pool's threads: the pool has as many threads as the machine has cores
/// (2 in CI), swift-testing runs every test on it, and one test blocking it for seconds starves every other test's
/// `await` (`Task.sleep` polls resumed 46 s late). `#expect`, `#require` and task-locals work as anywhere in the
/// test: it is the same task, only its executor changes. Child tasks `body` makes run on that thread too.
public func offThePool<T>(_ body: () async throws -> T) async throws -> T {
    let executor = ThreadTaskExecutor()
    defer { executor.finish() }
    return try await withTaskExecutorPreference(executor, operation: body)
}

/// A task executor that runs its jobs one at a time on a thread of its own, until `finish()`; jobs that come after
/// go to the global executor.
final class ThreadTaskExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: `jobs` and `finished` are only touched with `condition` locked.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var finished = false

    init() {
        let thread = Thread { [self] in run() }
        thread.name = "offThePool"
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        let taken = !finished
        if taken {
            jobs.append(job)
            condition.signal()
        }
        condition.unlock()
        if !taken { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
    }

    /// Lets the thread end once its queued jobs have run.
    func finish() {
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty && !finished { condition.wait() }
            guard !jobs.isEmpty else {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
