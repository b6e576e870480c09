import HLSPlaylist
package import MediaProbe
package import SharedBytes

// Low-Latency HLS in the ingest loop: a streamed push opens its slot at its first part, lists parts as they are
// cut, and closes the segment (the same steps as `accept`) when its body ends. During an outage the tick lists GAP
// parts on the shared clock; a push that stops delivering is closed at its last part.
extension ChannelState {
    /// PART-TARGET in milliseconds; nil for a regular channel.
    package var partTargetMilliseconds: Int64? { configuration.lowLatency?.partTargetMilliseconds }

    /// The longest a Low-Latency segment may be (ms): TD + 0.5 s (rule 7).
    var longestSegmentMilliseconds: Int64 { Int64(targetDuration ?? 2) * 1000 + 500 }

    /// True for a rendition whose playlist has parts: a Low-Latency channel's rendition that is not WebVTT and
    /// takes streamed pushes (one that only ever pushed whole segments has no parts to offer: it stays regular).
    package func isLowLatency(position: Int) -> Bool {
        configuration.lowLatency != nil && !isWebVTT(position: position)
            && renditions[position].lastPartAtMilliseconds > 0
    }

    /// A media rendition of a Low-Latency channel in outage: started, no push open, and its newest entry is a GAP
    /// (or it is writing GAP parts). It holds no slot open (decision 3).
    package func isInLowLatencyOutage(_ rendition: RenditionState) -> Bool {
        guard configuration.lowLatency != nil, !rendition.isFollower, rendition.hasStarted else { return false }
        if let open = rendition.open { return !open.pushed }
        return rendition.lastEntry?.isGap ?? false
    }

    /// A media rendition that went past slot `msn` without filling it (it returned from an outage into a later
    /// slot): it gets a GAP there when the slot closes, and does not hold it open.
    func skipped(_ rendition: RenditionState, msn: UInt64) -> Bool {
        guard configuration.lowLatency != nil, !rendition.isFollower, !rendition.hasEntry(msn: msn) else {
            return false
        }
        return rendition.open.map { $0.pushed && $0.msn > msn } ?? false || rendition.held.contains { $0.msn > msn }
    }

