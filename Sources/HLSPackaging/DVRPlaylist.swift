public import LiveTimeline
public import HLSPlaylist
public import Markers
public import MediaProbe

/// Where DVR playlists read a channel's records: the durable store, or an in-memory copy in tests.
public protocol DVRRecordSource {
    /// The oldest closed slot kept (the horizon); nil when there is none.
    var oldestSlot: SlotRecord? { get }
    /// The newest closed slot (the live edge); nil when there is none.
    var newestSlot: SlotRecord? { get }
    /// The first closed slot that ends after `milliseconds` (the slot containing it, or the next one after a hole);
    /// nil when every closed slot ends at or before it.
    func slot(endingAfter milliseconds: Int64) -> SlotRecord?
    /// The closed slots with MSNs in `from...through`, ascending.
    func slots(from: UInt64, through: UInt64) -> [SlotRecord]
    /// The rendition's records with MSNs in `from...through`, by MSN (a rendition that has none for an MSN, say
    /// before it started, leaves it out).
    func segments(rendition: String, from: UInt64, through: UInt64) -> [UInt64: SegmentRecord]
}

extension DVRRecordSource {
    /// The PDT span of the closed slots; nil when there is none.
    public var window: DVRWindow? {
        guard let oldestSlot, let newestSlot else { return nil }
        return DVRWindow(
            horizonMilliseconds: oldestSlot.programDateTimeMilliseconds,
            liveEdgeMilliseconds: newestSlot.programDateTimeMilliseconds + newestSlot.durationMilliseconds)
    }
}

/// A channel's records held in arrays: what tests (and small tools) hand the DVR renderer.
public struct DVRRecordArrays: DVRRecordSource, Sendable {
    /// Closed slots, ascending and consecutive.
    public var slotRecords: [SlotRecord]
    /// Each rendition's records by MSN.
    public var segmentRecords: [String: [UInt64: SegmentRecord]]

    public init(slots: [SlotRecord], segments: [String: [UInt64: SegmentRecord]]) {
        self.slotRecords = slots
        self.segmentRecords = segments
    }

    public var oldestSlot: SlotRecord? { slotRecords.first }
    public var newestSlot: SlotRecord? { slotRecords.last }

    public func slot(endingAfter milliseconds: Int64) -> SlotRecord? {
        var low = 0
        var high = slotRecords.count
        while low < high {
            let middle = (low + high) / 2
            let slot = slotRecords[middle]
            if slot.programDateTimeMilliseconds + slot.durationMilliseconds > milliseconds {
                high = middle
            } else {
                low = middle + 1
            }
        }
        return low < slotRecords.count ? slotRecords[low] : nil
    }

    public func slots(from: UInt64, through: UInt64) -> [SlotRecord] {
        guard let first = slotRecords.first?.msn, from <= through else { return [] }
        let lower = max(from, first) - first
        let upper = min(through - first + 1, UInt64(slotRecords.count))
        guard lower < upper else { return [] }
        return Array(slotRecords[Int(lower)..<Int(upper)])
    }

    public func segments(rendition: String, from: UInt64, through: UInt64) -> [UInt64: SegmentRecord] {
        guard let records = segmentRecords[rendition], from <= through else { return [:] }
        var result: [UInt64: SegmentRecord] = [:]
        for msn in from...through {
            if let record = records[msn] { result[msn] = record }
        }
        return result
    }
}

/// One MSN of a rendition in a DVR playlist: its closed slot and the rendition's record for it.
public struct DVREntry: Sendable, Hashable, MarkerOverlayEntry {
    public var slot: SlotRecord
    /// The rendition's record; nil when it has none (the rendition had not started): listed as a GAP.
    public var record: SegmentRecord?

    public init(slot: SlotRecord, record: SegmentRecord?) {
        self.slot = slot
        self.record = record
    }

    public var msn: UInt64 { slot.msn }
    /// EXTINF in ms: the record's (as the live playlist listed it), else the slot's.
    public var durationMilliseconds: Int64 { record?.durationMilliseconds ?? slot.durationMilliseconds }
    public var programDateTimeMilliseconds: Int64 {
        record?.programDateTimeMilliseconds ?? slot.programDateTimeMilliseconds
    }
    public var endMilliseconds: Int64 { programDateTimeMilliseconds + durationMilliseconds }

