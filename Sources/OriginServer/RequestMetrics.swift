import Synchronization

/// HTTP answers counted by status class, without locks.
public final class RequestMetrics: Sendable {
    private let byClass: (Atomic<Int>, Atomic<Int>, Atomic<Int>, Atomic<Int>, Atomic<Int>)

    public init() {
        byClass = (Atomic(0), Atomic(0), Atomic(0), Atomic(0), Atomic(0))
    }

    func count(status: Int) {
        switch status / 100 {
        case 1: byClass.0.add(1, ordering: .relaxed)
        case 2: byClass.1.add(1, ordering: .relaxed)
        case 3: byClass.2.add(1, ordering: .relaxed)
        case 4: byClass.3.add(1, ordering: .relaxed)
        default: byClass.4.add(1, ordering: .relaxed)
        }
    }

    /// Answers so far by class: ("1xx", n), ("2xx", n) ...
    public var snapshot: [(String, Int)] {
        [
            ("1xx", byClass.0.load(ordering: .relaxed)), ("2xx", byClass.1.load(ordering: .relaxed)),
            ("3xx", byClass.2.load(ordering: .relaxed)), ("4xx", byClass.3.load(ordering: .relaxed)),
            ("5xx", byClass.4.load(ordering: .relaxed)),
        ]
    }
}
