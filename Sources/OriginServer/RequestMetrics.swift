import Synchronization

/// HTTP answers counted by status class, without locks.
public final class RequestMetrics: Sendable {
    private let informational = Atomic<Int>(0)
    private let successful = Atomic<Int>(0)
    private let redirection = Atomic<Int>(0)
    private let clientError = Atomic<Int>(0)
    private let serverError = Atomic<Int>(0)

    public init() {}

    func count(status: Int) {
        switch status / 100 {
        case 1: informational.add(1, ordering: .relaxed)
        case 2: successful.add(1, ordering: .relaxed)
        case 3: redirection.add(1, ordering: .relaxed)
        case 4: clientError.add(1, ordering: .relaxed)
        default: serverError.add(1, ordering: .relaxed)
        }
    }

    /// Answers so far by class: ("1xx", n), ("2xx", n) ...
    public var snapshot: [(String, Int)] {
        [
            ("1xx", informational.load(ordering: .relaxed)), ("2xx", successful.load(ordering: .relaxed)),
            ("3xx", redirection.load(ordering: .relaxed)), ("4xx", clientError.load(ordering: .relaxed)),
            ("5xx", serverError.load(ordering: .relaxed)),
        ]
    }
}
