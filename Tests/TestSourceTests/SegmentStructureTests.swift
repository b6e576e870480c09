import TestSource
import TestSupport
import Testing

@Suite("Segment structure", .offThePool)
struct SegmentStructureTests {
    /// The PAT, byte for byte: program 1 on PMT PID 0x1000, transport_stream_id 1 (the same PAT ffmpeg writes).
    static let expectedPAT: [UInt8] = [
        0x00, 0xB0, 0x0D, 0x00, 0x01, 0xC1, 0x00, 0x00, 0x00, 0x01, 0xF0, 0x00, 0x2A, 0xB1, 0x04, 0xB2,
    ]

    @Test(arguments: ["360p", "180p"])
    func everySegmentOpensWithPATPMTAndAnIDR(profile: String) throws {
        let segments = try TestStreams.segments(profile: profile, duration: 2, count: 4)
        for view in segments {
            let packets = view.packets
            try #require(packets.count > 3)
            #expect(packets[0].pid == 0x0000)
            #expect(try TransportStreamReader.section(in: packets[0]) == Self.expectedPAT)
            #expect(packets[1].pid == 0x1000)
            let pmt = try TransportStreamReader.programMap(TransportStreamReader.section(in: packets[1]))
            #expect(pmt.pcrPID == 0x0100)
            #expect(pmt.streams.map(\.0) == [0x1B, 0x0F])
            #expect(pmt.streams.map(\.1) == [0x0100, 0x0101])
            #expect(packets.filter { $0.pid == 0x0000 || $0.pid == 0x1000 }.count == 2)
            #expect(Set(packets.map(\.pid)) == [0x0000, 0x1000, 0x0100, 0x0101])

            let opening = packets[2]
            #expect(opening.pid == 0x0100 && opening.payloadUnitStart)
            #expect(opening.adaptation?.randomAccess == true)
            #expect(opening.adaptation?.pcr != nil)
            let firstFrame = try #require(view.video.first)
            #expect(Array(TransportStreamReader.nalUnitTypes(firstFrame.payload).prefix(4)) == [9, 7, 8, 5])
            #expect(firstFrame.pts == view.segment.startPTS)
        }
    }

    @Test func framesPESHeadersAndKeyframes() throws {
        let view = try #require(try TestStreams.segments(profile: "360p", duration: 3, count: 1).first)
        #expect(view.segment.durationTicks == 270_000)
        #expect(view.segment.duration == 3.0)
        #expect(view.segment.sequence == 0)
        #expect(view.segment.startsTimeline)
        #expect(view.segment.startPTS == 126_000)
        #expect(view.video.count == 75)
        for (index, frame) in view.video.enumerated() {
            let types = TransportStreamReader.nalUnitTypes(frame.payload)
            #expect(frame.streamID == 0xE0 && frame.declaredLength == 0 && frame.dts == nil)
            #expect(types.first == 9)
            #expect(types.contains(5) == (index % 25 == 0))
            #expect(frame.firstPacket.adaptation?.randomAccess == (index % 25 == 0))
            #expect(frame.firstPacket.adaptation?.pcr != nil)
        }
        // Audio frames whose PTS falls in [start, start + 3 s): ceil(270000 / 1920) = 141, 4 per PES.
        let audioFrames = try view.audio.map { try TransportStreamReader.adtsFrameLengths($0.payload).count }
        #expect(audioFrames.reduce(0, +) == 141)
        #expect(audioFrames.dropLast().allSatisfy { $0 == 4 })
        #expect(view.audio.allSatisfy { $0.streamID == 0xC0 && $0.declaredLength > 0 && $0.dts == nil })
        #expect(view.audio.first?.pts == 126_000)
        // Only the first packet of a frame carries an adaptation field with flags; the rest only stuffing.
        for packet in view.packets where !packet.payloadUnitStart {
            #expect(packet.adaptation?.pcr == nil && packet.adaptation?.randomAccess != true)
        }
    }

    @Test func videoAndAudioAreTheFixturesByteForByte() throws {
        // Eight 1-second segments: the 4 s video loop twice, the 1.6 s audio loop five times.
        let segments = try TestStreams.segments(profile: "180p", duration: 1, count: 8)
        let video = segments.flatMap { $0.video.flatMap(\.payload) }
        let loop = try TestStreams.fixture("video-180p.h264")
        #expect(video == loop + loop)

        let audio = segments.flatMap { $0.audio.flatMap(\.payload) }
        let audioLoop = try TestStreams.fixture("audio-loop.aac")
        let loopFrames = try TransportStreamReader.adtsFrameLengths(audioLoop).count
        #expect(loopFrames == 75)
        // 8 s of audio: ceil(720000 / 1920) = 375 frames = exactly five loops.
        #expect(audio == Array([[UInt8]](repeating: audioLoop, count: 5).joined()))
    }

    @Test func interleavesAudioAndVideoInTimestampOrder() throws {
        let view = try #require(try TestStreams.segments(profile: "360p", duration: 2, count: 1).first)
        let starts = (view.video + view.audio).sorted { $0.firstPacket.index < $1.firstPacket.index }
        let timestamps = starts.compactMap(\.pts)
        #expect(timestamps.count == starts.count)
        #expect(timestamps == timestamps.sorted())
    }
}
