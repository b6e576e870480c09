import GapFiller
import MediaProbe
import SharedBytes

/// Restoring a channel from its durable store after a restart (SIGTERM or kill -9): the same MSNs, URIs, PDTs,
/// discontinuity sequence numbers and bytes as before, held entries back in their open slots, corrupt or missing
/// segments as GAP entries. The time the origin was down becomes GAP entries when the owner ticks next, exactly like
/// an encoder outage, and every rendition's next segment starts a discontinuity; in a redundancy group the peers
/// fill those slots first (`ChannelState+CatchUp`).
extension ChannelState {
    /// How many of the newest closed slots a restart restores: the live window and the removed entries that must stay
    /// downloadable after it (about one more window), plus a margin.
    package static func restoreDepth(_ configuration: ChannelConfiguration) -> Int {
        let segments: Int
        switch configuration.window {
        case .segments(let count): segments = max(count, 1)
        case .seconds(let seconds): segments = Int((seconds / max(configuration.segmentDuration, 0.1)).rounded(.up))
        }
        return 2 * max(segments, 3) + 4
    }

    /// The first MSN of a channel restored from `stored`: its oldest restored slot, or its oldest held entry.
    package static func firstRestoredMSN(_ stored: StoredChannel) -> UInt64? {
        stored.slots.first?.msn ?? stored.renditions.compactMap { $0.records.first?.msn }.min()
    }

    /// Restores the renditions, windows, held entries and slot timeline kept in the store. Call on a new state
    /// whose `firstMSN` is `firstRestoredMSN(stored)`, before configured renditions are added.
    /// - Parameters:
    ///   - targetDuration: EXT-X-TARGETDURATION as the journal recorded it; nil derives it from the restored EXTINFs.
    ///   - now: shared-clock time (starts the retention of entries the restored window slides out).
    package mutating func restore(_ stored: StoredChannel, targetDuration recorded: Int?, nowMilliseconds now: Int64) {
        if targetDuration == nil {
            let longest = stored.renditions.flatMap(\.records).map(\.durationMilliseconds).max()
            targetDuration = recorded ?? longest.map { max(Int((Double($0) / 1000).rounded()), 1) }
        }
        let slotsByMSN = Dictionary(stored.slots.map { ($0.msn, $0) }, uniquingKeysWith: { first, _ in first })
        let lastClosed = stored.slots.last
        for rendition in stored.renditions {
            if index[rendition.name] == nil { addRendition(rendition.name) }
            guard let position = index[rendition.name] else { continue }
            restoreRendition(rendition, position: position, slots: slotsByMSN, lastClosed: lastClosed, now: now)
            settleRestoredRole(position: position)
        }
        if let lastClosed {
            slotClock.closedThrough = lastClosed.msn
            journal.publishedDiscontinuityDomain = lastClosed.discontinuitySequence
            slotClock.slots = [
                lastClosed.msn: Slot(
                    programDateTimeMilliseconds: lastClosed.programDateTimeMilliseconds,
                    durationMilliseconds: lastClosed.durationMilliseconds)
            ]
        }
        // Held entries take their slots back (the first rendition's record gives the slot's PDT and length).
        for rendition in renditions {
            for entry in rendition.held where slotClock.slots[entry.msn] == nil {
                slotClock.slots[entry.msn] = Slot(
                    programDateTimeMilliseconds: entry.programDateTimeMilliseconds,
                    durationMilliseconds: entry.durationMilliseconds)
            }
        }
        if configuration.lowLatency != nil, let lastClosed { closeFirstUnjournaledSlot(after: lastClosed, now: now) }
        let ends =
            renditions.compactMap { $0.lastEntry?.endMilliseconds } + [lastClosed?.endMilliseconds].compactMap { $0 }
        if let end = ends.max() { journal.minimumProgramDateTime = max(journal.minimumProgramDateTime ?? end, end) }
        journal.dirty = true
        startCatchUp(nowMilliseconds: now)
    }

