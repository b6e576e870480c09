import HLSPackaging
import HLSPlaylist
import HTTPPushInput
import LiveTimeline
import Logging
import MediaProbe
import OriginCore
import SharedBytes

/// How the channel and streaming fuzz targets read their input: a first byte of settings, then records (segments)
/// separated by `SEG|`, at most `limit` of them.
public enum FuzzInput {
    public static let separator: [UInt8] = Array("SEG|".utf8)

    /// The records after the first `skip` bytes, split at each `SEG|`.
    public static func records(_ bytes: UnsafeBufferPointer<UInt8>, skip: Int, limit: Int = 6) -> [[UInt8]] {
        guard bytes.count > skip else { return [] }
        var records: [[UInt8]] = []
        var start = skip
        var index = skip
        while index + separator.count <= bytes.count, records.count < limit - 1 {
            if bytes[index] == separator[0], bytes[index + 1] == separator[1], bytes[index + 2] == separator[2],
                bytes[index + 3] == separator[3]
            {
                records.append(Array(bytes[start..<index]))
                index += separator.count
                start = index
            } else {
                index += 1
            }
        }
        records.append(Array(bytes[start...]))
        return records
    }

    /// Seconds the clock moves before record `index`: 0.5, 1, 2 or 4, two bits of `settings` per record.
    public static func step(_ settings: UInt8, record index: Int) -> Double {
        [0.5, 1, 2, 4][Int(settings >> (2 * (index % 4))) & 3]
    }
}

/// Deterministic piece lengths from a seed byte (a small linear congruential generator): how a body is split.
public struct Pieces {
    private var state: UInt32
    public init(seed: UInt8) { state = UInt32(seed) &* 2_654_435_761 &+ 1 }
    /// A length in 1...maximum.
    public mutating func next(maximum: Int) -> Int {
        state = state &* 1_103_515_245 &+ 12345
        return 1 + Int((state >> 8) % UInt32(max(maximum, 1)))
    }
}

/// An origin on a manual clock, no data directory (the durable store's file I/O would bring a run down to a few
/// hundred executions a second), fed through its public entry points as the HTTP handler feeds it.
public final class OriginUnderFuzz {
    public let clock = ManualClock()
    public let origin: Origin
    /// Channels whose target duration no configuration fixes: their first segment does.
    private let unconfigured: Set<String>

    public init(channels: [ChannelConfiguration]) {
        unconfigured = Set(channels.filter { $0.targetDuration == nil && $0.lowLatency == nil }.map(\.name))
        do {
            origin = try Origin(
                configuration: OriginConfiguration(
                    channels: channels, ingest: IngestConfiguration(autoCreate: false, maxSegmentBytes: 1 << 20)),
                clock: clock, logger: Logger(label: "fuzz") { _ in SwiftLogNoOpLogHandler() })
        } catch {
            fatalError("fuzz origin set-up failed: \(error)")
        }
        clock.advance(seconds: 10)
    }

    /// Two channels for a probe: `a` on the origin's own timeline, `b` on a shared timeline (the anchor arithmetic
    /// of a redundancy group, on media times the fuzzer chooses).
    public convenience init(renditions: [String]) {
        let a = ChannelConfiguration(
            name: "a", renditions: renditions.map { RenditionConfiguration(name: $0) }, window: .segments(4))
        var b = a
        b.name = "b"
        b.sharedTimeline = SharedTimeline()
        self.init(channels: [a, b])
    }

    /// Pushes a whole file; the refusal, if any (a refusal is fine, a crash is not).
    @discardableResult
    public func push(channel: String, rendition: String, file: String, _ bytes: [UInt8]) -> IngestError? {
        do {
            _ = try origin.ingest(channel: channel, rendition: rendition, fileName: file, body: SharedBytes(bytes))
            return nil
        } catch {
            return error
        }
    }

    /// Lets `seconds` pass in steps of 0.25 s, ticking the ingest loop after each (slots close, GAPs, parts).
    public func advance(seconds: Double) {
        var left = seconds
        while left > 0 {
            clock.advance(seconds: min(left, 0.25))
            origin.tick()
            left -= 0.25
        }
    }

    /// What every published playlist must be, whatever was pushed: text that parses (the multivariant playlist
    /// too); no EXTINF over EXT-X-TARGETDURATION + 0.5 s (HLS-RULES 7: round(EXTINF) <= TD, no segment over TD +
    /// 0.5 s); and on a channel whose first segment fixed it, a target duration of at most
    /// `ChannelState.maximumSegmentSeconds` (30 s).
    public func check() {
        for name in ["a", "b", "ll"] {
            guard let channel = origin.channel(named: name) else { continue }
            if let bytes = channel.snapshot.multivariantPlaylist {
                let text = String(decoding: bytes.array, as: UTF8.self)
                do {
                    _ = try MultivariantPlaylist.parse(text)
                } catch {
                    fatalError("\(name): the published multivariant playlist does not parse: \(error)\n\(text)")
                }
            }
            for (rendition, snapshot) in channel.snapshot.renditions {
                guard let bytes = snapshot.playlist else { continue }
                let text = String(decoding: bytes.array, as: UTF8.self)
                let playlist: MediaPlaylist
                do {
                    playlist = try MediaPlaylist.parse(text)
                } catch {
                    fatalError("\(name)/\(rendition): the published playlist does not parse: \(error)\n\(text)")
                }
                if unconfigured.contains(name), playlist.targetDuration > 30 {
                    fatalError("\(name)/\(rendition): EXT-X-TARGETDURATION \(playlist.targetDuration) > 30 s\n\(text)")
                }
                for segment in playlist.segments where segment.duration > Double(playlist.targetDuration) + 0.5 {
                    fatalError(
                        "\(name)/\(rendition): EXTINF \(segment.duration) of \(segment.uri) is over "
                            + "EXT-X-TARGETDURATION \(playlist.targetDuration) + 0.5 s\n\(text)")
                }
            }
        }
    }
}
