public import HLSPackaging
import HLSPlaylist
import LiveTimeline
import Markers
import MediaProbe
import Persistence
import SharedBytes
import Synchronization

/// Rendered DVR playlist blocks of every channel, least recently used out once over a byte budget.
public final class DVRPlaylistCache: Sendable {
    private let cache: Mutex<DVRBlockCache>

    /// A cache holding at most `capacityBytes` of playlist text. Default: 64 MiB.
    public init(capacityBytes: Int = 64 << 20) {
        cache = Mutex(DVRBlockCache(capacityBytes: capacityBytes))
    }

    /// Bytes of text held, hits and misses so far.
    public var statistics: (bytes: Int, hits: Int, misses: Int) {
        cache.withLock { ($0.bytes, $0.hits, $0.misses) }
    }

    func withCache<Result>(_ body: (inout DVRBlockCache) -> Result) -> Result {
        cache.withLock { body(&$0) }
    }
}

/// A DVR media playlist and how long it may be cached.
public struct DVRPlaylistAnswer: Sendable {
    public var text: String
    /// Cache-Control max-age: TD/2 while the playlist still grows or slides, up to a day once it is closed (never
    /// beyond the time its first segment leaves the DVR window).
    public var maxAge: Int
    /// End of the newest slot listed, ms since the epoch (Last-Modified).
    public var modifiedMilliseconds: Int64
}

/// A channel's store as the DVR renderer reads it; the window is read once, when the request starts.
struct StoreDVRRecords: DVRRecordSource {
    let store: ChannelStore
    let range: (oldest: SlotRecord, newest: SlotRecord)?

    init(store: ChannelStore) {
        self.store = store
        range = try? store.slotRange()
    }

    var oldestSlot: SlotRecord? { range?.oldest }
    var newestSlot: SlotRecord? { range?.newest }

    func slot(endingAfter milliseconds: Int64) -> SlotRecord? {
        guard let range, milliseconds < range.newest.endMilliseconds else { return nil }
        if milliseconds < range.oldest.programDateTimeMilliseconds { return range.oldest }
        if let slot = try? store.slot(containing: milliseconds) { return slot }
        // Between two slots (MSNs skipped at a restart): the next slot, probed a second at a time.
        var probe = milliseconds
        while probe < range.newest.programDateTimeMilliseconds {
            probe += 1000
            if let slot = try? store.slot(containing: probe) { return slot }
        }
        return range.newest
    }

    func slots(from: UInt64, through: UInt64) -> [SlotRecord] {
        (try? store.slots(from: from, through: through)) ?? []
    }

    func segments(rendition: String, from: UInt64, through: UInt64) -> [UInt64: SegmentRecord] {
        (try? store.segments(rendition: rendition, from: from, through: through)) ?? [:]
    }
}

extension Channel {
    /// A rendition's DVR playlist for `query` (start-over, sliding window, catch-up or event), rendered from the
    /// store and assembled from `cache`'s blocks.
    /// - Throws: `.malformed` for `end <= start`; `.outsideWindow` for a start outside what the store holds, an
    ///   unknown rendition or a channel without a store.
    public func dvrMediaPlaylist(
        _ query: DVRQuery, rendition: String, cache: DVRPlaylistCache
    ) throws(DVRQueryError) -> DVRPlaylistAnswer {
        let source = try dvrRecords()
        guard let live = snapshot.renditions[rendition] else {
            throw DVRQueryError(kind: .outsideWindow, message: "unknown rendition '\(rendition)' of channel '\(name)'")
        }
        let now = clock.nowMilliseconds()
        let interval = try query.resolve(
            in: source.window, nowMilliseconds: now, eventGraceMilliseconds: Self.eventGrace(live.targetDuration))
        guard let selection = interval.selection(in: source) else {
            throw DVRQueryError(kind: .outsideWindow, message: "start: the channel has no DVR window yet")
        }
        // The live playlist says whether every segment starts with a keyframe; the DVR playlist says the same.
        let independent = live.playlist?.withUnsafeBytes { String(decoding: $0.prefix(256), as: UTF8.self) }
            .contains("#EXT-X-INDEPENDENT-SEGMENTS\n")
        var options = DVRPlaylistOptions(
            rendition: name + "/" + rendition,
            container: live.entries.last?.container ?? .mpegTS, targetDuration: live.targetDuration,
            independentSegments: independent ?? false, cueTags: configuration.cueTagOptions)
        let book = markers.book
        // Interstitials: a bounded number before the playlist's end, so a long start-over is not thousands of them.
        let selectionEnd = source.slots(from: selection.msns.upperBound, through: selection.msns.upperBound).first
        options.interstitials = configuration.boundedInterstitials(
            book, edgeMilliseconds: selectionEnd?.endMilliseconds ?? now)
        // Encrypted channels: EXT-X-KEY lines follow the key schedule and the key URIs; blocks depend on both.
        let encryption = snapshot.encryption
        // Protected channels: the token suffix and EXT-X-DEFINE as in the live playlists (segments need the token).
        let decoration = ChannelState.playbackDecorated(
            encryption?.decoration(channel: name) ?? .none, playback: configuration.playback)
        var hasher = Hasher()
        hasher.combine(book)
        hasher.combine(encryption?.schedule)
        hasher.combine(encryption?.keyURITemplate)
        hasher.combine(decoration.uriSuffix)
        hasher.combine(decoration.definitions)
        let revision = hasher.finalize()
        let text = cache.withCache { blocks in
            DVRPlaylist.render(
                selection: selection, options: options, source: RenamedSource(source: source, rendition: rendition),
                markers: book, revision: revision, cache: &blocks, decoration: decoration)
        }
        let newestEnd = source.newestSlot?.endMilliseconds ?? now
        var maxAge = max(1, live.targetDuration / 2)
        if selection.endList, interval.kind == .catchUp || interval.kind == .event,
            let first = source.slots(from: selection.msns.lowerBound, through: selection.msns.lowerBound).first
        {
            let leaves = configuration.dvr.map { first.programDateTimeMilliseconds + $0.milliseconds } ?? now
            maxAge = Int(max(Int64(maxAge), min(86_400, (leaves - now) / 1000)))
        }
        return DVRPlaylistAnswer(text: text, maxAge: maxAge, modifiedMilliseconds: newestEnd)
    }