    /// Low-Latency: parts of the slot after the last closed one may have been listed before the restart, and parts
    /// are not stored. That slot is closed as a GAP for every media rendition that stored no segment for it, so a
    /// part URL once listed never names other bytes (it answers 404); the next pushes take later MSNs.
    private mutating func closeFirstUnjournaledSlot(after lastClosed: SlotRecord, now: Int64) {
        let msn = lastClosed.msn + 1
        let closed = Slot(
            programDateTimeMilliseconds: lastClosed.programDateTimeMilliseconds,
            durationMilliseconds: lastClosed.durationMilliseconds)
        var slot =
            slotClock.slots[msn]
            ?? Slot(
                programDateTimeMilliseconds: closed.endMilliseconds, durationMilliseconds: gapSlotMilliseconds(closed))
        slot.opened = true
        slotClock.slots[msn] = slot
        for position in renditions.indices
        where renditions[position].hasStarted && !renditions[position].isFollower
            && !renditions[position].hasEntry(msn: msn)
        {
            writeGap(position: position, msn: msn, slot: slot, nowMilliseconds: now)
        }
        for position in renditions.indices where renditions[position].hasStarted && !renditions[position].isFollower {
            renditions[position].lastPartAtMilliseconds = now
        }
    }

    private mutating func restoreRendition(
        _ stored: StoredRendition, position: Int, slots: [UInt64: SlotRecord], lastClosed: SlotRecord?,
        now: Int64
    ) {
        var rendition = renditions[position]
        for (version, bytes) in stored.initSections.sorted(by: { $0.key < $1.key }) {
            let probed = bytes.withUnsafeBytes { raw in
                Result { () throws(ProbeError) in try MediaProbe.probeInitSection(raw) }
            }
            guard case .success(let info) = probed else { continue }
            rendition.initSections[version] = InitSection(version: version, bytes: bytes, info: info)
            rendition.currentInitVersion = version
        }
        rendition.window = LiveWindow(
            length: configuration.window, targetDuration: targetDuration ?? rendition.window.targetDuration,
            discontinuitySequence: rendition.window.discontinuitySequence)
        rendition.held = []
        renditions[position] = rendition
        let records = stored.records.sorted { $0.msn < $1.msn }
        var listedStarted = false
        for (offset, record) in records.enumerated() {
            if !record.hasBytes || stored.bytes[record.msn] == nil {
                primeFiller(position: position, after: offset, records: records, stored: stored)
            }
            let closed = lastClosed.map { record.msn <= $0.msn } ?? false
            let slot = slots[record.msn]
            let discontinuity = closed ? (slot?.discontinuity ?? record.discontinuity) : record.discontinuity
            if closed, !listedStarted {
                listedStarted = true
                // The head's EXT-X-DISCONTINUITY-SEQUENCE: its slot's domain, less its own discontinuity.
                let domain = slot?.discontinuitySequence ?? renditions[position].window.discontinuitySequence
                renditions[position].window = LiveWindow(
                    length: configuration.window, targetDuration: renditions[position].window.targetDuration,
                    discontinuitySequence: domain - (discontinuity && domain > 0 ? 1 : 0))
            }
            if closed, let last = renditions[position].window.lastMSN, record.msn != last + 1 {
                continue  // a hole cannot be listed; the store returns consecutive records
            }
            let entry = restoredEntry(
                record, bytes: stored.bytes[record.msn], discontinuity: discontinuity, position: position)
            if closed {
                renditions[position].window.append(entry, nowMilliseconds: now)
            } else {
                renditions[position].held.append(entry)
            }
        }
        renditions[position].pendingDiscontinuity = true
        renditions[position].gapFill = .idle
        renditions[position].lastAppendMilliseconds = now
        renditions[position].restoreFacts()
        if renditions[position].hasStarted, renditions[position].feed == .waiting {
            renditions[position].feed = .dropped(sinceMilliseconds: now)
        }
    }

