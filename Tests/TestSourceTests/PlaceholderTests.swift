import Testing
@Test func placeholderTestSourceTests() { #expect(Bool(true)) }