    /// Listed as EXT-X-GAP: a GAP record, a segment that was never stored, or no record.
    public var isGap: Bool { !(record?.hasBytes ?? false) }

    /// The entry as a playlist segment, exactly as the live playlist lists the same MSN (see
    /// ``LiveWindow/playlist(independentSegments:dateRanges:extraTags:)``): `{msn}.{ext}`, EXTINF, PDT, GAP,
    /// DISCONTINUITY (the slot's), EXT-X-MAP `init-{v}.mp4`.
    /// - Parameter container: the rendition's container, for the URL of an entry without a record.
    public func segment(
        container: MediaContainer, dateRanges: [DateRange] = [], extraTags: [String] = []
    ) -> MediaSegment {
        MediaSegment(
            uri: "\(msn).\((record?.container ?? container).segmentFileExtension)",
            duration: Double(durationMilliseconds) / 1000,
            discontinuity: slot.discontinuity,
            gap: isGap,
            programDateTime: ProgramDateTime(millisecondsSince1970: programDateTimeMilliseconds),
            map: record?.initSectionVersion.map { MediaInitializationSection(uri: "init-\($0).mp4") },
            dateRanges: dateRanges,
            extraTags: extraTags)
    }
}

/// What a DVR playlist of one rendition looks like, apart from its entries.
public struct DVRPlaylistOptions: Sendable, Hashable {
    public var rendition: String
    /// The rendition's container (URLs of entries without a record).
    public var container: MediaContainer
    /// EXT-X-TARGETDURATION, the live playlist's.
    public var targetDuration: Int
    /// EXT-X-INDEPENDENT-SEGMENTS, as the live playlist.
    public var independentSegments: Bool
    /// The channel's `cueTags` and `oatcls` settings, as the live playlist.
    public var cueTags: CueTagOptions
    /// The interstitials listed, bounded (``MarkerBook/interstitialListing(settings:includesInband:edgeMilliseconds:)``);
    /// nil: every marker as it is.
    public var interstitials: InterstitialListing? = nil

    public init(
        rendition: String, container: MediaContainer, targetDuration: Int, independentSegments: Bool,
        cueTags: CueTagOptions = .daterange
    ) {
        self.rendition = rendition
        self.container = container
        self.targetDuration = targetDuration
        self.independentSegments = independentSegments
        self.cueTags = cueTags
    }
}

/// Which MSNs a DVR playlist lists and how it ends, for an interval at one moment.
public struct DVRSelection: Sendable, Hashable {
    public var msns: ClosedRange<UInt64>
    public var playlistType: PlaylistType?
    public var endList: Bool
    /// EXT-X-START at T: `T - PDT(first)`, PRECISE=YES.
    public var start: StartOffset?

    public init(msns: ClosedRange<UInt64>, playlistType: PlaylistType?, endList: Bool, start: StartOffset?) {
        self.msns = msns
        self.playlistType = playlistType
        self.endList = endList
        self.start = start
    }
}

extension DVRInterval {
    /// The MSNs that answer the interval now: from the slot containing T (the next one when T falls in a hole, the
    /// newest when T is past the live edge) to the live edge, or to the slot containing the last ms before E;
    /// ENDLIST once that slot is closed.
    /// - Parameter source: the channel's closed slots.
    /// - Returns: nil when there is no closed slot.
    public func selection(in source: some DVRRecordSource) -> DVRSelection? {
        guard let newest = source.newestSlot else { return nil }
        let first = source.slot(endingAfter: startMilliseconds) ?? newest
        var last = newest
        var endList = false
        if let endMilliseconds {
            if let containing = source.slot(endingAfter: endMilliseconds - 1) {
                // After a hole, the slot found starts at or after E: the interval ends with the one before it.
                last =
                    containing.programDateTimeMilliseconds >= endMilliseconds && containing.msn > first.msn
                    ? source.slots(from: containing.msn - 1, through: containing.msn - 1).first ?? containing
                    : containing
                endList = true
            }
        }
        // Within the first slot (T past the live edge starts at the newest slot's end).
        let offset = min(max(0, startMilliseconds - first.programDateTimeMilliseconds), first.durationMilliseconds)
        return DVRSelection(
            msns: first.msn...max(first.msn, last.msn), playlistType: playlistType, endList: endList,
            start: StartOffset(timeOffset: Double(offset) / 1000, precise: true))
    }
}

