import Dispatch

extension DispatchTime {
    /// Now plus `duration` (whole nanoseconds), for `asyncAfter` with a Swift `Duration`.
    public static func after(_ duration: Duration) -> DispatchTime {
        let (seconds, attoseconds) = duration.components
        return .now() + .nanoseconds(Int(seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
    }
}
