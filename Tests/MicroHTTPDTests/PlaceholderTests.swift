import Testing
@Test func placeholderMicroHTTPDTests() { #expect(Bool(true)) }