/// DVR media playlists: a rendition's closed slots from the store, rendered as the live playlist renders its entries.
public enum DVRPlaylist {
    /// MSNs per block: `[256k, 256k + 256)`.
    public static let blockLength: UInt64 = 256

    /// The playlist value for `entries` (plain: every entry rendered, markers overlaid on all of them); the reference
    /// that ``render(selection:options:source:markers:revision:cache:)`` assembles from blocks.
    public static func playlist(
        entries: [DVREntry], selection: DVRSelection, options: DVRPlaylistOptions, markers: MarkerBook
    ) -> MediaPlaylist {
        playlist(entries: entries, selection: selection, options: options, markers: markers, decoration: .none)
    }

    /// ``playlist(entries:selection:options:markers:)`` with authorization and encryption applied (`decoration`).
    package static func playlist(
        entries: [DVREntry], selection: DVRSelection, options: DVRPlaylistOptions, markers: MarkerBook,
        decoration: PlaylistDecoration
    ) -> MediaPlaylist {
        let overlay = markers.overlay(
            entries: entries, cueTags: options.cueTags, interstitials: options.interstitials)
        var playlist = header(first: entries.first, selection: selection, options: options)
        playlist.definitions = decoration.definitions
        playlist.segments = entries.map { entry in
            var segment = entry.segment(
                container: options.container, dateRanges: overlay.dateRanges[entry.msn] ?? [],
                extraTags: overlay.extraTags[entry.msn] ?? [])
            decoration.apply(to: &segment, msn: entry.msn, isFirstListed: entry.msn == entries.first?.msn)
            return segment
        }
        return playlist
    }

    /// The entries of `msns` from the source: one per closed slot, with the rendition's record if any.
    public static func entries(
        _ msns: ClosedRange<UInt64>, rendition: String, source: some DVRRecordSource
    ) -> [DVREntry] {
        let records = source.segments(rendition: rendition, from: msns.lowerBound, through: msns.upperBound)
        return source.slots(from: msns.lowerBound, through: msns.upperBound).map {
            DVREntry(slot: $0, record: records[$0.msn])
        }
    }

    /// The playlist text, assembled: the closed blocks the cache holds, and runs of fresh entries between them (the
    /// head from the first entry to the end of its block, blocks not cached yet, which are stored, and the tail).
    /// Byte for byte the text of ``playlist(entries:selection:options:markers:)``'s `render()` for the same entries.
    ///
    /// Markers are overlaid once per fresh run, on the run and the entry before it: an overlay places a marker on an
    /// entry after the first by that entry and its predecessor alone, so a block's text is the same in every playlist
    /// that lists the whole block (with the same EXT-X-MAP in force before it, which is part of the key).
    /// - Parameters:
    ///   - revision: changes whenever cached block text may no longer hold (markers changed, a stored segment was
    ///     found corrupt); part of the cache key.
    ///   - cache: the block cache (the caller keeps it behind a lock).
    public static func render(
        selection: DVRSelection, options: DVRPlaylistOptions, source: some DVRRecordSource, markers: MarkerBook,
        revision: Int, cache: inout DVRBlockCache
    ) -> String {
        render(
            selection: selection, options: options, source: source, markers: markers, revision: revision,
            cache: &cache, decoration: .none)
    }

