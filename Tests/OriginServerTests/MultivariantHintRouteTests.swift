import Foundation
import HLSPackaging
import HLSPlaylist
import LiveTimeline
import OriginCore
import TestSource
import TestSupport
import Testing

/// `PUT /ingest/{channel}/master.m3u8` over real HTTP, with the issue's demuxed push: video-only `hi` and `lo`,
/// audio-only `en` and `fr`, made from the test source's segments by dropping the other elementary stream.
@Suite("Multivariant hint route and demuxed pushes", .offThePool)
struct MultivariantHintRouteTests {
    static let hint = """
        #EXTM3U
        #EXT-X-VERSION:3
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="group_aud",NAME="audio_2",DEFAULT=YES,LANGUAGE="en",URI="en/index.m3u8"
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="group_aud",NAME="audio_3",DEFAULT=NO,LANGUAGE="fr",URI="fr/index.m3u8"
        #EXT-X-STREAM-INF:BANDWIDTH=75900,RESOLUTION=640x360,CODECS="avc1.42c01e,mp4a.40.2",AUDIO="group_aud"
        hi/index.m3u8

        #EXT-X-STREAM-INF:BANDWIDTH=75900,RESOLUTION=320x180,CODECS="avc1.42c00d,mp4a.40.2",AUDIO="group_aud"
        lo/index.m3u8

        """

    /// Pushes `slots` slots of the demuxed channel `demux` (auto-created), the hint after the first one.
    static func pushDemuxed(_ stack: OriginTestStack, slots: Int, hint: String? = Self.hint) throws {
        var big = try TestStreamGenerator(profile: TestSourceProfile.named("360p")!, segmentDuration: 2)
        var small = try TestStreamGenerator(profile: TestSourceProfile.named("180p")!, segmentDuration: 2)
        for slot in 0..<slots {
            stack.clock.advance(seconds: 2)
            let hi = big.nextSegment().bytes
            let lo = small.nextSegment().bytes
            let pushes = [
                ("hi", Demuxed.keeping(.video, of: hi)), ("lo", Demuxed.keeping(.video, of: lo)),
                ("en", Demuxed.keeping(.audio, of: hi)), ("fr", Demuxed.keeping(.audio, of: lo)),
            ]
            for (rendition, bytes) in pushes {
                let response = try stack.push(rendition, bytes, file: "index\(slot).ts", channel: "demux")
                #expect(response.status == 201, "\(rendition): \(response.text)")
            }
            if slot == 0, let hint {
                let response = try stack.request("PUT", "/ingest/demux/master.m3u8", body: Array(hint.utf8))
                #expect(response.status == 200, "\(response.text)")
            }
            stack.origin.tick()
        }
    }

