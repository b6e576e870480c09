import HLSPlaylist
import LiveTimeline
import Markers
import MediaProbe
import SharedBytes

extension ChannelState {
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
    func lowLatencyPlaylist(
        position: Int, markers: MarkerBook, memory: inout PackagingMemory, nowMilliseconds now: Int64
    ) -> (playlist: MediaPlaylist, snapshot: LowLatencySnapshot) {
        let rendition = renditions[position]
        let partTarget = partTargetMilliseconds ?? 1000
        let target = Int64(rendition.window.targetDuration) * 1000
        let decoration = decoration(for: rendition)
        let progress = partsInProgress(position: position)
        // Date ranges are placed on the listed segments and the segment in progress alike.
        let overlay = markers.overlay(
            entries: rendition.window.entries.map(OverlayPoint.init) + (progress.map { [OverlayPoint($0)] } ?? []),
            cueTags: configuration.cueTagOptions, interstitials: configuration.liveInterstitials)
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
        memory.noteDateRanges(of: rendition.name, shown: playlist, canSkipUntil: 6 * target, nowMilliseconds: now)
        // Delta updates are rendered with the full playlist (a few KB each, per rendition change), so serving one
        // is a lookup like the full playlist.
        let skipPlaylist = playlist.deltaUpdate(.segments).map { SharedBytes(string: $0.render()) }
        let skipPlaylistV2 = playlist.deltaUpdate(
            .segmentsAndDateRanges, recentlyRemovedDateRanges: memory.recentlyRemovedDateRanges
        ).map { SharedBytes(string: $0.render()) }
        let snapshot = LowLatencySnapshot(
            partTargetMilliseconds: partTarget, parts: parts, lastPart: lastPart, preloadHint: hint,
            skipPlaylist: skipPlaylist, skipPlaylistV2: skipPlaylistV2,
            maximumPartsPerSegment: Int((Double(target + 500) / Double(max(partTarget, 1))).rounded(.up)))
        return (playlist, snapshot)
    }
}

extension PackagingMemory {
    /// Records the date range IDs the rendition's playlist no longer shows (RECENTLY-REMOVED-DATERANGES of
    /// `_HLS_skip=v2`), kept for CAN-SKIP-UNTIL.
    mutating func noteDateRanges(
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
