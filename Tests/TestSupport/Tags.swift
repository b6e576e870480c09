public import Testing

extension Tag {
    /// Runs real processes (the release binary, ffmpeg, ffprobe, streamlink, Python) or real time for seconds.
    /// `scripts/test --unit` leaves these out so the unit tests run alone in seconds.
    @Tag public static var endToEnd: Self
}
