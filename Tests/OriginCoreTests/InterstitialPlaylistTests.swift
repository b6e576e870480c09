import Foundation
import HLSPackaging
import HLSPlaylist
import HTTPPushInput
import LiveTimeline
import Logging
import Markers
import SharedBytes
import TestSource
import TestSupport
import Testing

@testable import OriginCore

/// A channel with `interstitials.assetList` set: its breaks in the live and DVR playlists of both renditions.
@Suite("Interstitials in a channel's live and DVR playlists", .offThePool)
struct InterstitialPlaylistTests {
    final class Harness {
        let clock = ManualClock()
        let origin: Origin
        var generators: [String: TestStreamGenerator] = [:]
        let renditions = ["180p", "360p"]

        init(maxListed: Int) throws {
            var channel = ChannelConfiguration(name: "ch", renditions: renditions.map { RenditionConfiguration(name: $0) })
            channel.window = .segments(20)
            channel.dvr = DVRConfiguration(hours: 1)
            channel.interstitials.asset = .list("https://ads.example/list?break={id}&dur={duration}")
            channel.interstitials.maxListed = maxListed
            var configuration = OriginConfiguration(channels: [channel])
            configuration.dataDirectory = NSTemporaryDirectory() + "interstitials-" + UUID().uuidString
            origin = try Origin(
                configuration: configuration, clock: clock,
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            for rendition in renditions {
                generators[rendition] = try TestStreamGenerator(
                    profile: TestSourceProfile.named(rendition)!, segmentDuration: 2)
            }
        }

        var channel: Channel { origin.channel(named: "ch")! }

        func slot() throws {
            clock.advance(seconds: 2)
            for rendition in renditions {
                let bytes = SharedBytes(generators[rendition]!.nextSegment().bytes)
                _ = try origin.ingest(channel: "ch", rendition: rendition, fileName: "s.ts", body: bytes)
            }
            origin.tick()
        }

        func lines(_ text: String) -> [String] {
            text.split(separator: "\n").map(String.init).filter { $0.hasPrefix("#EXT-X-DATERANGE:") }
        }

        func live(_ rendition: String) throws -> [String] {
            lines(String(decoding: try #require(channel.snapshot.renditions[rendition]?.playlist).array, as: UTF8.self))
        }

        var now: ProgramDateTime { ProgramDateTime(millisecondsSince1970: clock.nowMilliseconds()) }
    }

    @Test("each break is listed with its interstitial, identical in every rendition, live and DVR")
    func identicalInEveryRenditionAndBoundedInDVR() throws {
        let harness = try Harness(maxListed: 1)
        for _ in 0..<3 { try harness.slot() }
        let start = harness.now.millisecondsSince1970
        for (index, id) in ["b1", "b2"].enumerated() {
            _ = try harness.channel.addMarker(
                MarkerRequest(
                    id: id, startDate: harness.now.adding(milliseconds: Int64(index) * 4000 - 3000), duration: 2,
                    scte35: .out))
        }
        for _ in 0..<4 { try harness.slot() }
        let live = try harness.live("360p")
        #expect(try harness.live("180p") == live)
        let interstitials = live.filter { $0.contains("CLASS=\"com.apple.hls.interstitial\"") }
        #expect(interstitials.count == 2, "\(live)")
        #expect(interstitials.first?.contains("ID=\"b1/interstitial\"") == true)
        #expect(interstitials.first?.contains("X-ASSET-LIST=\"https://ads.example/list?break=b1&dur=2\"") == true)
        for line in live {
            #expect(throws: Never.self) { try MediaPlaylist.parse("#EXTM3U\n#EXT-X-TARGETDURATION:2\n\(line)\n") }
        }

        // The DVR playlist lists every break's own DATERANGE but only the newest interstitial (maxListed 1).
        let cache = DVRPlaylistCache()
        var dvr: [String: [String]] = [:]
        for rendition in harness.renditions {
            let answer = try harness.channel.dvrMediaPlaylist(
                DVRQuery(start: .absolute(milliseconds: start - 6000)), rendition: rendition, cache: cache)
            dvr[rendition] = harness.lines(answer.text)
        }
        #expect(dvr["180p"] == dvr["360p"])
        let listed = dvr["360p"] ?? []
        #expect(listed.filter { $0.contains("com.apple.hls.interstitial") }.map { $0.contains("b2/interstitial") } == [true])
        #expect(listed.filter { !$0.contains("com.apple.hls.interstitial") }.count == 2, "\(listed)")
    }
}