    /// Opens the rendition's next segment for a streamed push at its first part: takes its MSN and fixes the slot's
    /// PDT and discontinuity. Refused (`concurrentPush`) while the rendition has a segment open. Nothing is listed
    /// yet: list `firstPart` (and every later part) with `appendPart`.
    ///
    /// The slot is the rendition's next one; a rendition that starts a discontinuity (returning from an outage or a
    /// restart, a new timeline) takes the first slot no rendition has opened, so the discontinuity is at the same
    /// MSN everywhere and before that slot's first part. Its PDT follows the previous slot, or is anchored on the
    /// clock (minus the first part's duration) for a first or returning feed.
    package mutating func openSegment(
        rendition name: String, firstPart: CutPart, container: MediaContainer, nowMilliseconds now: Int64
    ) -> Result<OpenSegmentTicket, IngestError> {
        guard let position = index[name] else { return .failure(.unknownRendition(configuration.name, name)) }
        func refuse(_ error: IngestError) -> Result<OpenSegmentTicket, IngestError> {
            .failure(countRejection(error, position: position))
        }
        guard configuration.lowLatency != nil, container != .webVTT, !renditions[position].isFollower else {
            return refuse(.unprocessable("rendition '\(name)' has no parts: push whole segments"))
        }
        if isCatchingUp(nowMilliseconds: now) { return refuse(catchingUpRefusal(rendition: name)) }
        if let error = implausiblePart(firstPart, rendition: name) { return refuse(error) }
        if let open = renditions[position].open, open.pushed {
            return refuse(
                IngestError(
                    .concurrentPush,
                    "a push to rendition '\(name)' is still arriving (msn \(open.msn)): push one segment at a time"))
        }
        if container == .fragmentedMP4Segment, renditions[position].currentInitVersion == nil {
            return refuse(.unprocessable("fMP4 segment before any initialization section: push init.mp4 first"))
        }
        let facts = renditions[position].facts
        let timescale = max(firstPart.decodeTime.timescale, 1)
        let anchored = openingTime(
            arrivalMilliseconds: now - Self.milliseconds(firstPart.durationTicks, timescale: timescale),
            mediaStart: firstPart.decodeTime)
        var start = firstPart.decodeTime.ticks
        var continuous = false
        if let last = facts.lastMediaEnd, last.timescale == timescale {
            if container == .mpegTS { start = MPEGTimestamp.unwrap(start, near: last.ticks) }
            continuous = abs(start - last.ticks) <= timescale / 4
        }
        let writingGapParts = renditions[position].open != nil
        let returning = facts.lastWasGap || writingGapParts
        let formatChanged = facts.container.map { $0 != container } ?? false
        var discontinuity =
            facts.pendingDiscontinuity || (facts.hasStarted && (formatChanged || !continuous || returning))
        var msn: UInt64
        if let gap = renditions[position].open {
            // Its GAP parts of that slot are listed: they close as a GAP entry with the slot; the push goes on.
            renditions[position].recentParts[gap.msn] = ClosedParts(
                parts: gap.parts, endMilliseconds: gap.programDateTimeMilliseconds + gap.durationMilliseconds)
            renditions[position].open = nil
            msn = gap.msn + 1
        } else {
            msn = facts.lastMSN.map { $0 + 1 } ?? joiningMSN(startMilliseconds: anchored)
        }
        if facts.hasStarted, discontinuity {
            while let slot = slotClock.slots[msn], slot.opened, !slot.discontinuity { msn += 1 }
        }
        var slot: Slot
        if let existing = slotClock.slots[msn] {
            slot = existing
            if existing.opened { discontinuity = discontinuity || existing.discontinuity }
        } else {
            slot = Slot(
                programDateTimeMilliseconds: openingProgramDateTime(
                    msn: msn, anchoredAt: anchored, resumes: facts.hasStarted && discontinuity),
                durationMilliseconds: 0)
        }
        if slot.programDateTimeMilliseconds > now + Int64(targetDuration ?? 2) * 1000 {
            let start = ProgramDateTime(millisecondsSince1970: slot.programDateTimeMilliseconds).formatted
            return refuse(
                IngestError(
                    .aheadOfClock,
                    "segment for msn \(msn) would start at \(start), "
                        + "more than one target duration ahead of the clock: push in real time"))
        }
        if !slot.opened {
            slot.opened = true
            slot.discontinuity = discontinuity
        }
        slotClock.slots[msn] = slot
        renditions[position].open = OpenSegment(
            msn: msn, programDateTimeMilliseconds: slot.programDateTimeMilliseconds, discontinuity: discontinuity,
            pushed: true, container: container, mediaStart: start, timescale: timescale)
        renditions[position].lastPartAtMilliseconds = now
        let ticket = OpenSegmentTicket(rendition: name, msn: msn)
        lowLatency.closedTickets[ticket] = nil
        journal.dirty = true
        return .success(ticket)
    }

    /// The PDT of a slot a streamed push opens: the previous slot's end (an open previous slot has no length yet:
    /// its nominal length), at the clock for a first or returning feed.
    private func openingProgramDateTime(msn: UInt64, anchoredAt anchored: Int64, resumes: Bool) -> Int64 {
        if msn > 0, let previous = slotClock.slots[msn - 1] {
            let end =
                previous.durationMilliseconds > 0 || !previous.opened
                ? previous.endMilliseconds
                : previous.programDateTimeMilliseconds + configuration.segmentDurationMilliseconds
            return resumes ? max(end, anchored) : end
        }
        return max(anchored, journal.minimumProgramDateTime ?? anchored)
    }

