import Foundation
import HLSPackaging
import HLSPlaylist
import LiveTimeline
import Markers
import MediaProbe
public import Persistence
public import SharedBytes

/// Recordings (live-to-VOD) of a channel: their intervals pin the store's slots, their contents are taken from the
/// store when they finish, and their VOD playlists are catch-up playlists of the DVR renderer.
extension Channel {
    /// Evicts below `below`, lowered to the first slot of the oldest recording of the channel (scheduled ones too),
    /// so no slot overlapping a recording is freed whatever the DVR window. Runs under the recordings' eviction lock,
    /// so a recording created meanwhile cannot lose its first slots between its horizon check and its pin.
    /// Returns the floor it evicted below (`below`, or lower where a recording pins).
    @discardableResult
    func evictUnpinned(_ store: ChannelStore, below: UInt64) throws(StoreError) -> UInt64 {
        guard let recordings else {
            try store.evict(below: below)
            return below
        }
        let result: Result<UInt64, StoreError> = recordings.evicting(channel: name) { oldestStart in
            do throws(StoreError) {
                var floor = below
                if let oldestStart, let pinned = try Self.firstPinnedMSN(store, startMilliseconds: oldestStart) {
                    floor = min(floor, pinned)
                }
                try store.evict(below: floor)
                return .success(floor)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The MSN of the slot containing `start`, or of a slot before it when `start` falls between two slots (MSNs
    /// skipped at a restart: probed back 1 s, 2 s, 4 s ...); the oldest slot when `start` is before it; nil when
    /// `start` is after every slot (a scheduled recording pins nothing stored yet).
    static func firstPinnedMSN(_ store: ChannelStore, startMilliseconds start: Int64) throws(StoreError) -> UInt64? {
        guard let range = try store.slotRange() else { return nil }
        if start >= range.newest.endMilliseconds { return nil }
        if start < range.oldest.programDateTimeMilliseconds { return range.oldest.msn }
        if let slot = try store.slot(containing: start) { return slot.msn }
        var step: Int64 = 1000
        while start - step > range.oldest.programDateTimeMilliseconds {
            if let slot = try store.slot(containing: start - step) { return slot.msn }
            step *= 2
        }
        return range.oldest.msn
    }

    /// Markers ending before the returned PDT may be pruned: `floor`, or the start of the oldest recording of the
    /// channel that has not finished yet (its markers are copied when it finishes).
    func recordingMarkerFloor(_ floor: Int64) -> Int64 {
        guard let start = recordings?.oldestUnfinishedStart(channel: name) else { return floor }
        return min(floor, start)
    }

    /// The oldest PDT the channel's store still holds (a recording may not start before it): the oldest slot's, or
    /// now when the store holds no slot yet; nil without a store.
    func storeHeldFromMilliseconds() -> Int64? {
        guard let store else { return nil }
        let now = clock.nowMilliseconds()
        guard let range = try? store.slotRange() else { return now }
        return min(range.oldest.programDateTimeMilliseconds, now)
    }

    /// What a recording of [start, end) holds, taken from the store once the slot containing its last ms has
    /// closed; nil while it has not (or the store cannot be read). After `RecordingStore.finishGraceMilliseconds`
    /// past the end, a channel that closed no such slot (no encoder ever, no store) finishes with what there is.
    func recordingContents(
        startMilliseconds start: Int64, endMilliseconds end: Int64, nowMilliseconds now: Int64
    ) -> RecordingContents? {
        let source = store.map(StoreDVRRecords.init(store:))
        let newestEnd = source?.newestSlot?.endMilliseconds ?? .min
        let complete = newestEnd >= end
        guard complete || now >= end + RecordingStore.finishGraceMilliseconds else { return nil }
        let snapshot = self.snapshot
        let multivariant = snapshot.multivariantWithoutIFrameStreams
        let book = markers.book
        let ends = book.endsMilliseconds()
        let copied = book.sortedMarkers.filter { marker in
            marker.startDate.millisecondsSince1970 < end && (ends[marker.id] ?? .max) >= start
        }
        let names = renditionNames
        guard let source,
            let selection = DVRInterval(kind: .catchUp, startMilliseconds: start, endMilliseconds: end)
                .selection(in: source),
            let first = source.slots(from: selection.msns.lowerBound, through: selection.msns.lowerBound).first,
            first.programDateTimeMilliseconds < end
        else {
            return RecordingContents(
                finishedMilliseconds: now, firstMSN: nil, lastMSN: nil, startOffsetMilliseconds: 0,
                renditions: [], multivariantPlaylist: multivariant, markers: copied)
        }
        let msns = selection.msns
        let slots = source.slots(from: msns.lowerBound, through: msns.upperBound)
        var summaries: [RecordingRenditionSummary] = []
        for rendition in names {
            let records = source.segments(rendition: rendition, from: msns.lowerBound, through: msns.upperBound)
            let live = snapshot.renditions[rendition]
            var segments = 0
            var bytes: Int64 = 0
            var duration: Int64 = 0
            var versions: Set<Int> = []
            for slot in slots {
                let record = records[slot.msn]
                duration += record?.durationMilliseconds ?? slot.durationMilliseconds
                guard let record, record.kind == .segment else { continue }
                segments += 1
                bytes += Int64(record.location?.length ?? 0)
                if let version = record.initSectionVersion { versions.insert(version) }
            }
            let container = records.values.first?.container ?? live?.entries.last?.container ?? .mpegTS
            summaries.append(
                RecordingRenditionSummary(
                    name: rendition, container: container.rawValue, targetDuration: live?.targetDuration ?? 2,
                    independentSegments: Self.independentSegments(live), segments: segments,
                    gaps: slots.count - segments, bytes: bytes, durationMilliseconds: duration,
                    initSectionVersions: versions.sorted()))
        }
        return RecordingContents(
            finishedMilliseconds: now, firstMSN: msns.lowerBound, lastMSN: msns.upperBound,
            startOffsetMilliseconds: max(0, start - first.programDateTimeMilliseconds), renditions: summaries,
            multivariantPlaylist: multivariant, markers: copied)
    }

    /// Whether the live playlist carries EXT-X-INDEPENDENT-SEGMENTS (the VOD playlist says the same).
    private static func independentSegments(_ live: RenditionSnapshot?) -> Bool {
        live?.playlist?.withUnsafeBytes { String(decoding: $0.prefix(256), as: UTF8.self) }
            .contains("#EXT-X-INDEPENDENT-SEGMENTS\n") ?? false
    }

    /// The VOD media playlist of a finished recording's rendition: the catch-up playlist of its MSN range (VOD,
    /// ENDLIST, EXT-X-START at the recording's start) from the DVR renderer, with the markers copied into the
    /// recording; nil when the rendition is not part of it or nothing was recorded.
    public func vodMediaPlaylist(
        _ recording: RecordingManifest, rendition: String, cache: DVRPlaylistCache
    ) -> String? {
        guard let store, let contents = recording.contents, let first = contents.firstMSN,
            let last = contents.lastMSN, let summary = contents.renditions.first(where: { $0.name == rendition })
        else { return nil }
        let book = Self.markerBook(contents.markers)
        let selection = DVRSelection(
            msns: first...max(first, last), playlistType: .vod, endList: true,
            start: StartOffset(timeOffset: Double(contents.startOffsetMilliseconds) / 1000, precise: true))
        var options = DVRPlaylistOptions(
            rendition: "vod/" + recording.id + "/" + rendition,
            container: MediaContainer(rawValue: summary.container) ?? .mpegTS, targetDuration: summary.targetDuration,
            independentSegments: summary.independentSegments, cueTags: configuration.cueTagOptions)
        var hasher = Hasher()
        hasher.combine(book)
        let revision = hasher.finalize()
        let records = StoreDVRRecords(store: store)
        // Interstitials: a bounded number before the recording's end (as DVR playlists).
        let end = records.slots(from: max(first, last), through: max(first, last)).first?.endMilliseconds
        options.interstitials = configuration.boundedInterstitials(book, edgeMilliseconds: end ?? .max)
        let source = RenamedSource(source: records, rendition: rendition)
        return cache.withCache { blocks in
            DVRPlaylist.render(
                selection: selection, options: options, source: source, markers: book, revision: revision,
                cache: &blocks)
        }
    }

    /// An fMP4 initialization section of a rendition from the store.
    public func storedInitSection(rendition: String, version: Int) -> SharedBytes? {
        guard let store, let renditionStore = try? store.rendition(rendition) else { return nil }
        return (try? renditionStore.initSections())?[version]
    }

    /// A marker book holding exactly `markers` (the copies a recording keeps), built through the book's own
    /// durable form so that the overlay places them as the live playlist did.
    static func markerBook(_ markers: [Marker]) -> MarkerBook {
        struct Contents: Encodable {
            var markers: [String: Marker]
            var retiredIds: [String: Int64]
        }
        let contents = Contents(
            markers: Dictionary(markers.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first }), retiredIds: [:])
        guard let data = try? JSONEncoder().encode(contents),
            let book = try? JSONDecoder().decode(MarkerBook.self, from: data)
        else { return MarkerBook() }
        return book
    }
}
