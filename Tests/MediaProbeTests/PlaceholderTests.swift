import Testing
@Test func placeholderMediaProbeTests() { #expect(Bool(true)) }