    /// Lists the next part of an open segment. Refused with `segmentTooLong` when the segment would pass TD + 0.5 s
    /// (it is closed at its last listed part; the refusal's changes are published by the next tick), and with the
    /// reason the ingest loop closed the segment early (`pushStalled`, `segmentTooLong`).
    package mutating func appendPart(
        _ part: CutPart, ticket: OpenSegmentTicket, nowMilliseconds now: Int64
    ) -> Result<IngestActions, IngestError> {
        guard let position = index[ticket.rendition] else {
            return .failure(.unknownRendition(configuration.name, ticket.rendition))
        }
        if let reason = lowLatency.closedTickets[ticket] { return .failure(Self.closedError(reason, ticket: ticket)) }
        guard var open = renditions[position].open, open.pushed, open.msn == ticket.msn else {
            return .failure(.unprocessable("no segment open for msn \(ticket.msn) of rendition '\(ticket.rendition)'"))
        }
        guard part.index == open.parts.count else {
            return .failure(.unprocessable("part \(part.index) of msn \(ticket.msn) after \(open.parts.count) parts"))
        }
        if let error = implausiblePart(part, rendition: ticket.rendition) {
            return .failure(countRejection(error, position: position))
        }
        let ticks = open.ticks + Self.ticks(part.durationTicks, from: part.decodeTime.timescale, to: open.timescale)
        let endMilliseconds = Self.milliseconds(ticks, timescale: open.timescale)
        if endMilliseconds > longestSegmentMilliseconds {
            _ = closeAtLastPart(position: position, nowMilliseconds: now)
            lowLatency.closedTickets[ticket] = .segmentTooLong
            lowLatency.pendingPublish = true
            return .failure(countRejection(Self.closedError(.segmentTooLong, ticket: ticket), position: position))
        }
        open.parts.append(
            PartEntry(
                index: part.index, durationMilliseconds: endMilliseconds - open.durationMilliseconds,
                independent: part.independent, content: .bytes(part.bytes)))
        open.ticks = ticks
        renditions[position].open = open
        renditions[position].lastPartAtMilliseconds = now
        renditions[position].lastAppendMilliseconds = now
        touch(ticket.rendition)
        return .success(actions(publish: true, nowMilliseconds: now))
    }

    /// Closes an open segment with its whole bytes (exactly its parts) and probe: today's `accept` with the MSN
    /// already given. Bytes past the listed parts become its last part. EXTINF is the sum of the parts' durations
    /// (the last part takes the rounding carry, or the slot's duration when another rendition fixed it).
    package mutating func closeSegment(
        ticket: OpenSegmentTicket, bytes: SharedBytes, info: SegmentInfo, stored: StoredSegment?,
        nowMilliseconds now: Int64
    ) -> (result: Result<WindowEntry, IngestError>, actions: IngestActions) {
        guard let position = index[ticket.rendition] else {
            return (
                .failure(.unknownRendition(configuration.name, ticket.rendition)),
                actions(publish: false, nowMilliseconds: now)
            )
        }
        if let reason = lowLatency.closedTickets.removeValue(forKey: ticket) {
            return (.failure(Self.closedError(reason, ticket: ticket)), actions(publish: false, nowMilliseconds: now))
        }
        guard var open = renditions[position].open, open.pushed, open.msn == ticket.msn else {
            return (
                .failure(.unprocessable("no segment open for msn \(ticket.msn) of rendition '\(ticket.rendition)'")),
                actions(publish: false, nowMilliseconds: now)
            )
        }
        func refuse(_ error: IngestError) -> (result: Result<WindowEntry, IngestError>, actions: IngestActions) {
            let error = countRejection(error, position: position)
            let closed = closeAtLastPart(position: position, nowMilliseconds: now)
            return (.failure(error), actions(publish: closed, nowMilliseconds: now))
        }
        let listedBytes = open.parts.reduce(0) { $0 + ($1.bytes?.count ?? 0) }
        guard bytes.count >= listedBytes else {
            return refuse(.unprocessable("segment of \(bytes.count) bytes is shorter than its listed parts"))
        }
        if let error = settleRole(rendition: ticket.rendition, tracks: info.tracks) { return refuse(error) }
        if let error = unacceptable(info, position: position) { return refuse(error) }
        // The probe's duration of the whole segment (the EXTINF) is bounded as a part's is.
        let totalTicks = Self.ticks(info.duration.ticks, from: info.duration.timescale, to: open.timescale)
        if let error = implausibleDuration(
            totalTicks, timescale: open.timescale, of: "segment msn \(open.msn) of rendition '\(ticket.rendition)'")
        {
            return refuse(error)
        }
        if bytes.count > listedBytes {
            let rest = bytes.withUnsafeBytes {
                SharedBytes(copying: UnsafeRawBufferPointer(rebasing: $0[listedBytes...]))
            }
            let ticks = max(totalTicks, open.ticks)
            let end = Self.milliseconds(ticks, timescale: open.timescale)
            guard end <= longestSegmentMilliseconds else {
                let error = Self.closedError(.segmentTooLong, ticket: ticket)
                return refuse(error)
            }
            open.parts.append(
                PartEntry(
                    index: open.parts.count, durationMilliseconds: end - open.durationMilliseconds,
                    independent: false, content: .bytes(rest)))
            open.ticks = ticks
        }
        let facts = renditions[position].facts
        let existing = slotClock.slots[open.msn].flatMap { $0.durationMilliseconds > 0 ? $0 : nil }
        let extinf = Self.roundedExtinf(info.duration, carry: facts.roundingCarry, existingSlot: existing)
        let entry = commit(
            open, position: position, bytes: bytes, info: info, extinf: extinf, stored: stored, nowMilliseconds: now)
        return (.success(entry), actions(publish: true, nowMilliseconds: now))
    }

