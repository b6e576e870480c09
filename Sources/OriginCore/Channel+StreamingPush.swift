import LiveTimeline
import MediaProbe
import Persistence
import SharedBytes

// The channel's side of a streamed push (`StreamingPush`): each step is one pass under `Channel.state`, carried
// out (journal, store records, publish) as `accept` carries out a whole push.
extension Channel {
    /// Starts a streamed push into one of the channel's renditions without an `Origin` (the test source's way in):
    /// the rendition must exist; nothing guards against a second push to it (the caller pushes one at a time).
    public func beginStreamingPush(rendition: String, fragmented: Bool) -> StreamingPush? {
        guard let lowLatency = configuration.lowLatency, hasRendition(rendition) else { return nil }
        let initSection = fragmented ? currentInitSection(rendition) : nil
        if fragmented, initSection == nil { return nil }
        return StreamingPush(
            channelName: name, rendition: rendition, clock: clock, lowLatency: lowLatency, initSection: initSection,
            limit: Int.max, channel: self, resolveChannel: { [self] () throws(IngestError) -> Channel in self },
            ended: { _ in })
    }

    /// Lists a part cut from a streamed push in one pass under the state lock: opens the segment at its first part
    /// (`ticket` nil), lists the part, then writes the journal and store records and publishes.
    /// - Returns: the open segment's ticket; a refusal (the segment, if it was open, closed at its last listed part).
    func listStreamedPart(
        _ part: CutPart, rendition: String, ticket: OpenSegmentTicket?, container: MediaContainer
    ) -> Result<OpenSegmentTicket, IngestError> {
        // The open segment belongs to this object: a retired one refuses (the push is retried on the successor).
        gate.enter { listStreamedPartHere(part, rendition: rendition, ticket: ticket, container: container) }
            ?? .failure(reloadingError)
    }

    private func listStreamedPartHere(
        _ part: CutPart, rendition: String, ticket: OpenSegmentTicket?, container: MediaContainer
    ) -> Result<OpenSegmentTicket, IngestError> {
        let now = clock.nowMilliseconds()
        return state.withLock { state -> Result<OpenSegmentTicket, IngestError> in
            let (result, failure) = pass(&state, nowMilliseconds: now) {
                state -> (Result<OpenSegmentTicket, IngestError>, IngestActions) in
                let open: OpenSegmentTicket
                if let ticket {
                    open = ticket
                } else {
                    switch state.openSegment(
                        rendition: rendition, firstPart: part, container: container, nowMilliseconds: now)
                    {
                    case .success(let ticket): open = ticket
                    case .failure(let error): return (.failure(error), IngestActions(publish: false))
                    }
                }
                switch state.appendPart(part, ticket: open, nowMilliseconds: now) {
                case .success(let actions): return (.success(open), actions)
                case .failure(let error):
                    return (.failure(error), state.abandonSegment(ticket: open, nowMilliseconds: now))
                }
            }
            guard let failure else { return result }
            // Undone: the part is not listed; the segment, if it was open, closes at its last listed part.
            if let ticket {
                pass(&state, nowMilliseconds: now) { $0.abandonSegment(ticket: ticket, nowMilliseconds: now) }
            }
            return .failure(.notPersisted("\(rendition): part's store records", failure))
        }
    }

    /// Closes a streamed segment with its whole bytes (exactly its listed parts): staged in the store outside the
    /// lock, then closed, journaled, recorded and published as `accept` does with a whole push; encrypted after.
    /// A store failure closes the segment at its last part, unrecorded (`notPersisted`, 507).
    func closeStreamedSegment(
        ticket: OpenSegmentTicket, bytes: SharedBytes, info: SegmentInfo
    ) throws(IngestError) -> IngestReceipt {
        let closed = try gate.enter { () throws(IngestError) in
            try closeStreamedSegmentHere(ticket: ticket, bytes: bytes, info: info)
        }
        guard let closed else { throw reloadingError }
        return closed
    }

    private func closeStreamedSegmentHere(
        ticket: OpenSegmentTicket, bytes: SharedBytes, info: SegmentInfo
    ) throws(IngestError) -> IngestReceipt {
        let rendition = ticket.rendition
        let stored: StoredSegment?
        do throws(IngestError) {
            stored = try stage(bytes, rendition: rendition, container: info.container)
        } catch {
            abandonStreamedSegment(ticket: ticket)
            throw recordRejection(rendition: rendition, error)
        }
        let now = clock.nowMilliseconds()
        let (result, failure) = state.withLock { state in
            let (result, failure) = pass(&state, nowMilliseconds: now) { state in
                state.closeSegment(ticket: ticket, bytes: bytes, info: info, stored: stored, nowMilliseconds: now)
            }
            // Undone: the segment is still open; it closes at its last listed part.
            if failure != nil {
                pass(&state, nowMilliseconds: now) { $0.abandonSegment(ticket: ticket, nowMilliseconds: now) }
            }
            return (result, failure)
        }
        if let failure {
            throw recordRejection(rendition: rendition, .notPersisted("\(rendition): segment's index record", failure))
        }
        let accepted = try receipt(result, rendition: rendition)
        if let msn = accepted.msn { encryptAccepted(rendition: rendition, msn: msn, bytes: bytes) }
        applyInbandCues(info, accepted: result)
        return accepted
    }

    /// A streamed push ended without its whole segment: closed at its last listed part (if any) and published.
    /// With a store, the listed parts' bytes are staged durably first (outside the lock); when they cannot be, the
    /// short segment is not listed and its slot closes as a GAP.
    func abandonStreamedSegment(ticket: OpenSegmentTicket) {
        _ = gate.enter { abandonStreamedSegmentHere(ticket: ticket) }
    }

    private func abandonStreamedSegmentHere(ticket: OpenSegmentTicket) {
        var stored: StoredSegment?
        if store != nil, let listed = state.withLock({ $0.listedBytes(ticket: ticket) }) {
            stored = try? stage(listed.bytes, rendition: ticket.rendition, container: listed.container)
        }
        let now = clock.nowMilliseconds()
        state.withLock { state in
            pass(&state, nowMilliseconds: now) {
                $0.abandonSegment(ticket: ticket, stored: stored, nowMilliseconds: now)
            }
        }
    }
}
