import MediaProbe
import TestSupport
import Testing

@Suite("33-bit MPEG timestamps", .offThePool)
struct MPEGTimestampTests {
    static let top = MPEGTimestamp.modulus
    static let half = MPEGTimestamp.modulus / 2

    @Test func wrappingKeepsTheLow33Bits() {
        #expect(MPEGTimestamp.wrapped(0) == 0)
        #expect(MPEGTimestamp.wrapped(Self.top - 1) == Self.top - 1)
        #expect(MPEGTimestamp.wrapped(Self.top + 5) == 5)
        #expect(MPEGTimestamp.wrapped(-1) == Self.top - 1)
        #expect(MPEGTimestamp.wrapped(-Self.top - 90_000) == Self.top - 90_000)
    }

    @Test func aTimestampPastTheWrapUnwrapsForward() {
        #expect(MPEGTimestamp.unwrap(100, near: Self.top - 50) == Self.top + 100)
        #expect(MPEGTimestamp.unwrap(100, near: 3 * Self.top - 50) == 3 * Self.top + 100)
        #expect(MPEGTimestamp.unwrap(Self.top + 100, near: Self.top - 50) == Self.top + 100)
    }

    @Test func aTimestampBeforeTheWrapUnwrapsBackward() {
        #expect(MPEGTimestamp.unwrap(Self.top - 50, near: 100) == -50)
        #expect(MPEGTimestamp.unwrap(Self.top - 50, near: 2 * Self.top + 100) == 2 * Self.top - 50)
    }

    @Test func aTimestampNearItsReferenceStaysAsItIs() {
        #expect(MPEGTimestamp.unwrap(5000, near: 4000) == 5000)
        #expect(MPEGTimestamp.unwrap(4000, near: 5000) == 4000)
        #expect(MPEGTimestamp.unwrap(Self.half - 1, near: 0) == Self.half - 1)
        #expect(MPEGTimestamp.unwrap(Self.half + 1, near: 0) == -Self.half + 1)
    }

    @Test func exactlyHalfWayUnwrapsToTheLaterValue() {
        #expect(MPEGTimestamp.unwrap(Self.half, near: 0) == Self.half)
        #expect(MPEGTimestamp.unwrap(0, near: Self.half) == Self.top)
        #expect(MPEGTimestamp.unwrap(Self.top - 10, near: Self.half - 10) == Self.top - 10)
        #expect(MPEGTimestamp.unwrap(90_000, near: 5 * Self.top + Self.half + 90_000) == 6 * Self.top + 90_000)
    }
}
