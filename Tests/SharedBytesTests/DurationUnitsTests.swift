import SharedBytes
import Testing

@Suite struct DurationUnitsTests {
    @Test func wholeUnitsTruncateTowardZero() {
        let duration = Duration.seconds(2) + .nanoseconds(1_999_999)
        #expect(duration.wholeNanoseconds == 2_001_999_999)
        #expect(duration.wholeMicroseconds == 2_001_999)
        #expect(duration.wholeMilliseconds == 2001)
        #expect((Duration.zero - duration).wholeMilliseconds == -2001)
        #expect(Duration.nanoseconds(999).wholeMicroseconds == 0)
    }

    @Test func wholeUnitsSaturateInsteadOfWrapping() {
        let long = Duration.seconds(Int64.max / 1000)
        #expect(long.wholeNanoseconds == .max)
        #expect((Duration.zero - long).wholeNanoseconds == .min)
        #expect(long.wholeMilliseconds == Int64.max / 1000 * 1000)
    }

    @Test func secondsAsDouble() {
        #expect(Duration.milliseconds(1500).inSeconds == 1.5)
        #expect((Duration.zero - .milliseconds(250)).inSeconds == -0.25)
    }
}