    /// The push ended without a complete segment (disconnect, stall, error, store failure): the segment is closed
    /// at its last listed part if any (else nothing was listed and the slot closes by the usual rules).
    /// - Parameter stored: where the store holds exactly the listed parts' bytes (`listedBytes`); with a store and
    ///   without it, the short segment is not listed (its slot closes as a GAP by the usual rules).
    package mutating func abandonSegment(
        ticket: OpenSegmentTicket, stored: StoredSegment? = nil, nowMilliseconds now: Int64
    ) -> IngestActions {
        lowLatency.closedTickets[ticket] = nil
        guard let position = index[ticket.rendition], let open = renditions[position].open, open.pushed,
            open.msn == ticket.msn
        else { return actions(publish: false, nowMilliseconds: now) }
        let closed = closeAtLastPart(position: position, stored: stored, nowMilliseconds: now)
        return actions(publish: closed, nowMilliseconds: now)
    }

    /// The bytes of the open segment's listed parts and its container (what `abandonSegment` would list), for the
    /// store to take first; nil when the ticket's segment is not open or lists no part.
    package func listedBytes(ticket: OpenSegmentTicket) -> (bytes: SharedBytes, container: MediaContainer)? {
        guard let position = index[ticket.rendition], let open = renditions[position].open, open.pushed,
            open.msn == ticket.msn, !open.parts.isEmpty
        else { return nil }
        return (Self.joined(open.parts), open.container)
    }

    private static func joined(_ parts: [PartEntry]) -> SharedBytes {
        var joined: [UInt8] = []
        joined.reserveCapacity(parts.reduce(0) { $0 + ($1.bytes?.count ?? 0) })
        for part in parts { part.bytes?.withUnsafeBytes { joined.append(contentsOf: $0) } }
        return SharedBytes(joined)
    }

