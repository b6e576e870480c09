import HLSPackaging
import LiveTimeline
import MicroHTTPD
import OriginCore
import SharedBytes
import Synchronization

/// The server's cache of what `/live` answers are made of, keyed by what the core publishes: per channel, the
/// prepared answers of the current multivariant playlist (by channel snapshot version), of each rendition's current
/// media playlist (by rendition playlist version) and of its segments (by MSN) and parts (by MSN and index), with
/// the gzip forms of the playlists. Built on first use, outside the lock; shared by all threads (`LiveAnswerCache` keeps per-thread
/// copies in front of it).
///
/// A rendition's segments are pruned to the entries of its snapshot whenever a request for one of its playlists or
/// segments (or the channel's multivariant playlist) brings a newer rendition version than the last prune, so a
/// segment's prepared answer is freed soon after it leaves retention: at the next such request, which players make
/// every segment duration; and the service prunes every channel to its latest snapshot once a second
/// (`prune(to:)`), so nothing outlives retention by much when no one asks.
final class LiveResponseStore: Sendable {
    private let channels = Mutex<[String: ChannelResponses]>([:])

    init() {}

    /// The prepared answers of `snapshot`'s multivariant playlist (`bytes`).
    func multivariant(of snapshot: ChannelSnapshot, bytes: SharedBytes) -> PlaylistResponses {
        let modified = snapshot.multivariantModifiedMilliseconds
        return channels.withLock { channels in
            for rendition in snapshot.renditions.values {
                channels[snapshot.name]?.renditions[rendition.name]?.prune(to: rendition)
            }
            let current = channels[snapshot.name]?.multivariant
            if let current, current.matches(bytes, modifiedMilliseconds: modified) { return current }
            let made = PlaylistResponses(bytes: bytes, order: snapshot.version, modifiedMilliseconds: modified)
            if current.map({ $0.order < made.order }) ?? true {
                channels[snapshot.name, default: .init()].multivariant = made
            }
            return made
        }
    }

    /// The prepared answers of `rendition`'s media playlist (`bytes`) in channel `channel`.
    func playlist(channel: String, of rendition: RenditionSnapshot, bytes: SharedBytes) -> PlaylistResponses {
        let modified = rendition.modifiedMilliseconds
        return channels.withLock { channels in
            channels[channel]?.renditions[rendition.name]?.prune(to: rendition)
            let current = channels[channel]?.renditions[rendition.name]?.playlist
            if let current, current.matches(bytes, modifiedMilliseconds: modified) { return current }
            let made = PlaylistResponses(bytes: bytes, order: rendition.version, modifiedMilliseconds: modified)
            if current.map({ $0.order < made.order }) ?? true {
                channels[channel, default: .init()].renditions[rendition.name, default: .init()].playlist = made
            }
            return made
        }
    }

    /// The prepared answers of `rendition`'s I-frame playlist (`bytes`) in channel `channel`.
    func iFramePlaylist(channel: String, of rendition: RenditionSnapshot, bytes: SharedBytes) -> PlaylistResponses {
        let modified = rendition.modifiedMilliseconds
        return channels.withLock { channels in
            let current = channels[channel]?.renditions[rendition.name]?.iFramePlaylist
            if let current, current.matches(bytes, modifiedMilliseconds: modified) { return current }
            let made = PlaylistResponses(bytes: bytes, order: rendition.version, modifiedMilliseconds: modified)
            if current.map({ $0.order < made.order }) ?? true {
                channels[channel, default: .init()].renditions[rendition.name, default: .init()].iFramePlaylist = made
            }
            return made
        }
    }

    /// The prepared answer of segment `msn` (`bytes`) of `rendition`, made by `make` if there is none yet. Keyed by
    /// MSN only: a segment's bytes never change, so a publish that leaves it retained leaves its answer in place.
    func segment(
        channel: String, of rendition: RenditionSnapshot, msn: UInt64, bytes: SharedBytes,
        make: () -> PreparedResponse
    ) -> PreparedResponse {
        prepared(channel: channel, of: rendition, table: \.segments, key: msn, bytes: bytes, make: make)
    }

