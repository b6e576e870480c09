import MicroHTTPD
import Synchronization

/// HTTP answers counted by status class, without locks.
///
/// Every libmicrohttpd thread counts into a shard of its own (picked by `HTTPServer.currentThreadIndex`), so two
/// threads answering at full rate do not pass one counter's cache line back and forth; reading sums the shards.
public final class RequestMetrics: Sendable {
    /// The counters of one shard, padded to two cache lines so neighbouring shards never share one.
    private final class Shard: Sendable {
        private let padding: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)
        private let informational = Atomic<Int>(0)
        private let successful = Atomic<Int>(0)
        private let redirection = Atomic<Int>(0)
        private let clientError = Atomic<Int>(0)
        private let serverError = Atomic<Int>(0)
        private let trailingPadding: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)

        func counter(_ statusClass: Int) -> Int {
            switch statusClass {
            case 1: informational.load(ordering: .relaxed)
            case 2: successful.load(ordering: .relaxed)
            case 3: redirection.load(ordering: .relaxed)
            case 4: clientError.load(ordering: .relaxed)
            default: serverError.load(ordering: .relaxed)
            }
        }

        func add(_ statusClass: Int) {
            switch statusClass {
            case 1: informational.add(1, ordering: .relaxed)
            case 2: successful.add(1, ordering: .relaxed)
            case 3: redirection.add(1, ordering: .relaxed)
            case 4: clientError.add(1, ordering: .relaxed)
            default: serverError.add(1, ordering: .relaxed)
            }
        }
    }

    private static let shardCount = 16
    private let shards: [Shard] = (0..<RequestMetrics.shardCount).map { _ in Shard() }

    public init() {}

    /// Counts one answer.
    func count(status: Int) {
        shards[HTTPServer.currentThreadIndex % Self.shardCount].add(status / 100)
    }

    /// Answers so far by class: ("1xx", n) ... ("5xx", n).
    public var snapshot: [(String, Int)] {
        (1...5).map { statusClass in
            ("\(statusClass)xx", shards.reduce(0) { $0 + $1.counter(statusClass) })
        }
    }
}