    /// Closes the rendition's open push at its last listed part: a short segment made of exactly the listed parts.
    /// Listed means durable: on a channel with a store, the segment is listed only when `stored` holds exactly
    /// those bytes; otherwise its parts leave the playlist and its slot closes as a GAP by the usual rules (as it
    /// is after a restart). Returns false when nothing changed.
    mutating func closeAtLastPart(
        position: Int, stored: StoredSegment? = nil, nowMilliseconds now: Int64
    ) -> Bool {
        guard let open = renditions[position].open, open.pushed else { return false }
        renditions[position].open = nil
        guard !open.parts.isEmpty else { return false }
        let bytes = Self.joined(open.parts)
        guard !store.keepsRecords || stored.map({ Int($0.length) == bytes.count }) == true else {
            touch(renditions[position].name)
            return true
        }
        let info = SegmentInfo(
            container: open.container, tracks: renditions[position].tracks,
            startTime: MediaTime(ticks: open.mediaStart, timescale: open.timescale),
            duration: MediaTime(ticks: open.ticks, timescale: open.timescale),
            startsWithKeyframe: open.parts[0].independent, byteCount: bytes.count)
        let existing = slotClock.slots[open.msn].flatMap { $0.durationMilliseconds > 0 ? $0 : nil }
        let extinf = Self.roundedExtinf(
            info.duration, carry: renditions[position].roundingCarry, existingSlot: existing)
        _ = commit(
            open, position: position, bytes: bytes, info: info, extinf: extinf, stored: stored, nowMilliseconds: now)
        return true
    }

    /// Closes a push that stopped delivering: at its last part; its later steps are refused with `pushStalled`.
    mutating func closeStalled(position: Int, nowMilliseconds now: Int64) {
        guard let open = renditions[position].open, open.pushed else { return }
        lowLatency.closedTickets[OpenSegmentTicket(rendition: renditions[position].name, msn: open.msn)] = .pushStalled
        _ = closeAtLastPart(position: position, nowMilliseconds: now)
        lowLatency.pendingPublish = true
    }

    /// Holds the closed segment for its slot as `accept` does (its parts kept for listing), and closes what it
    /// completes. The last part takes the difference between EXTINF and the parts' sum.
    private mutating func commit(
        _ open: OpenSegment, position: Int, bytes: SharedBytes, info: SegmentInfo,
        extinf: (milliseconds: Int64, carry: (value: Int64, timescale: Int64)), stored: StoredSegment?,
        nowMilliseconds now: Int64
    ) -> WindowEntry {
        var parts = open.parts
        let difference = extinf.milliseconds - open.durationMilliseconds
        if difference != 0, let last = parts.last {
            parts[parts.count - 1] = PartEntry(
                index: last.index, durationMilliseconds: max(last.durationMilliseconds + difference, 1),
                independent: last.independent, content: last.content)
        }
        let milliseconds = parts.reduce(0) { $0 + $1.durationMilliseconds }
        let msn = open.msn
        var slot =
            slotClock.slots[msn]
            ?? Slot(
                programDateTimeMilliseconds: open.programDateTimeMilliseconds, durationMilliseconds: 0, opened: true)
        if slot.durationMilliseconds == 0 { slot.durationMilliseconds = milliseconds }
        let entry = WindowEntry(
            msn: msn, durationMilliseconds: milliseconds, programDateTimeMilliseconds: open.programDateTimeMilliseconds,
            discontinuity: open.discontinuity, content: .segment(bytes, startsWithKeyframe: info.startsWithKeyframe),
            container: info.container,
            initSectionVersion: info.container == .fragmentedMP4Segment ? renditions[position].currentInitVersion : nil,
            iFrameRangeEnd: info.iFrameRangeEnd)
        append(
            entry, bytes: bytes.count, to: position, info: info, mediaStart: open.mediaStart, carry: extinf.carry,
            nowMilliseconds: now)
        slotClock.slots[msn] = slot
        renditions[position].recentParts[msn] = ClosedParts(parts: parts, endMilliseconds: entry.endMilliseconds)
        renditions[position].open = nil
        queueSegmentRecord(entry, position: position, info: info, stored: stored)
        touch(renditions[position].name)
        closeFilledSlots(nowMilliseconds: now)
        return entry
    }

    private static func closedError(_ reason: IngestError.Reason, ticket: OpenSegmentTicket) -> IngestError {
        switch reason {
        case .pushStalled:
            IngestError(
                .pushStalled,
                "push to rendition '\(ticket.rendition)' delivered nothing for too long: msn \(ticket.msn) was "
                    + "closed at its last part and the rest of the body discarded")
        default:
            IngestError(
                reason,
                "segment msn \(ticket.msn) of rendition '\(ticket.rendition)' ran past the target duration: it was "
                    + "closed at its last part; cut segments of at most the target duration + 0.5 s")
        }
    }

