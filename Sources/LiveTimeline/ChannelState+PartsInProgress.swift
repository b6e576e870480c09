import MediaProbe

/// What a Low-Latency rendition shows after its last listed segment: the parts of the segment in progress.
package struct PartsInProgress {
    package let msn: UInt64
    package let programDateTimeMilliseconds: Int64
    package let discontinuity: Bool
    package let parts: [PartEntry]
    /// Every part is there: the segment closed, but its slot waits for other renditions.
    package let complete: Bool
    package let initSectionVersion: Int?

    package var endMilliseconds: Int64 {
        programDateTimeMilliseconds + parts.reduce(0) { $0 + $1.durationMilliseconds }
    }
}

extension ChannelState {
    /// The segment whose parts follow the rendition's last listed segment: its first held entry (a closed segment,
    /// or a GAP, whose slot is still open), else its open segment. A rendition's parts of N+1 are listed only
    /// after N's URI line.
    package func partsInProgress(position: Int) -> PartsInProgress? {
        let rendition = renditions[position]
        guard let lastListed = rendition.window.lastMSN else { return nil }
        if let held = rendition.held.first {
            guard held.msn == lastListed + 1, let closed = rendition.recentParts[held.msn], !closed.parts.isEmpty
            else { return nil }
            return PartsInProgress(
                msn: held.msn, programDateTimeMilliseconds: held.programDateTimeMilliseconds,
                discontinuity: held.discontinuity || (slotClock.slots[held.msn]?.discontinuity ?? false),
                parts: closed.parts,
                complete: true, initSectionVersion: held.initSectionVersion)
        }
        guard let open = rendition.open, open.msn == lastListed + 1, !open.parts.isEmpty else { return nil }
        return PartsInProgress(
            msn: open.msn, programDateTimeMilliseconds: open.programDateTimeMilliseconds,
            discontinuity: open.discontinuity || (slotClock.slots[open.msn]?.discontinuity ?? false), parts: open.parts,
            complete: false,
            initSectionVersion: open.container == .fragmentedMP4Segment ? rendition.currentInitVersion : nil)
    }

    /// End of the rendition's newest listed part on the PDT timeline (its last listed segment's end without parts).
    package func lastPartEnd(position: Int) -> Int64? {
        partsInProgress(position: position)?.endMilliseconds
            ?? renditions[position].window.entries.last?.endMilliseconds
    }

    /// The rendition's last listed part (LAST-MSN, LAST-PART of its EXT-X-RENDITION-REPORT): of the segment in
    /// progress, else of its last listed segment; `part` is nil when that segment has no parts (WebVTT, or a segment
    /// pushed whole).
    package func lastListed(position: Int) -> (msn: UInt64, part: Int?)? {
        if let progress = partsInProgress(position: position) { return (progress.msn, progress.parts.count - 1) }
        guard let last = renditions[position].window.entries.last else { return nil }
        let count = renditions[position].recentParts[last.msn]?.parts.count ?? 0
        return (last.msn, count > 0 ? count - 1 : nil)
    }
}
