/// Catching up with the redundancy group after a restart (docs/redundancy.md, "Restart"): the slots an origin missed
/// while it was down are listed by its peers, which were fed meanwhile. Instead of closing them as GAPs at the first
/// tick (what a lone origin does), a restored channel holds them for up to `SharedTimeline.catchUpMilliseconds` while
/// the peer repairer fills them in order: a peer's segment with the peer's MSN, PDT and discontinuity flag
/// (`PeerPlacement`), a peer's GAP (or a slot that left the peer's window) as a GAP. Meanwhile the encoder's pushes are
/// refused with `catchingUp` (its live segment would otherwise take the oldest missing slot) and playlists are not
/// served (a player would see the window as it was before the restart). Catch-up ends as soon as no slot is left
/// whose deadline passed, or when its time is up: whatever is still missing then closes as a GAP, as before.
extension ChannelState {
    /// After a restart, the channel waits for its peers to fill the slots it missed (its playlists are not served).
    package var isCatchingUp: Bool { peers.catchUpUntilMilliseconds != nil }

    /// The channel holds slots missed while the origin was down for its peers to fill.
    func isCatchingUp(nowMilliseconds now: Int64) -> Bool {
        guard let until = peers.catchUpUntilMilliseconds, now < until else { return false }
        return hasOverdueSlot(nowMilliseconds: now)
    }

    /// Ends catch-up when its time is up or no missed slot is left; true while it goes on.
    mutating func continueCatchUp(nowMilliseconds now: Int64) -> Bool {
        guard peers.catchUpUntilMilliseconds != nil else { return false }
        if isCatchingUp(nowMilliseconds: now) { return true }
        peers.catchUpUntilMilliseconds = nil
        return false
    }

    /// How long the channel waits for its peers (catch-up, joining): `SharedTimeline.catchUpMilliseconds` on a
    /// channel its peers can repair; nil when it does not wait.
    var peerWaitMilliseconds: Int64? {
        guard configuration.repairsFromPeers, let wait = configuration.sharedTimeline?.catchUpMilliseconds, wait > 0
        else { return nil }
        return wait
    }

    /// Starts catch-up after a restore, on a channel whose peers can repair it; a restored channel does not join.
    mutating func startCatchUp(nowMilliseconds now: Int64) {
        peers.joinsPeers = false
        peers.catchUpUntilMilliseconds = peerWaitMilliseconds.map { now + $0 }
    }

    /// Some started media rendition's next slot is past its deadline: a tick would close it as a GAP now.
    private func hasOverdueSlot(nowMilliseconds now: Int64) -> Bool {
        renditions.contains { rendition in
            guard rendition.hasStarted, !rendition.isFollower, let last = rendition.lastMSN,
                let slot = slotOrGapSlot(last + 1)
            else { return false }
            return now >= deadline(for: slot, msn: last + 1)
        }
    }

    /// While catching up: the peer lists slot `msn` of `rendition` as a GAP, or no longer lists it (it left the
    /// peer's window): the rendition takes a GAP there, as the ingest loop would have written at the deadline, so the
    /// slots after it can be repaired. False (nothing changed) when not catching up or `msn` is not the rendition's
    /// next slot.
    package mutating func placePeerGap(
        rendition name: String, msn: UInt64, nowMilliseconds now: Int64
    ) -> IngestActions? {
        guard isCatchingUp(nowMilliseconds: now), let position = index[name],
            renditions[position].hasStarted, !renditions[position].isFollower,
            renditions[position].lastMSN.map({ $0 + 1 }) == msn, let slot = slotOrGapSlot(msn)
        else { return nil }
        writeGap(position: position, msn: msn, slot: slot, nowMilliseconds: now)
        if slotClock.slots[msn] == nil { slotClock.slots[msn] = slot }
        closeFilledSlots(nowMilliseconds: now)
        return actions(publish: true, nowMilliseconds: now)
    }

    /// The refusal of an encoder's push while the channel catches up.
    func catchingUpRefusal(rendition name: String) -> IngestError {
        IngestError(
            .catchingUp,
            "channel '\(configuration.name)' is catching up with its peers after a restart (rendition '\(name)'): "
                + "the slots missed while it was down are being repaired; push again in a second")
    }
}

/// Where a peer of the redundancy group lists the segment fetched from it: the slot the segment fills here, with the
/// peer's PDT and discontinuity flag, so both origins list the same entry.
public struct PeerPlacement: Sendable, Hashable {
    /// The slot's MSN.
    public let msn: UInt64
    /// The slot's PDT on the peer (the same timeline: checked before the fetch).
    public let programDateTimeMilliseconds: Int64
    /// The peer lists EXT-X-DISCONTINUITY before the segment.
    public let discontinuity: Bool

    public init(msn: UInt64, programDateTimeMilliseconds: Int64, discontinuity: Bool) {
        self.msn = msn
        self.programDateTimeMilliseconds = programDateTimeMilliseconds
        self.discontinuity = discontinuity
    }
}