    /// `ticks` from one timescale to another, rounded to the nearest; clamped instead of overflowing.
    static func ticks(_ ticks: Int64, from source: Int64, to target: Int64) -> Int64 {
        MediaTime.rescale(ticks, from: source, to: target)
    }

    /// `ticks` in milliseconds, rounded to the nearest; clamped instead of overflowing.
    static func milliseconds(_ ticks: Int64, timescale: Int64) -> Int64 {
        MediaTime.rescale(ticks, from: max(timescale, 1), to: 1000)
    }

    /// Why a duration (`ticks` of 1/`timescale` s) of a streamed push is one no stream has: negative (its decode
    /// times go back) or longer than any segment may be (`maximumSegmentSeconds`, or the target duration when
    /// longer). Checked before any arithmetic on it. `what` names the part or segment.
    func implausibleDuration(_ ticks: Int64, timescale: Int64, of what: String) -> IngestError? {
        let timescale = max(timescale, 1)
        if ticks < 0 {
            return .implausibleTiming(
                "\(what) has a negative duration (\(ticks) ticks of 1/\(timescale) s): its decode times go back")
        }
        let longest = Int64(max(Self.maximumSegmentSeconds, targetDuration ?? 0)) * 1000
        let milliseconds = Self.milliseconds(ticks, timescale: timescale)
        guard milliseconds > longest else { return nil }
        return .implausibleTiming(
            "\(what) lasts \(Double(milliseconds) / 1000) s (\(ticks) ticks of 1/\(timescale) s), longer than the "
                + "\(longest / 1000) s any segment may last: its decode times jump")
    }

    /// `implausibleDuration` of a cut part.
    func implausiblePart(_ part: CutPart, rendition name: String) -> IngestError? {
        implausibleDuration(
            part.durationTicks, timescale: part.decodeTime.timescale,
            of: "part \(part.index) of the push to rendition '\(name)'")
    }

    // MARK: The tick: stalled pushes, GAP parts, retention

    /// Closes stalled pushes, lists GAP parts for renditions in outage, releases parts past their retention.
    /// Returns true if anything changed.
    mutating func tickLowLatency(nowMilliseconds now: Int64) -> Bool {
        guard let partTarget = partTargetMilliseconds else { return false }
        var changed = lowLatency.pendingPublish
        lowLatency.pendingPublish = false
        let stallAfter = max(1000, 3 * partTarget)
        for position in renditions.indices {
            guard let open = renditions[position].open, open.pushed,
                now - renditions[position].lastPartAtMilliseconds >= stallAfter
            else { continue }
            closeStalled(position: position, nowMilliseconds: now)
            changed = true
        }
        for position in renditions.indices
        where isLowLatency(position: position) && !renditions[position].isFollower
            && renditions[position].hasStarted && renditions[position].lastPartAtMilliseconds > 0
        {
            if addGapParts(position: position, partTarget: partTarget, nowMilliseconds: now) { changed = true }
        }
        if changed { closeFilledSlots(nowMilliseconds: now) }
        for position in renditions.indices where pruneParts(position: position) {
            touch(renditions[position].name)
            changed = true
        }
        return changed
    }

