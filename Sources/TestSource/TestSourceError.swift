/// An error from the built-in test source: a request it cannot serve, or a fixture it cannot use.
///
/// Compare errors by ``kind``; ``message`` says what exactly went wrong.
public struct TestSourceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The broad reason of a ``TestSourceError``.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Code: Sendable, Hashable {
            case invalidSegmentDuration
            case fixtureUnavailable
        }

        private let code: Code

        private init(_ code: Code) {
            self.code = code
        }

        /// The segment duration is not a positive whole multiple of the profile's GOP duration.
        public static let invalidSegmentDuration = Kind(.invalidSegmentDuration)
        /// A fixture file is missing from the module's resources, or its content is not what the source expects.
        public static let fixtureUnavailable = Kind(.fixtureUnavailable)

        public var description: String {
            switch code {
            case .invalidSegmentDuration: "invalid segment duration"
            case .fixtureUnavailable: "fixture unavailable"
            }
        }
    }

    /// The broad reason.
    public let kind: Kind
    /// A human-readable explanation.
    public let message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String {
        "TestSourceError(\(kind)): \(message)"
    }
}