    /// A GAP restored before any real segment of the rendition (the segments before it left the restored range) has
    /// no segment to continue: its filler continues the newest real segment before the range (read from further back
    /// in the store), else ends where the first real segment after it starts. Either way its URL answers a filler as
    /// it did before the restart.
    private mutating func primeFiller(
        position: Int, after offset: Int, records: [SegmentRecord], stored: StoredRendition
    ) {
        guard configuration.gapResponse == .filler, case .idle = renditions[position].gapFill else { return }
        let rendition = renditions[position]
        let hasEarlierSegment =
            rendition.held.contains { !$0.isGap } || rendition.window.entries.contains { !$0.isGap }
            || rendition.window.retained.contains { !$0.entry.isGap }
        guard !hasEarlierSegment else { return }
        func usable(_ record: SegmentRecord) -> Bool {
            record.kind == .segment && record.container == .mpegTS && record.mediaTimescale == 90_000
                && record.mediaEndTicks != nil
        }
        let template: (record: SegmentRecord, bytes: SharedBytes, mediaEnd: Int64, programDateTimeEnd: Int64)
        if let before = stored.segmentBeforeRecords, usable(before.record), let end = before.record.mediaEndTicks {
            template = (before.record, before.bytes, end, before.record.endMilliseconds)
        } else if let next = records[(offset + 1)...].first(where: { usable($0) && stored.bytes[$0.msn] != nil }),
            let end = next.mediaEndTicks, let bytes = stored.bytes[next.msn]
        {
            template = (next, bytes, end - next.durationMilliseconds * 90, next.programDateTimeMilliseconds)
        } else {
            return
        }
        let source = rendition.gapFillerSource ?? slateClipSources[rendition.name] ?? KeyframeGapFillerSource()
        let made = template.bytes.withUnsafeBytes { raw in
            Result { () throws(GapFillerError) in try source.makeFiller(after: raw) }
        }
        guard case .success(let filler) = made else { return }
        renditions[position].gapFill = .filling(
            .transportStream(filler), mediaEnd: template.mediaEnd, programDateTimeEnd: template.programDateTimeEnd)
    }

    /// The I-frame range of a restored segment, found again by probing its (CRC-checked) bytes, with the restored
    /// initialization section for fMP4: the store keeps no field for it. nil when the probe fails or finds no leading
    /// keyframe (the I-frame entry is then a GAP, as it would have been at accept).
    private func restoredIFrameRangeEnd(_ record: SegmentRecord, bytes: SharedBytes, position: Int) -> Int? {
        guard record.startsWithKeyframe, record.container == .mpegTS || record.container == .fragmentedMP4Segment
        else { return nil }
        let initSection = record.initSectionVersion.flatMap { renditions[position].initSections[$0]?.info }
        if record.container == .fragmentedMP4Segment, initSection == nil { return nil }
        let probed = bytes.withUnsafeBytes { raw in
            Result { () throws(ProbeError) in try MediaProbe.probeSegment(raw, initSection: initSection) }
        }
        guard case .success(let info) = probed else { return nil }
        return info.iFrameRangeEnd
    }

    /// The window entry of a stored record: a segment with its verified bytes, else a GAP (a GAP record, or a
    /// segment that is corrupt, missing or was never persisted), with a filler where the channel makes them.
    private mutating func restoredEntry(
        _ record: SegmentRecord, bytes: SharedBytes?, discontinuity: Bool, position: Int
    ) -> WindowEntry {
        if record.hasBytes, let bytes {
            if let ticks = record.mediaEndTicks { renditions[position].lastMediaEnd = (ticks, record.mediaTimescale) }
            renditions[position].container = record.container
            renditions[position].gapFill = .idle
            renditions[position].inSlate = false
            return WindowEntry(
                msn: record.msn, durationMilliseconds: record.durationMilliseconds,
                programDateTimeMilliseconds: record.programDateTimeMilliseconds, discontinuity: discontinuity,
                content: .segment(bytes, startsWithKeyframe: record.startsWithKeyframe), container: record.container,
                initSectionVersion: record.initSectionVersion,
                iFrameRangeEnd: restoredIFrameRangeEnd(record, bytes: bytes, position: position))
        }
        let slot = Slot(
            programDateTimeMilliseconds: record.programDateTimeMilliseconds,
            durationMilliseconds: record.durationMilliseconds)
        let filler = fillerSegment(position: position, msn: record.msn, slot: slot)
        // A slate segment (`outage: slate`) is stored as a GAP record: made again from the same filler.
        let slate = configuration.outage == .slate && !renditions[position].isFollower ? filler : nil
        if slate != nil { renditions[position].inSlate = true }
        var entry = WindowEntry(
            msn: record.msn, durationMilliseconds: record.durationMilliseconds,
            programDateTimeMilliseconds: record.programDateTimeMilliseconds, discontinuity: discontinuity,
            content: slate.map { .segment($0, startsWithKeyframe: true) }
                ?? .gap(filler: configuration.gapResponse == .filler ? filler : nil),
            container: renditions[position].container ?? record.container,
            initSectionVersion: record.initSectionVersion)
        entry.isSlate = slate != nil
        return entry
    }
}