    /// The prepared answer of part `position` (`bytes`) of `rendition`, made by `make` if there is none yet; kept
    /// while the rendition's snapshot still answers the part's URL.
    func part(
        channel: String, of rendition: RenditionSnapshot, position: PartPosition, bytes: SharedBytes,
        make: () -> PreparedResponse
    ) -> PreparedResponse {
        prepared(channel: channel, of: rendition, table: \.parts, key: position, bytes: bytes, make: make)
    }

    private func prepared<Key: Hashable>(
        channel: String, of rendition: RenditionSnapshot,
        table: WritableKeyPath<RenditionResponses, [Key: PreparedSegment]>, key: Key, bytes: SharedBytes,
        make: () -> PreparedResponse
    ) -> PreparedResponse {
        let found = channels.withLock { channels -> PreparedResponse? in
            channels[channel, default: .init()].renditions[rendition.name, default: .init()].prune(to: rendition)
            guard let prepared = channels[channel]?.renditions[rendition.name]?[keyPath: table][key],
                prepared.bytes === bytes
            else { return nil }
            return prepared.response
        }
        if let found { return found }
        let made = PreparedSegment(bytes: bytes, response: make())
        return channels.withLock { channels in
            // Read and write in place: a copy of the rendition's table would copy every entry.
            guard let prunedAtVersion = channels[channel]?.renditions[rendition.name]?.prunedAtVersion,
                // A request holding an older snapshot does not bring back what a prune removed.
                rendition.version >= prunedAtVersion
            else { return made.response }
            if let raced = channels[channel]?.renditions[rendition.name]?[keyPath: table][key], raced.bytes === bytes {
                return raced.response
            }
            channels[channel]?.renditions[rendition.name]?[keyPath: table][key] = made
            return made.response
        }
    }

    /// Drops the segment answers that the renditions of `snapshot` (newer than their last prune) no longer list or
    /// retain.
    func prune(to snapshot: ChannelSnapshot) {
        channels.withLock { channels in
            guard channels[snapshot.name] != nil else { return }
            for rendition in snapshot.renditions.values {
                channels[snapshot.name]?.renditions[rendition.name]?.prune(to: rendition)
            }
        }
    }

    /// Segment and part answers held and the bytes of their bodies (tests check that they follow retention).
    var segmentUsage: (count: Int, bodyBytes: Int) {
        channels.withLock { channels in
            var count = 0
            var bodyBytes = 0
            for channel in channels.values {
                for rendition in channel.renditions.values {
                    count += rendition.segments.count + rendition.parts.count
                    bodyBytes += rendition.segments.values.reduce(0) { $0 + $1.response.response.body.count }
                    bodyBytes += rendition.parts.values.reduce(0) { $0 + $1.response.response.body.count }
                }
            }
            return (count, bodyBytes)
        }
    }

    private struct ChannelResponses {
        var multivariant: PlaylistResponses?
        var renditions: [String: RenditionResponses] = [:]
    }

    private struct RenditionResponses {
        var playlist: PlaylistResponses?
        var iFramePlaylist: PlaylistResponses?
        var segments: [UInt64: PreparedSegment] = [:]
        var parts: [PartPosition: PreparedSegment] = [:]
        /// The rendition version the segments and parts were last pruned to.
        var prunedAtVersion: UInt64 = 0

        /// Drops the segments and parts that `rendition` (if newer than the last prune) no longer answers.
        mutating func prune(to rendition: RenditionSnapshot) {
            guard rendition.version > prunedAtVersion else { return }
            prunedAtVersion = rendition.version
            if !segments.isEmpty {
                segments = segments.filter { msn, prepared in rendition.entry(msn: msn)?.bytes === prepared.bytes }
            }
            if !parts.isEmpty {
                parts = parts.filter { position, prepared in
                    rendition.lowLatency?.part(position)?.bytes === prepared.bytes
                }
            }
        }
    }

