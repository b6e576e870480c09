import TestSupport
import Testing

/// Every end-to-end test runs the real release binary with real ffmpeg encoders and readers. They run one at a time:
/// two at once would overload a 2-core machine and turn timing into noise.
@Suite("End to end", .serialized, .tags(.endToEnd))
enum EndToEnd {}

/// A failure of the end-to-end machinery (not of the origin), with a message that says what to do.
struct EndToEndError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
