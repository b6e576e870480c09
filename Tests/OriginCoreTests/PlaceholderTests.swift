import Testing
@Test func placeholderOriginCoreTests() { #expect(Bool(true)) }
