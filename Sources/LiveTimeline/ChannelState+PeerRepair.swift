/// A slot a media rendition has no entry for while its deadline approaches: a peer of the redundancy group that was
/// fed may list it, and the segment fetched from the peer fills the slot as if pushed (docs/redundancy.md).
public struct MissingSlot: Sendable, Hashable {
    /// The rendition that lacks the slot.
    public let rendition: String
    /// The slot's MSN.
    public let msn: UInt64
    /// The slot's PDT on this origin's timeline (a peer on the same timeline lists the same).
    public let programDateTimeMilliseconds: Int64
    /// When the ingest loop closes the slot as a GAP for the rendition: a repair after it comes too late.
    public let deadlineMilliseconds: Int64
}

extension ChannelState {
    /// The next slot of every started media rendition whose segment is overdue: its slot (or, when no rendition
    /// opened it, the slot after the newest one, of the nominal length) ended `lateness` ms ago or more and its
    /// deadline has not passed. Streamed Low-Latency pushes in progress are not overdue. While the channel catches
    /// up after a restart, the slots missed while the origin was down are held until the catch-up ends.
    package func missingSlots(nowMilliseconds now: Int64, lateness: Int64) -> [MissingSlot] {
        let heldUntil = isCatchingUp(nowMilliseconds: now) ? peers.catchUpUntilMilliseconds : nil
        var missing: [MissingSlot] = []
        for rendition in renditions where rendition.hasStarted && !rendition.isFollower && rendition.open == nil {
            guard let last = rendition.lastMSN, let slot = slotOrGapSlot(last + 1) else { continue }
            let msn = last + 1
            let length =
                slot.durationMilliseconds > 0 ? slot.durationMilliseconds : configuration.segmentDurationMilliseconds
            let deadline = max(deadline(for: slot, msn: msn), heldUntil ?? .min)
            guard now >= slot.programDateTimeMilliseconds + length + lateness, now < deadline else { continue }
            missing.append(
                MissingSlot(
                    rendition: rendition.name, msn: msn, programDateTimeMilliseconds: slot.programDateTimeMilliseconds,
                    deadlineMilliseconds: deadline))
        }
        return missing
    }
}
