/// Catching up with the redundancy group after a restart (docs/redundancy.md, "Restart"): the slots an origin missed
/// while it was down are listed by its peers, which were fed meanwhile. Instead of closing them as GAPs at the first
/// tick (what a lone origin does), a restored channel holds them for up to `SharedTimeline.catchUpMilliseconds` while
/// the peer repairer fills them in order: a peer's segment with the peer's MSN, PDT and discontinuity flag
/// (`PeerPlacement`), a peer's GAP (or a slot that left the peer's window) as a GAP. Meanwhile the encoder's pushes are
/// refused with `catchingUp` (its live segment would otherwise take the oldest missing slot) and playlists are not
/// served (a player would see the window as it was before the restart). Catch-up ends as soon as no slot is left
/// whose deadline passed, or when its time is up: whatever is still missing then closes as a GAP, as before.
extension ChannelState {
    /// The channel holds slots missed while the origin was down for its peers to fill.
    func isCatchingUp(nowMilliseconds now: Int64) -> Bool {
        guard let until = catchUpUntilMilliseconds, now < until else { return false }
        return hasOverdueSlot(nowMilliseconds: now)
    }

    /// Ends catch-up when its time is up or no missed slot is left; true while it goes on.
    mutating func continueCatchUp(nowMilliseconds now: Int64) -> Bool {
        guard catchUpUntilMilliseconds != nil else { return false }
        if isCatchingUp(nowMilliseconds: now) { return true }
        catchUpUntilMilliseconds = nil
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
        joinsPeers = false
        catchUpUntilMilliseconds = peerWaitMilliseconds.map { now + $0 }
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
        if slots[msn] == nil { slots[msn] = slot }
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

/// Joining the redundancy group (docs/redundancy.md, "Joining late"): a channel's first slot in this run takes its
/// discontinuity sequence number from a peer that lists that MSN already, so an origin that starts minutes late lists
/// the same EXT-X-DISCONTINUITY-SEQUENCE as the peers that counted the discontinuities it never saw. The first slot
/// is held (nothing is listed yet) until the peer repairer settles it (`settleJoin`): the peer's number, or the
/// channel's own when no peer lists the MSN (origins starting together: each has nothing yet), or when the hold
/// (`SharedTimeline.catchUpMilliseconds`) has passed. Low-Latency channels list parts before their first slot closes,
/// so they do not wait.
extension ChannelState {
    /// True while the first slot of this run waits for the peers' discontinuity sequence (its wait starts now if it
    /// had not); ends the wait once its time is up.
    mutating func holdsFirstSlotForPeers(nowMilliseconds now: Int64) -> Bool {
        guard joinsPeers, closedThrough == nil, let wait = peerWaitMilliseconds else { return false }
        let since = joinHeldSinceMilliseconds ?? now
        joinHeldSinceMilliseconds = since
        if now < since + wait { return true }
        joinsPeers = false
        return false
    }

    /// Starts the wait for the peers' discontinuity sequence on a new state (a restore ends it).
    mutating func startJoin() {
        joinsPeers = configuration.lowLatency == nil && closedThrough == nil && peerWaitMilliseconds != nil
    }

    /// The slot held for the peers' discontinuity sequence: its MSN, its PDT, and a media rendition that filled it
    /// (whose playlist the peers are asked for); nil when none is held.
    package var joiningSlot: JoiningSlot? {
        guard joinsPeers, closedThrough == nil, joinHeldSinceMilliseconds != nil, let slot = slots[firstMSN],
            let rendition = renditions.first(where: { !$0.isFollower && $0.hasEntry(msn: firstMSN) })
        else { return nil }
        return JoiningSlot(
            rendition: rendition.name, msn: firstMSN, programDateTimeMilliseconds: slot.programDateTimeMilliseconds)
    }

    /// Ends the wait of the first slot: with `peerSequence`, the discontinuity sequence number a peer lists for slot
    /// `msn`, the channel counts on from it (never below its own count: a number once published never goes back);
    /// with nil, from its own. Publishes what is ready. nil when nothing was waiting (or `msn` is another slot).
    package mutating func settleJoin(msn: UInt64, peerSequence: UInt64?, nowMilliseconds now: Int64) -> IngestActions? {
        guard let joining = joiningSlot, joining.msn == msn else { return nil }
        joinsPeers = false
        if let peerSequence {
            let own = publishedDiscontinuityDomain ?? renditions.map(\.window.edgeDiscontinuitySequence).max() ?? 0
            let discontinuity = renditions.contains { $0.held.first?.msn == msn && $0.held.first!.discontinuity }
            // `publishSlot` adds the slot's own discontinuity to the domain before it.
            let before = peerSequence - (discontinuity && peerSequence > 0 ? 1 : 0)
            publishedDiscontinuityDomain = max(own, before)
        }
        _ = closeDueSlots(nowMilliseconds: now)
        return actions(publish: true, nowMilliseconds: now)
    }
}
