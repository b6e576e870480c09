import Testing

@testable import MicroHTTPD

@Suite struct PathDecodingTests {}