    /// Lists GAP parts of PART-TARGET each on the shared clock for a rendition whose feed is missing, from
    /// max(slot start + PT, last part + 2 PT) (section 5); a slot covered by them is held as a GAP entry.
    private mutating func addGapParts(position: Int, partTarget: Int64, nowMilliseconds now: Int64) -> Bool {
        guard renditions[position].open?.pushed != true,
            now >= renditions[position].lastPartAtMilliseconds + 2 * partTarget
        else { return false }
        var changed = false
        for _ in 0..<10_000 {
            guard let msn = renditions[position].open?.msn ?? renditions[position].lastMSN.map({ $0 + 1 }) else {
                break
            }
            var slot: Slot
            if let existing = slotClock.slots[msn] {
                slot = existing
            } else {
                guard msn > 0, let previous = slotClock.slots[msn - 1], previous.durationMilliseconds > 0 else { break }
                slot = Slot(
                    programDateTimeMilliseconds: previous.endMilliseconds,
                    durationMilliseconds: gapSlotMilliseconds(previous))
            }
            // A slot opened by a push has no length until it closes: GAP parts up to the longest it can get.
            let length = slot.durationMilliseconds > 0 ? slot.durationMilliseconds : longestSegmentMilliseconds
            var open =
                renditions[position].open
                ?? OpenSegment(
                    msn: msn, programDateTimeMilliseconds: slot.programDateTimeMilliseconds, discontinuity: false,
                    pushed: false, container: renditions[position].container ?? .mpegTS, mediaStart: 0,
                    timescale: 1000)
            let covered = open.durationMilliseconds
            if covered >= length {
                guard slot.durationMilliseconds > 0 else { break }
                renditions[position].open = open
                slotClock.slots[msn] = slot
                writeGap(position: position, msn: msn, slot: slot, nowMilliseconds: now)
                changed = true
                continue
            }
            let duration = min(partTarget, length - covered)
            guard now >= slot.programDateTimeMilliseconds + covered + duration else { break }
            if !slot.opened {
                slot.opened = true
                slotClock.slots[msn] = slot
            } else if slotClock.slots[msn] == nil {
                slotClock.slots[msn] = slot
            }
            open.parts.append(
                PartEntry(index: open.parts.count, durationMilliseconds: duration, independent: false, content: .gap))
            renditions[position].open = open
            touch(renditions[position].name)
            changed = true
        }
        return changed
    }

    /// The GAP parts of a GAP entry written for `slot`: those listed so far (open, or kept when the feed returned
    /// in a later slot), trimmed or completed with parts of PART-TARGET so they add up to the slot's duration.
    mutating func finishGapParts(position: Int, msn: UInt64, slot: Slot) {
        guard let partTarget = partTargetMilliseconds, isLowLatency(position: position),
            !renditions[position].isFollower
        else { return }
        let listed: [PartEntry]
        if let open = renditions[position].open, !open.pushed, open.msn == msn {
            listed = open.parts
            renditions[position].open = nil
        } else if let kept = renditions[position].recentParts[msn] {
            listed = kept.parts
        } else {
            guard renditions[position].lastPartAtMilliseconds > 0 else { return }
            listed = []
        }
        let length = slot.durationMilliseconds
        var parts: [PartEntry] = []
        var covered: Int64 = 0
        for part in listed where covered < length {
            let duration = min(part.durationMilliseconds, length - covered)
            parts.append(
                PartEntry(index: parts.count, durationMilliseconds: duration, independent: false, content: .gap))
            covered += duration
        }
        while covered < length {
            let duration = min(partTarget, length - covered)
            parts.append(
                PartEntry(index: parts.count, durationMilliseconds: duration, independent: false, content: .gap))
            covered += duration
        }
        renditions[position].recentParts[msn] = ClosedParts(parts: parts, endMilliseconds: slot.endMilliseconds)
    }

    /// Releases the parts of segments that left the playlist (ended more than 3 TD before the newest part's end)
    /// more than 3 TD ago. Returns true if any were released.
    private mutating func pruneParts(position: Int) -> Bool {
        guard !renditions[position].recentParts.isEmpty else { return false }
        let horizon = Int64(targetDuration ?? 2) * 6000
        guard let end = lastPartEnd(position: position) else { return false }
        guard renditions[position].recentParts.values.contains(where: { end - $0.endMilliseconds > horizon }) else {
            return false
        }
        let before = renditions[position].recentParts.count
        renditions[position].recentParts = renditions[position].recentParts.filter {
            end - $0.value.endMilliseconds <= horizon
        }
        return renditions[position].recentParts.count != before
    }
}