    /// ``render(selection:options:source:markers:revision:cache:)`` with authorization and encryption applied
    /// (`decoration`). A KEY is placed by the MSN alone (and on the first entry, never part of a cached block), so
    /// blocks stay the same in every playlist; `revision` must change with what the decoration depends on.
    package static func render(
        selection: DVRSelection, options: DVRPlaylistOptions, source: some DVRRecordSource, markers: MarkerBook,
        revision: Int, cache: inout DVRBlockCache, decoration: PlaylistDecoration
    ) -> String {
        let first = selection.msns.lowerBound
        let last = selection.msns.upperBound
        // Cached blocks hold the interstitials listed: a new bound is a new revision.
        var revisionHasher = Hasher()
        revisionHasher.combine(revision)
        revisionHasher.combine(options.interstitials)
        let revision = options.interstitials == nil ? revision : revisionHasher.finalize()
        func key(
            _ blockStart: UInt64, _ incomingMap: MediaInitializationSection?, _ incomingKey: EncryptionKey?
        ) -> DVRBlockCache.Key {
            DVRBlockCache.Key(
                rendition: options.rendition, block: blockStart / blockLength, revision: revision,
                incomingMap: incomingMap, cueTags: options.cueTags, incomingKey: incomingKey)
        }
        var body = ""
        var previousMap: MediaInitializationSection?
        var keyInForce: EncryptionKey?
        var anyMap = false
        var firstEntry: DVREntry?
        var previousEntry: DVREntry?
        var next = first
        while next <= last {
            let isHead = next == first
            if !isHead, next + blockLength - 1 <= last,
                let block = cache.block(for: key(next, previousMap, keyInForce))
            {
                body += block.text
                previousMap = block.outgoingMap
                keyInForce = block.outgoingKey
                anyMap = anyMap || block.hasMap
                previousEntry = nil
                next += blockLength
                continue
            }
            // A fresh run: to the end of this block, then every whole block the cache lacks, then the tail.
            var runEnd = min(last, blockStart(of: next) + blockLength - 1)
            while runEnd < last {
                let candidate = runEnd + 1
                if candidate + blockLength - 1 <= last, cache.contains(key(candidate, previousMap, keyInForce)) {
                    break
                }
                runEnd = min(last, candidate + blockLength - 1)
            }
            let run = entries(next...runEnd, rendition: options.rendition, source: source)
            if isHead { firstEntry = run.first }
            let predecessor =
                isHead
                ? nil
                : previousEntry ?? entries(next - 1...next - 1, rendition: options.rendition, source: source).first
            let overlay = markers.overlay(
                entries: (predecessor.map { [$0] } ?? []) + run, cueTags: options.cueTags,
                interstitials: options.interstitials)
            var before = predecessor
            var index = 0
            while index < run.count {
                let block = run[index].msn / blockLength
                var end = index
                while end < run.count, run[end].msn / blockLength == block { end += 1 }
                let incomingMap = previousMap
                let incomingKey = keyInForce
                var text = ""
                var hasMap = false
                for entry in run[index..<end] {
                    var segment = entry.segment(
                        container: options.container, dateRanges: overlay.dateRanges[entry.msn] ?? [],
                        extraTags: overlay.extraTags[entry.msn] ?? [])
                    decoration.apply(to: &segment, msn: entry.msn, isFirstListed: entry.msn == firstEntry?.msn)
                    hasMap = hasMap || segment.map != nil
                    segment.render(into: &text, previousMap: &previousMap, keyInForce: &keyInForce)
                }
                let blockFirst = block * blockLength
                let whole =
                    end - index == Int(blockLength) && blockFirst > first && blockFirst + blockLength - 1 <= last
                if whole, let before, before.msn + 1 == blockFirst {
                    cache.insert(
                        DVRBlockCache.Block(
                            text: text, outgoingMap: previousMap, hasMap: hasMap, outgoingKey: keyInForce),
                        for: key(blockFirst, incomingMap, incomingKey))
                }
                body += text
                anyMap = anyMap || hasMap
                before = run[end - 1]
                index = end
            }
            previousEntry = run.last
            next = runEnd + 1
        }

        var text = ""
        text.reserveCapacity(body.utf8.count + 256)
        var header = header(first: firstEntry, selection: selection, options: options)
        header.definitions = decoration.definitions
        // The header alone carries the definitions (EXT-X-DEFINE: 8, QUERYPARAM: 11); keys without IV need nothing.
        header.renderHeader(into: &text, version: max(anyMap ? 6 : 3, header.minimumVersion))
        text += body
        if selection.endList { text += "#EXT-X-ENDLIST\n" }
        return text
    }

