import TestSource
import TestSupport
import Testing

@Suite("Slate segments", .offThePool)
struct SlateTests {
    /// The bytes from the first SPS NAL unit to the IDR slice: SPS and PPS with their start codes.
    static func parameterSets(_ accessUnit: [UInt8]) throws -> ArraySlice<UInt8> {
        let sps = try #require(accessUnit.indices.first { accessUnit[$0...].starts(with: [0, 0, 1, 0x67]) })
        let idr = try #require(accessUnit.indices.first { accessUnit[$0...].starts(with: [0, 0, 1, 0x65]) })
        return accessUnit[sps..<idr]
    }

    @Test(arguments: ["360p", "180p"])
    func slateHasTheStreamsCodecConfigurationAndTheCallersTimestamps(profile name: String) throws {
        let profile = try #require(TestSourceProfile.named(name))
        var generator = try TestStreamGenerator(profile: profile, segmentDuration: 2)
        let stream = try SegmentView(generator.nextSegment())
        let slatePackets = try TransportStreamReader.packets(generator.slateSegment(startPTS: 1_000_000, duration: 3))
        let slate = (
            packets: slatePackets,
            video: try TransportStreamReader.pesUnits(slatePackets, pid: 0x0100),
            audio: try TransportStreamReader.pesUnits(slatePackets, pid: 0x0101)
        )

        #expect(slate.packets[0].pid == 0 && slate.packets[1].pid == 0x1000)
        #expect(slate.packets[2].adaptation?.randomAccess == true)
        #expect(slate.video.count == 75)
        let expectedPTS: [Int64?] = (0..<75).map { 1_000_000 + Int64($0) * 3600 }
        #expect(slate.video.map(\.pts) == expectedPTS)
        let idrIndexes = slate.video.indices.filter { index in
            TransportStreamReader.nalUnitTypes(slate.video[index].payload).contains(5)
        }
        #expect(idrIndexes == [0, 25, 50])
        let firstStreamFrame = try #require(stream.video.first?.payload)
        let firstSlateFrame = try #require(slate.video.first?.payload)
        #expect(try Self.parameterSets(firstSlateFrame) == Self.parameterSets(firstStreamFrame))
        #expect(firstSlateFrame != firstStreamFrame)

        // Silence: ceil(270000 / 1920) = 141 identical 13-byte frames from the same start.
        let frames = try slate.audio.flatMap { try TransportStreamReader.adtsFrameLengths($0.payload) }
        #expect(frames == Array(repeating: 13, count: 141))
        #expect(slate.audio.first?.pts == 1_000_000)

        // It stands alone: counters from 0, no discontinuity flags, and the generator's stream goes on unchanged.
        #expect(slate.packets.allSatisfy { $0.adaptation?.discontinuity != true })
        #expect(slate.packets.prefix(3).allSatisfy { $0.continuityCounter == 0 })
        let next = generator.nextSegment()
        #expect(next.startPTS == stream.segment.startPTS + 180_000 && next.sequence == 1)
    }
}
