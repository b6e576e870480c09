import TestSupport
import Testing

/// Every end-to-end test runs the real release binary with real ffmpeg encoders and readers. They run in two lanes,
/// each one test at a time: this one (encoders, ffmpeg/streamlink/GStreamer readers, kills and restarts) and
/// `EndToEndInBrowser`. Two lanes keep a 2-core machine busy without overloading it (most of an end-to-end test is
/// waiting on stream time); more tests at once would turn timing into noise.
@Suite("End to end", .serialized, .tags(.endToEnd))
enum EndToEnd {}

/// The second lane: suites that play in headless Chromium (hls.js, video.js, native HLS). A browser decoding video
/// is the heaviest process of a test, so at most one runs at a time, next to one test of `EndToEnd`.
@Suite("End to end in the browser", .serialized, .tags(.endToEnd))
enum EndToEndInBrowser {}

/// A failure of the end-to-end machinery (not of the origin), with a message that says what to do.
struct EndToEndError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
