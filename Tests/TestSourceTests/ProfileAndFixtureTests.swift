import Foundation
import TestSource
import TestSupport
import Testing

@Suite("Profiles and fixtures", .offThePool)
struct ProfileAndFixtureTests {
    @Test func builtInProfiles() throws {
        #expect(TestSourceProfile.builtIn.map(\.name) == ["360p", "180p", "captions"])
        let high = try #require(TestSourceProfile.named("360p"))
        #expect(high.width == 640 && high.height == 360)
        #expect(high.videoBitrate == 400_000 && high.audioBitrate == 96_000)
        #expect(high.framesPerSecond == 25 && high.gopDuration == 1)
        #expect(high.frameDurationTicks == 3600)
        #expect(high.codecs == "avc1.4d401e,mp4a.40.2")
        let low = try #require(TestSourceProfile.named("180p"))
        #expect(low.width == 320 && low.height == 180)
        #expect(low.codecs == "avc1.4d400c,mp4a.40.2")
        #expect(TestSourceProfile.named("1080p") == nil)
    }

    @Test(arguments: [0, -2])
    func rejectsSegmentDurationsThatAreNotWholeGOPs(duration: Int) throws {
        let profile = try #require(TestSourceProfile.named("360p"))
        let error = #expect(throws: TestSourceError.self) {
            _ = try TestStreamGenerator(profile: profile, segmentDuration: duration)
        }
        #expect(error?.kind == .invalidSegmentDuration)
        #expect(error?.description.contains("not a positive multiple") == true)
    }

    @Test func fixturesStaySmall() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: TestStreams.fixtureDirectory.path)
        #expect(
            Set(names) == [
                "video-360p.h264", "video-180p.h264", "slate-360p.h264", "slate-180p.h264",
                "audio-loop.aac", "audio-silence.aac",
            ])
        let total = try names.reduce(0) { $0 + (try TestStreams.fixture($1)).count }
        #expect(total < 400_000)
    }

    @Test func generatorsLoadForEveryProfile() throws {
        for profile in TestSourceProfile.builtIn {
            let generator = try TestStreamGenerator(profile: profile, segmentDuration: 4)
            #expect(generator.segmentDurationTicks == 360_000)
            #expect(generator.nextSequence == 0)
        }
    }
}
