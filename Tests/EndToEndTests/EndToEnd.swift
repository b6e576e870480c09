import TestSupport
import Testing

/// Every end-to-end test runs the real release binary with real ffmpeg encoders and readers. They run in three lanes,
/// each one test at a time: this one (one origin, encoders, ffmpeg/streamlink/GStreamer readers), `EndToEndRestarts`
/// and `EndToEndInBrowser`. Most of an end-to-end test is waiting on stream time: three lanes of one test each keep a
/// 2-core machine busy without turning timing into noise (the heaviest process, a browser, runs one at a time).
@Suite("End to end", .serialized, .tags(.endToEnd))
enum EndToEnd {}

/// The lane of suites that kill and restart origins or run several of them (redundancy groups, a shared database).
@Suite("End to end with restarts and groups of origins", .serialized, .tags(.endToEnd))
enum EndToEndRestarts {}

/// The second lane: suites that play in headless Chromium (hls.js, video.js, native HLS). A browser decoding video
/// is the heaviest process of a test, so at most one runs at a time, next to one test of `EndToEnd`.
@Suite("End to end in the browser", .serialized, .tags(.endToEnd))
enum EndToEndInBrowser {}

/// A failure of the end-to-end machinery (not of the origin), with a message that says what to do.
struct EndToEndError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