    private struct PreparedSegment {
        let bytes: SharedBytes
        let response: PreparedResponse
    }
}

/// The answers of one playlist version: the prepared plain and gzip answers and the gzip form of the bytes, each
/// made on first use (two threads may both make one; one result is kept).
final class PlaylistResponses: Sendable {
    let bytes: SharedBytes
    /// Publishing order of the version (a newer one replaces this in the store, an older one does not).
    let order: UInt64
    let modifiedMilliseconds: Int64
    private let plain = AtomicLazyReference<PreparedResponse>()
    private let gzip = AtomicLazyReference<PreparedResponse>()
    private let compressed = AtomicLazyReference<SharedBytes>()

    init(bytes: SharedBytes, order: UInt64, modifiedMilliseconds: Int64) {
        self.bytes = bytes
        self.order = order
        self.modifiedMilliseconds = modifiedMilliseconds
    }

    func matches(_ bytes: SharedBytes, modifiedMilliseconds: Int64) -> Bool {
        self.bytes === bytes && self.modifiedMilliseconds == modifiedMilliseconds
    }

    /// The prepared answer to a plain GET, gzipped or not.
    func prepared(gzip: Bool, make: () -> PreparedResponse) -> PreparedResponse {
        if gzip { return self.gzip.load() ?? self.gzip.storeIfNil(make()) }
        return plain.load() ?? plain.storeIfNil(make())
    }

    /// The prepared answer of a released blocking reload held `heldMilliseconds` (already rounded: CMSD `ht`), by
    /// gzip and held time, made on first use; nil past the longest held time kept (`HeldForms.slots`: the caller
    /// answers without the held time). Takes no lock: every waiter a publish releases comes here, at once.
    func preparedHeld(gzip: Bool, heldMilliseconds: Int64, make: () -> PreparedResponse) -> PreparedResponse? {
        guard let slot = HeldForms.slot(heldMilliseconds) else { return nil }
        let forms = held.load() ?? held.storeIfNil(HeldForms())
        return gzip ? forms.gzip[slot].load() ?? forms.gzip[slot].storeIfNil(make())
            : forms.plain[slot].load() ?? forms.plain[slot].storeIfNil(make())
    }

    /// Made at the first release of a waiter of this version (most versions of most renditions release none).
    private let held = AtomicLazyReference<HeldForms>()

    /// One slot per held time `CMSDHeaders.roundedHeldTime` gives below 100 s (0 ... 99 ms, then two significant
    /// digits: 100, 110 ... 99,000 ms), plain and gzip; a longer hold answers without `ht`.
    final class HeldForms: Sendable {
        static let slots = 370
        let plain = InlineArray<370, AtomicLazyReference<PreparedResponse>> { _ in AtomicLazyReference() }
        let gzip = InlineArray<370, AtomicLazyReference<PreparedResponse>> { _ in AtomicLazyReference() }

        /// The slot of a rounded held time; nil past the last one (or for a time `roundedHeldTime` does not give).
        static func slot(_ rounded: Int64) -> Int? {
            guard rounded >= 0 else { return nil }
            guard rounded >= 100 else { return Int(rounded) }
            var mantissa = rounded
            var decade = 0
            while mantissa >= 100 {
                guard mantissa % 10 == 0 else { return nil }
                mantissa /= 10
                decade += 1
            }
            let slot = 100 + 90 * (decade - 1) + Int(mantissa - 10)
            return slot < slots ? slot : nil
        }
    }

    /// The gzip form of the bytes, or nil if zlib failed.
    var gzipped: SharedBytes? {
        let form = compressed.load() ?? compressed.storeIfNil(Gzip.compress(bytes) ?? bytes)
        return form === bytes ? nil : form
    }
}
