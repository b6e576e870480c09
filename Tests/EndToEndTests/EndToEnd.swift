import Testing

/// Every end-to-end test runs the real release binary with real ffmpeg encoders and readers. They run one at a time:
/// two at once would overload a 2-core machine and turn timing into noise.
@Suite("End to end", .serialized)
enum EndToEnd {}