    @Test func demuxedPushWithTheHintListsAnAudioGroupEveryVariantUses() throws {
        let stack = try OriginTestStack()
        try Self.pushDemuxed(stack, slots: 3)
        let response = try stack.get("/live/demux/index.m3u8")
        #expect(response.status == 200)
        let playlist = try MultivariantPlaylist.parse(response.text)
        #expect(playlist.validate().isEmpty, "\(playlist.validate())")
        #expect(
            playlist.renditions.map { "\($0.type.rawValue) \($0.groupID) \($0.name) \($0.language ?? "-")" } == [
                "AUDIO group_aud English en", "AUDIO group_aud Français fr",
            ])
        #expect(playlist.renditions.map(\.isDefault) == [true, false])
        #expect(playlist.renditions.allSatisfy { $0.channels == "2" })
        #expect(playlist.variants.map(\.uri) == ["hi/index.m3u8", "lo/index.m3u8"])
        #expect(playlist.variants.allSatisfy { $0.audioGroup == "group_aud" })
        #expect(playlist.variants.allSatisfy { $0.closedCaptions == ClosedCaptionsReference.none })
        #expect(playlist.variants[0].codecs == ["avc1.4d401e", "mp4a.40.2"])
        #expect(playlist.variants[0].resolution == Resolution(width: 640, height: 360))
        let status = try #require(stack.origin.channel(named: "demux")?.status())
        let peaks = Dictionary(uniqueKeysWithValues: status.renditions.map { ($0.name, $0.peakBitrate) })
        #expect(playlist.variants[0].bandwidth == peaks["hi"]! + max(peaks["en"]!, peaks["fr"]!))
        #expect(status.multivariantHints?.read == 1)
    }

    @Test func withoutAHintAudioStillJoinsTheDefaultGroup() throws {
        let stack = try OriginTestStack()
        try Self.pushDemuxed(stack, slots: 2, hint: nil)
        let playlist = try MultivariantPlaylist.parse(try stack.get("/live/demux/index.m3u8").text)
        #expect(playlist.validate().isEmpty)
        #expect(playlist.renditions.map(\.groupID) == ["audio", "audio"])
        #expect(playlist.renditions.map(\.name) == ["en", "fr"])
        #expect(playlist.variants.map(\.audioGroup) == ["audio", "audio"])
    }

    @Test func aHintCreatesItsChannelAndWaitsForTheRenditions() throws {
        let stack = try OriginTestStack()
        let response = try stack.request("PUT", "/ingest/early/master.m3u8", body: Array(Self.hint.utf8))
        #expect(response.status == 200)
        #expect(response.text.contains("multivariant hint read (2 variants, 2 audio, 0 subtitle renditions)"))
        let channel = try #require(stack.origin.channel(named: "early"))
        #expect(channel.renditionNames.isEmpty)
        #expect(channel.status().multivariantHints?.members == ["en", "fr"])
    }

    @Test(
        "an invalid hint gets 400 with the reason and changes nothing",
        arguments: [
            ("URI=\"en/index.m3u8\"", "URI=\"../other/x.m3u8\"", "is not {rendition}/{file}.m3u8"),
            ("DEFAULT=NO", "DEFAULT=YES,AUTOSELECT=YES", "two DEFAULT=YES in GROUP-ID \"group_aud\""),
            ("LANGUAGE=\"fr\"", "LANGUAGE=\"english!\"", "is not an RFC 5646 tag"),
            ("NAME=\"audio_3\"", "NAME=\"audio_2\"", "NAME \"audio_2\" appears twice"),
        ])
    func invalidHintsAreRefused(original: String, replacement: String, reason: String) throws {
        let stack = try OriginTestStack()
        try Self.pushDemuxed(stack, slots: 2)
        let before = try stack.get("/live/demux/index.m3u8").body
        var text = Self.hint
        let range = try #require(text.range(of: original, options: .backwards))
        text.replaceSubrange(range, with: replacement)
        let response = try stack.request("PUT", "/ingest/demux/master.m3u8", body: Array(text.utf8))
        #expect(response.status == 400)
        #expect(response.text.hasPrefix("invalid multivariant hint: "))
        #expect(response.text.contains(reason), "\(response.text)")
        #expect(try stack.get("/live/demux/index.m3u8").body == before)
        #expect(stack.origin.channel(named: "demux")?.status().multivariantHints?.refused == 1)
    }

    @Test func otherDepthTwoPathsStay404AndHugeHintsAre400() throws {
        let stack = try OriginTestStack()
        #expect(try stack.request("PUT", "/ingest/ch/master.ts", body: [1, 2, 3]).status == 404)
        let huge = Array((Self.hint + String(repeating: "#\n", count: 40_000)).utf8)
        let response = try stack.request("PUT", "/ingest/ch/master.m3u8", body: huge)
        #expect(response.status == 400)
        #expect(response.text.contains("larger than 65536 bytes"))
        #expect(try stack.request("PUT", "/ingest/bad.name/master.m3u8", body: Array(Self.hint.utf8)).status == 400)
    }
}

/// One elementary stream of a test-source MPEG-TS segment on its own, as a demuxing encoder pushes it: the other
/// stream's packets dropped and the PMT rewritten to list only the kept one.
enum Demuxed {
    enum Kind { case video, audio }
    static let pmtPID: UInt16 = 0x1000
    static let videoPID: UInt16 = 0x0100
    static let audioPID: UInt16 = 0x0101

    static func keeping(_ kind: Kind, of segment: [UInt8]) -> [UInt8] {
        let (keep, drop, streamType): (UInt16, UInt16, UInt8) =
            kind == .video ? (videoPID, audioPID, 0x1B) : (audioPID, videoPID, 0x0F)
        var output: [UInt8] = []
        output.reserveCapacity(segment.count)
        for start in stride(from: 0, to: segment.count - 187, by: 188) {
            let packet = Array(segment[start..<start + 188])
            let pid = (UInt16(packet[1] & 0x1F) << 8) | UInt16(packet[2])
            if pid == drop { continue }
            if pid == pmtPID {
                output += pmtPacket(continuity: packet[3] & 0x0F, pcrPID: keep, streamType: streamType, pid: keep)
            } else {
                output += packet
            }
        }
        return output
    }

    static func pmtPacket(continuity: UInt8, pcrPID: UInt16, streamType: UInt8, pid: UInt16) -> [UInt8] {
        var section: [UInt8] = [0x02, 0xB0, 18, 0x00, 0x01, 0xC1, 0x00, 0x00]
        section += [0xE0 | UInt8(pcrPID >> 8), UInt8(pcrPID & 0xFF), 0xF0, 0x00]
        section += [streamType, 0xE0 | UInt8(pid >> 8), UInt8(pid & 0xFF), 0xF0, 0x00]
        let crc = TransportStreamReader.crc(section)
        section += [UInt8(crc >> 24), UInt8((crc >> 16) & 0xFF), UInt8((crc >> 8) & 0xFF), UInt8(crc & 0xFF)]
        var packet: [UInt8] = [0x47, 0x40 | UInt8(pmtPID >> 8), UInt8(pmtPID & 0xFF), 0x10 | continuity, 0x00]
        packet += section
        packet += [UInt8](repeating: 0xFF, count: 188 - packet.count)
        return packet
    }
}