extension RenditionState {
    /// After a restore: what the rendition knows of its media (tracks for the multivariant playlist, bit rates,
    /// independence) comes from the restored segments.
    mutating func restoreFacts() {
        let segments = (window.retained.map(\.entry) + window.entries + held).filter { !$0.isGap }
        var statistics = RenditionStatistics()
        for entry in segments {
            guard let bytes = entry.bytes, entry.durationMilliseconds > 0 else { continue }
            statistics.totalBytes += Int64(bytes.count)
            statistics.totalMilliseconds += entry.durationMilliseconds
            statistics.peakBitrate = max(
                statistics.peakBitrate, Int(Int64(bytes.count) * 8 * 1000 / entry.durationMilliseconds))
            statistics.countIFrame(rangeEnd: entry.iFrameRangeEnd, milliseconds: entry.durationMilliseconds)
            if case .segment(_, let keyframe) = entry.content, !keyframe { allSegmentsIndependent = false }
        }
        self.statistics.totalBytes = statistics.totalBytes
        self.statistics.totalMilliseconds = statistics.totalMilliseconds
        self.statistics.peakBitrate = statistics.peakBitrate
        self.statistics.iFramePeakBitrate = statistics.iFramePeakBitrate
        self.statistics.iFrameTotalBytes = statistics.iFrameTotalBytes
        self.statistics.iFrameTotalMilliseconds = statistics.iFrameTotalMilliseconds
        guard let newest = segments.last, let bytes = newest.bytes else { return }
        container = newest.container
        let initSection = newest.initSectionVersion.flatMap { initSections[$0]?.info }
        let probed = bytes.withUnsafeBytes { raw in
            Result { () throws(ProbeError) in try MediaProbe.probeSegment(raw, initSection: initSection) }
        }
        if case .success(let info) = probed {
            tracks = info.tracks
            closedCaptions.formUnion(info.closedCaptions)
        }
    }
}

/// What the restore cannot know when a reload re-opens a channel in a running origin (`Origin.reload`): the feeds
/// did not stop, so the next segment continues the timeline unless its timestamps say otherwise.
package struct FeedContinuity: Sendable {
    let pendingDiscontinuity: Bool
    let feed: FeedState
}

extension ChannelState {
    /// Each rendition's feed continuity, by name (read from the channel object a reload retires).
    package var feedContinuity: [String: FeedContinuity] {
        Dictionary(
            renditions.map {
                ($0.name, FeedContinuity(pendingDiscontinuity: $0.pendingDiscontinuity, feed: $0.feed))
            }, uniquingKeysWith: { first, _ in first })
    }

    /// Takes the feed continuity of the channel object this one replaces, instead of the restart's assumption (every
    /// feed stopped: a discontinuity at each rendition's next segment).
    package mutating func continueFeeds(_ continuity: [String: FeedContinuity]) {
        for position in renditions.indices {
            guard let facts = continuity[renditions[position].name] else { continue }
            renditions[position].pendingDiscontinuity = facts.pendingDiscontinuity
            renditions[position].feed = facts.feed
        }
    }
}