    /// The multivariant playlist with the query resolved once into absolute times on every variant URI, so every
    /// variant starts (and ends) at the same point.
    /// - Throws: as ``dvrMediaPlaylist(_:rendition:cache:)``, and `.outsideWindow` before the channel has media.
    public func dvrMultivariantPlaylist(_ query: DVRQuery) throws(DVRQueryError) -> String {
        let source = try dvrRecords()
        let interval = try query.resolve(
            in: source.window, nowMilliseconds: clock.nowMilliseconds(),
            eventGraceMilliseconds: Self.eventGrace(snapshot.renditions.values.first?.targetDuration ?? 2))
        guard let multivariant = snapshot.multivariantPlaylist else {
            throw DVRQueryError(kind: .outsideWindow, message: "channel '\(name)' has no media yet")
        }
        var text = multivariant.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        if snapshot.encryption != nil {
            // The live SESSION-KEY names the live edge's key period, which a time-shifted playlist may never list
            // (HLS-RULES 33): a DVR multivariant states none; its media playlists carry every EXT-X-KEY.
            text = text.split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !$0.hasPrefix("#EXT-X-SESSION-KEY:") }.joined(separator: "\n")
        }
        return interval.passThrough(multivariant: text)
    }

    /// How long an `end` that the live edge passed still answers EVENT (then with ENDLIST) rather than VOD: five
    /// target durations, so a player that started on the EVENT sees its ENDLIST on a reload, not a new type.
    static func eventGrace(_ targetDuration: Int) -> Int64 { Int64(max(targetDuration, 1)) * 5000 }

    /// Markers ending before this PDT may be pruned (ms): the live window's start, or the DVR horizon when earlier.
    func dvrMarkerFloor(windowStartMilliseconds windowStart: Int64) -> Int64 {
        guard let dvr = configuration.dvr else { return windowStart }
        return min(windowStart, clock.nowMilliseconds() - dvr.milliseconds)
    }

    private func dvrRecords() throws(DVRQueryError) -> StoreDVRRecords {
        guard let store else {
            throw DVRQueryError(
                kind: .outsideWindow, message: "channel '\(name)' keeps no DVR window: the origin has no data directory"
            )
        }
        return StoreDVRRecords(store: store)
    }
}

/// The store's records under a cache key other than the rendition's name (`channel/rendition` for DVR playlists,
/// `vod/{id}/{rendition}` for recordings), read by the rendition's own name.
struct RenamedSource: DVRRecordSource {
    let source: StoreDVRRecords
    let rendition: String

    var oldestSlot: SlotRecord? { source.oldestSlot }
    var newestSlot: SlotRecord? { source.newestSlot }
    func slot(endingAfter milliseconds: Int64) -> SlotRecord? { source.slot(endingAfter: milliseconds) }
    func slots(from: UInt64, through: UInt64) -> [SlotRecord] { source.slots(from: from, through: through) }
    func segments(rendition _: String, from: UInt64, through: UInt64) -> [UInt64: SegmentRecord] {
        source.segments(rendition: rendition, from: from, through: through)
    }
}