    /// The header of a DVR playlist starting with `first`: MEDIA-SEQUENCE its MSN, DISCONTINUITY-SEQUENCE
    /// `dsn(first) - disc(first)`.
    static func header(first: DVREntry?, selection: DVRSelection, options: DVRPlaylistOptions) -> MediaPlaylist {
        let discontinuitySequence =
            first.map { entry in
                entry.slot.discontinuitySequence - (entry.slot.discontinuity ? 1 : 0)
            } ?? 0
        return MediaPlaylist(
            targetDuration: options.targetDuration, mediaSequence: first?.msn ?? selection.msns.lowerBound,
            discontinuitySequence: discontinuitySequence, independentSegments: options.independentSegments,
            playlistType: selection.playlistType, endList: selection.endList, start: selection.start)
    }

    static func blockStart(of msn: UInt64) -> UInt64 { msn - msn % blockLength }
}

/// Rendered text of closed DVR blocks, least recently used first out once over a byte budget.
public struct DVRBlockCache: Sendable {
    /// What a block's text depends on.
    public struct Key: Sendable, Hashable {
        public var rendition: String
        /// Block number: MSNs `[256 block, 256 block + 256)`.
        public var block: UInt64
        public var revision: Int
        /// The EXT-X-MAP in force before the block.
        public var incomingMap: MediaInitializationSection?
        public var cueTags: CueTagOptions
        /// The EXT-X-KEY in force before the block (a MAP change under a key is written between METHOD=NONE and
        /// the key again).
        public var incomingKey: EncryptionKey? = nil
    }

    /// A block's text and what the next block needs to know.
    public struct Block: Sendable {
        public var text: String
        /// The EXT-X-MAP in force after the block.
        public var outgoingMap: MediaInitializationSection?
        /// Some entry of the block has an EXT-X-MAP (EXT-X-VERSION 6).
        public var hasMap: Bool
        /// The EXT-X-KEY in force after the block.
        public var outgoingKey: EncryptionKey? = nil
    }

    /// Byte budget of the text held.
    public let capacityBytes: Int
    /// Bytes of text held.
    public private(set) var bytes = 0
    public private(set) var hits = 0
    public private(set) var misses = 0
    private var blocks: [Key: (block: Block, lastUse: UInt64)] = [:]
    private var clock: UInt64 = 0

    /// A cache holding at most `capacityBytes` of text.
    public init(capacityBytes: Int) {
        self.capacityBytes = capacityBytes
    }

    /// Number of blocks held.
    public var count: Int { blocks.count }

    /// The block under `key`, marked as used; nil on a miss.
    public mutating func block(for key: Key) -> Block? {
        clock += 1
        guard let found = blocks[key] else {
            misses += 1
            return nil
        }
        hits += 1
        blocks[key] = (found.block, clock)
        return found.block
    }

    /// Whether a block is held under `key` (not counted as a use).
    public func contains(_ key: Key) -> Bool { blocks[key] != nil }

    /// Stores a block; when over budget, drops the least recently used blocks down to 3/4 of it.
    public mutating func insert(_ block: Block, for key: Key) {
        let size = block.text.utf8.count
        guard size <= capacityBytes else { return }
        clock += 1
        if let old = blocks.updateValue((block, clock), forKey: key) {
            bytes -= old.block.text.utf8.count
        }
        bytes += size
        guard bytes > capacityBytes else { return }
        let target = capacityBytes / 4 * 3
        for (oldKey, entry) in blocks.sorted(by: { $0.value.lastUse < $1.value.lastUse }) {
            guard bytes > target else { break }
            guard oldKey != key else { continue }
            blocks[oldKey] = nil
            bytes -= entry.block.text.utf8.count
        }
    }

    /// Drops every block of a rendition (it was removed).
    public mutating func removeAll(rendition: String) {
        for (key, entry) in blocks where key.rendition == rendition {
            blocks[key] = nil
            bytes -= entry.block.text.utf8.count
        }
    }
}
