import MediaProbe
import TestSupport
import Testing

@testable import TestSource

@Suite("Captions profile", .offThePool)
struct CaptionsProfileTests {
    @Test(arguments: [("captions", [ClosedCaptionChannel.cea608(1)]), ("360p", []), ("180p", [])])
    func probeFindsTheProfilesCaptionChannels(profile name: String, expected: [ClosedCaptionChannel]) throws {
        let profile = try #require(TestSourceProfile.named(name))
        #expect(profile.closedCaptions == expected)
        var generator = try TestStreamGenerator(profile: profile, segmentDuration: 2)
        for _ in 0..<3 {
            let info = try MediaProbe.probeSegment(generator.nextSegment().bytes)
            #expect(info.closedCaptions == expected)
            #expect(info.startsWithKeyframe)
        }
    }

    @Test func captionsProfileIsThe360pPictureWithSEI() throws {
        let captions = try #require(TestSourceProfile.named("captions"))
        let plain = try #require(TestSourceProfile.named("360p"))
        #expect(captions.codecs == plain.codecs)
        #expect(captions.width == plain.width && captions.height == plain.height)
        var withCaptions = try TestStreamGenerator(profile: captions, segmentDuration: 1)
        var without = try TestStreamGenerator(profile: plain, segmentDuration: 1)
        let captioned = try MediaProbe.probeSegment(withCaptions.nextSegment().bytes)
        let uncaptioned = try MediaProbe.probeSegment(without.nextSegment().bytes)
        #expect(captioned.tracks == uncaptioned.tracks)
        #expect(captioned.duration == uncaptioned.duration)
        #expect(captioned.byteCount > uncaptioned.byteCount)
    }

    @Test func everySecondLoadsShowsAndErasesHello() {
        let pairs = (0..<25).map { CEA608Captions.pair(frameInSecond: $0, framesPerSecond: 25) }
        let control = pairs.filter { (0x10...0x1F).contains($0.0) }.map { [$0.0, $0.1] }
        #expect(
            control == [
                [0x14, 0x20], [0x14, 0x20], [0x14, 0x70], [0x14, 0x70], [0x14, 0x2F], [0x14, 0x2F], [0x14, 0x2C],
                [0x14, 0x2C],
            ])
        let text = pairs.filter { $0.0 >= 0x20 }.flatMap { [$0.0, $0.1] }.filter { $0 != 0 }
        #expect(String(decoding: text, as: UTF8.self) == "HELLO")
        #expect(pairs.filter { $0 == (0, 0) }.count == 25 - 11)
    }

    @Test func seiBytesHaveOddParityAndNoStartCodeInside() {
        #expect(CEA608Captions.withOddParity(0x00) == 0x80)
        #expect(CEA608Captions.withOddParity(0x14) == 0x94)
        #expect(CEA608Captions.withOddParity(0x20) == 0x20)
        #expect(CEA608Captions.withEmulationPrevention([0, 0, 1, 0, 0, 0, 0, 4]) == [0, 0, 3, 1, 0, 0, 3, 0, 0, 4])
        for frame in 0..<25 {
            let unit = CEA608Captions.seiNALUnit(frameInSecond: frame, framesPerSecond: 25)
            #expect(unit.prefix(5) == [0, 0, 0, 1, 0x06])
            let body = Array(unit.dropFirst(4))
            let startCodes = body.indices.dropLast(2).filter { body[$0] == 0 && body[$0 + 1] == 0 && body[$0 + 2] <= 1 }
            #expect(startCodes.isEmpty)
            #expect(body.last == 0x80)
        }
    }
}
