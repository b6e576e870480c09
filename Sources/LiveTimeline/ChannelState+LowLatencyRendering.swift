import HLSPlaylist
import Markers
import SharedBytes

/// What a Low-Latency rendition shows after its last listed segment: the parts of the segment in progress.
struct PartsInProgress {
    let msn: UInt64
    let programDateTimeMilliseconds: Int64
    let discontinuity: Bool
    let parts: [PartEntry]
    /// Every part is there: the segment closed, but its slot waits for other renditions.
    let complete: Bool
    let initSectionVersion: Int?

    var endMilliseconds: Int64 { programDateTimeMilliseconds + parts.reduce(0) { $0 + $1.durationMilliseconds } }
}

extension ChannelState {
    /// The segment whose parts follow the rendition's last listed segment: its first held entry (a closed segment,
    /// or a GAP, whose slot is still open), else its open segment. A rendition's parts of N+1 are listed only
    /// after N's URI line.
    func partsInProgress(position: Int) -> PartsInProgress? {
        let rendition = renditions[position]
        guard let lastListed = rendition.window.lastMSN else { return nil }
        if let held = rendition.held.first {
            guard held.msn == lastListed + 1, let closed = rendition.recentParts[held.msn], !closed.parts.isEmpty
            else { return nil }
            return PartsInProgress(
                msn: held.msn, programDateTimeMilliseconds: held.programDateTimeMilliseconds,
                discontinuity: held.discontinuity || (slots[held.msn]?.discontinuity ?? false), parts: closed.parts,
                complete: true, initSectionVersion: held.initSectionVersion)
        }
        guard let open = rendition.open, open.msn == lastListed + 1, !open.parts.isEmpty else { return nil }
        return PartsInProgress(
            msn: open.msn, programDateTimeMilliseconds: open.programDateTimeMilliseconds,
            discontinuity: open.discontinuity || (slots[open.msn]?.discontinuity ?? false), parts: open.parts,
            complete: false,
            initSectionVersion: open.container == .fragmentedMP4Segment ? rendition.currentInitVersion : nil)
    }

    /// End of the rendition's newest listed part on the PDT timeline (its last listed segment's end without parts).
    func lastPartEnd(position: Int) -> Int64? {
        partsInProgress(position: position)?.endMilliseconds
            ?? renditions[position].window.entries.last?.endMilliseconds
    }

    /// The rendition's last listed part (LAST-MSN, LAST-PART of its EXT-X-RENDITION-REPORT): of the segment in
    /// progress, else of its last listed segment; `part` is nil when that segment has no parts (WebVTT, or a segment
    /// pushed whole).
    func lastListed(position: Int) -> (msn: UInt64, part: Int?)? {
        if let progress = partsInProgress(position: position) { return (progress.msn, progress.parts.count - 1) }
        guard let last = renditions[position].window.entries.last else { return nil }
        let count = renditions[position].recentParts[last.msn]?.parts.count ?? 0
        return (last.msn, count > 0 ? count - 1 : nil)
    }

    /// The configured window's length in milliseconds (CAN-SKIP-UNTIL is offered only when it exceeds 6 TD).
    private var configuredWindowMilliseconds: Int64 {
        switch configuration.window {
        case .segments(let count): Int64(max(count, 1)) * Int64(targetDuration ?? 2) * 1000
        case .seconds(let seconds): Int64(seconds * 1000)
        }
    }

