import HLSPackaging
import HLSPlaylist
import HTTPPushInput
import LiveTimeline
import Logging
import OriginCore
import SharedBytes
import TestSource
import Testing

/// A push channel on a manual clock, fed with real MPEG-TS segments from the test source generator.
final class Harness {
    let clock = ManualClock()
    let origin: Origin
    var generators: [String: TestStreamGenerator] = [:]
    let channelName: String

    init(
        renditions: [String] = ["360p", "180p"], window: WindowLength = .segments(6), autoCreate: Bool = true,
        targetDuration: Int? = nil, channelName: String = "ch"
    ) throws {
        self.channelName = channelName
        var channel = ChannelConfiguration(
            name: channelName, renditions: renditions.map { RenditionConfiguration(name: $0) })
        channel.window = window
        channel.targetDuration = targetDuration
        var ingest = IngestConfiguration(autoCreate: autoCreate)
        ingest.autoCreatedChannel.window = window
        origin = try Origin(
            configuration: OriginConfiguration(channels: [channel], ingest: ingest), clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        for rendition in renditions {
            generators[rendition] = try TestStreamGenerator(
                profile: TestSourceProfile.named(rendition)!, segmentDuration: 2)
        }
    }

    var channel: Channel { origin.channel(named: channelName)! }

    /// The next 2-second segment of a rendition's endless stream.
    func nextSegment(_ rendition: String) -> SharedBytes {
        SharedBytes(generators[rendition]!.nextSegment().bytes)
    }

    /// Lets 2 s pass, then pushes one segment to each of `renditions` (default: all) and ticks.
    @discardableResult
    func slot(pushing renditions: [String]? = nil) throws -> [IngestReceipt] {
        clock.advance(seconds: 2)
        var receipts: [IngestReceipt] = []
        for rendition in renditions ?? generators.keys.sorted() {
            receipts.append(try push(rendition, nextSegment(rendition)))
        }
        origin.tick()
        return receipts
    }

    /// Lets 2 s pass without a push to `dropped` (their generators still advance: the media is lost).
    func slot(dropping dropped: [String]) throws {
        for rendition in dropped { _ = generators[rendition]!.nextSegment() }
        try slot(pushing: generators.keys.sorted().filter { !dropped.contains($0) })
    }

    func push(_ rendition: String, _ bytes: SharedBytes, file: String = "seg.ts") throws(IngestError) -> IngestReceipt {
        try origin.ingest(channel: channelName, rendition: rendition, fileName: file, body: bytes)
    }

    /// The rendition's current media playlist, parsed.
    func playlist(_ rendition: String) throws -> MediaPlaylist {
        let bytes = try #require(channel.snapshot.renditions[rendition]?.playlist)
        return try MediaPlaylist.parse(String(decoding: bytes.array, as: UTF8.self))
    }

    func text(_ rendition: String) -> String? {
        channel.snapshot.renditions[rendition]?.playlist.map { String(decoding: $0.array, as: UTF8.self) }
    }
}
