import Glibc

/// A thread of its own that runs `work` every `interval` milliseconds until `stop()`: for `RequestDeadlines`' sweep,
/// which must cut slow clients whatever else the process does, so it runs neither on libmicrohttpd's threads nor on
/// the Swift concurrency pool (a caller blocking the pool's few threads, as a test's blocking socket reads do, would
/// stall it). Between runs it waits on a condition with a monotonic timeout, so `stop()` ends it at once.
final class PeriodicThread: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Under `mutex`.
    private var stopped = false
    private var thread = pthread_t()
    private let intervalMilliseconds: Int64
    private let work: @Sendable () -> Void

    /// Starts the thread (`name` says what it is for, in an error if it cannot start).
    init(name: String, intervalMilliseconds: Int64, _ work: @escaping @Sendable () -> Void) {
        self.intervalMilliseconds = max(intervalMilliseconds, 1)
        self.work = work
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
        let created = pthread_create(
            &thread, nil,
            { argument in
                let periodic = Unmanaged<PeriodicThread>.fromOpaque(argument!).takeRetainedValue()
                periodic.loop()
                return nil
            }, Unmanaged.passRetained(self).toOpaque())
        precondition(created == 0, "cannot start the \(name) thread: error \(created)")
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Ends the thread and waits for it (a run under way finishes first). Idempotent; not from `work` itself.
    func stop() {
        pthread_mutex_lock(mutex)
        let first = !stopped
        stopped = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
        if first { pthread_join(thread, nil) }
    }

    private func loop() {
        pthread_mutex_lock(mutex)
        while !stopped {
            var wake = timespec()
            clock_gettime(CLOCK_MONOTONIC, &wake)
            let nanoseconds = Int64(wake.tv_nsec) + (intervalMilliseconds % 1000) * 1_000_000
            wake.tv_sec += Int(intervalMilliseconds / 1000 + nanoseconds / 1_000_000_000)
            wake.tv_nsec = Int(nanoseconds % 1_000_000_000)
            var timedOut = false
            while !stopped && !timedOut {
                timedOut = pthread_cond_timedwait(condition, mutex, &wake) == ETIMEDOUT
            }
            guard !stopped else { break }
            pthread_mutex_unlock(mutex)
            work()
            pthread_mutex_lock(mutex)
        }
        pthread_mutex_unlock(mutex)
    }
}
