import Testing
@Test func placeholderOriginServerTests() { #expect(Bool(true)) }