    /// The playlist of a Low-Latency rendition and what it publishes besides: EXT-X-SERVER-CONTROL, PART-INF, parts
    /// of the segments ending within 3 TD of the last part's end, the segment in progress, the preload hint (none
    /// while GAP parts are being written) and a rendition report for every other rendition of the channel.
    mutating func lowLatencyPlaylist(
        position: Int, markers: MarkerBook, nowMilliseconds now: Int64
    ) -> (playlist: MediaPlaylist, snapshot: LowLatencySnapshot) {
        let rendition = renditions[position]
        let partTarget = partTargetMilliseconds ?? 1000
        let target = Int64(rendition.window.targetDuration) * 1000
        let decoration = decoration(for: rendition)
        let progress = partsInProgress(position: position)
        // Date ranges are placed on the listed segments and the segment in progress alike.
        let overlay = markers.overlay(
            entries: rendition.window.entries.map(OverlayPoint.init) + (progress.map { [OverlayPoint($0)] } ?? []),
            legacyCueTags: configuration.legacyCueTags)
        var playlist = rendition.window.playlist(
            independentSegments: rendition.allSegmentsIndependent, dateRanges: overlay.dateRanges,
            extraTags: overlay.extraTags, decoration: decoration)
        let canSkip = configuredWindowMilliseconds > 6 * target
        playlist.serverControl = ServerControl(
            canBlockReload: true, canSkipUntil: canSkip ? Double(6 * target) / 1000 : nil,
            canSkipDateRanges: canSkip, holdBack: Double(3 * target) / 1000,
            partHoldBack: Double(3 * partTarget) / 1000)
        playlist.partTarget = Double(partTarget) / 1000
        let end = progress?.endMilliseconds ?? rendition.window.entries.last?.endMilliseconds ?? 0
        let fileExtension = (rendition.container ?? .mpegTS).segmentFileExtension
        func partial(_ part: PartEntry, msn: UInt64) -> PartialSegment {
            PartialSegment(
                duration: Double(part.durationMilliseconds) / 1000,
                uri: "\(msn).\(part.index).\(fileExtension)\(decoration.uriSuffix)", independent: part.independent,
                gap: part.bytes == nil)
        }
        for (offset, entry) in rendition.window.entries.enumerated() {
            guard let closed = rendition.recentParts[entry.msn], !closed.parts.isEmpty,
                end - closed.endMilliseconds < 3 * target
            else { continue }
            playlist.segments[offset].parts = closed.parts.map { partial($0, msn: entry.msn) }
        }
        let newest = progress?.msn ?? rendition.window.lastMSN ?? 0
        var parts = rendition.recentParts.filter { $0.key <= newest }.mapValues(\.parts)
        if let progress {
            var segment = MediaSegment(
                uri: "", duration: 0, discontinuity: progress.discontinuity,
                programDateTime: ProgramDateTime(millisecondsSince1970: progress.programDateTimeMilliseconds),
                map: progress.initSectionVersion.map { MediaInitializationSection(uri: "init-\($0).mp4") },
                dateRanges: overlay.dateRanges[progress.msn] ?? [], extraTags: overlay.extraTags[progress.msn] ?? [])
            decoration.apply(to: &segment, msn: progress.msn, isFirstListed: false)
            segment.uri = ""
            segment.parts = progress.parts.map { partial($0, msn: progress.msn) }
            playlist.segmentInProgress = segment
            parts[progress.msn] = progress.parts
        }
        let writingGap =
            isInLowLatencyOutage(rendition) || (progress.map { !$0.complete && $0.parts.last?.bytes == nil } ?? false)
        var hint: PartPosition? = nil
        if !writingGap, let lastMSN = rendition.window.lastMSN {
            if let progress {
                hint =
                    progress.complete
                    ? PartPosition(msn: progress.msn + 1, part: 0)
                    : PartPosition(msn: progress.msn, part: progress.parts.count)
            } else {
                hint = PartPosition(msn: lastMSN + 1, part: 0)
            }
        }
        if let hint {
            playlist.preloadHints = [
                PreloadHint(type: .part, uri: "\(hint.msn).\(hint.part).\(fileExtension)\(decoration.uriSuffix)")
            ]
        }
        playlist.renditionReports = renditions.indices.compactMap { other in
            guard other != position, let listed = lastListed(position: other) else { return nil }
            return RenditionReport(
                uri: "../\(renditions[other].name)/index.m3u8\(decoration.uriSuffix)", lastMSN: listed.msn,
                lastPart: listed.part)
        }
        let lastPart = lastListed(position: position).flatMap { listed in
            listed.part.map { PartPosition(msn: listed.msn, part: $0) }
        }
        noteDateRanges(of: rendition.name, shown: playlist, canSkipUntil: 6 * target, nowMilliseconds: now)
        // Delta updates are rendered with the full playlist (a few KB each, per rendition change), so serving one
        // is a lookup like the full playlist.
        let skipPlaylist = playlist.deltaUpdate(.segments).map { SharedBytes(string: $0.render()) }
        let skipPlaylistV2 = playlist.deltaUpdate(
            .segmentsAndDateRanges, recentlyRemovedDateRanges: recentlyRemovedDateRanges
        ).map { SharedBytes(string: $0.render()) }
        let snapshot = LowLatencySnapshot(
            partTargetMilliseconds: partTarget, parts: parts, lastPart: lastPart, preloadHint: hint,
            skipPlaylist: skipPlaylist, skipPlaylistV2: skipPlaylistV2,
            maximumPartsPerSegment: Int((Double(target + 500) / Double(max(partTarget, 1))).rounded(.up)))
        return (playlist, snapshot)
    }

    /// Records the date range IDs the rendition's playlist no longer shows (RECENTLY-REMOVED-DATERANGES of
    /// `_HLS_skip=v2`), kept for CAN-SKIP-UNTIL.
    private mutating func noteDateRanges(
        of rendition: String, shown playlist: MediaPlaylist, canSkipUntil: Int64, nowMilliseconds now: Int64
    ) {
        let segments = playlist.segments + (playlist.segmentInProgress.map { [$0] } ?? [])
        let shown = Set(segments.flatMap { $0.dateRanges.map(\.id) })
        for id in shownDateRanges[rendition, default: []].subtracting(shown) { removedDateRanges[id] = now }
        for id in shown { removedDateRanges[id] = nil }
        shownDateRanges[rendition] = shown
        removedDateRanges = removedDateRanges.filter { now - $0.value <= canSkipUntil }
    }

    /// IDs of date ranges removed from the playlists in the last CAN-SKIP-UNTIL seconds, oldest first.
    var recentlyRemovedDateRanges: [String] {
        removedDateRanges.sorted { ($0.value, $0.key) < ($1.value, $1.key) }.map(\.key)
    }
}

/// A listed segment or the segment in progress, as the marker overlay places date ranges on it.
private struct OverlayPoint: MarkerOverlayEntry {
    let msn: UInt64
    let programDateTimeMilliseconds: Int64
    let endMilliseconds: Int64

    init(_ entry: WindowEntry) {
        msn = entry.msn
        programDateTimeMilliseconds = entry.programDateTimeMilliseconds
        endMilliseconds = entry.endMilliseconds
    }

    init(_ progress: PartsInProgress) {
        msn = progress.msn
        programDateTimeMilliseconds = progress.programDateTimeMilliseconds
        endMilliseconds = progress.endMilliseconds
    }
}
