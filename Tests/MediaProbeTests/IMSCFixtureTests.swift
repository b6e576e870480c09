import TestSupport
import Testing

@testable import MediaProbe

/// The committed IMSC1 fixture (scripts/make-imsc-fixture.py): an init section with one `stpp` track and 2-second
/// segments of one TTML document each, which ffprobe reads as an `stpp` stream with samples at 0, 2, 4 and 6 s.
@Suite("IMSC1 fixture", .offThePool)
struct IMSCFixtureTests {
    @Test func initSectionHasOneIMSCSubtitleTrack() throws {
        let info = try Fixture.initSection("imsc-init.mp4")
        #expect(info.tracks == [TrackInfo(kind: .subtitles, codec: "stpp.ttml.im1t", trackID: 1, timescale: 1000)])
    }

    @Test func eachSegmentIsTwoSecondsOnTheSubtitleTimeline() throws {
        let initInfo = try Fixture.initSection("imsc-init.mp4")
        for index in 0..<4 {
            let info = try MediaProbe.probeSegment(Fixture.bytes("imsc-\(index).m4s"), initSection: initInfo)
            #expect(info.container == .fragmentedMP4Segment)
            #expect(info.tracks.map(\.codec) == ["stpp.ttml.im1t"])
            #expect(info.startTime == MediaTime(ticks: Int64(index) * 2000, timescale: 1000))
            #expect(info.duration == MediaTime(ticks: 2000, timescale: 1000))
            #expect(info.startsWithKeyframe)
        }
    }
}
