import MediaProbe
import SharedBytes

// Low-Latency HLS in the ingest loop: a streamed push opens its slot at its first part, lists parts as they are
// cut, and closes the segment (the same steps as `accept`) when its body ends.
extension ChannelState {
    /// Opens the rendition's next segment for a streamed push at its first part: takes its MSN and fixes the slot's
    /// PDT and discontinuity. Refused (`concurrentPush`) while the rendition has a segment open.
    package mutating func openSegment(
        rendition name: String, firstPart: CutPart, container: MediaContainer, nowMilliseconds now: Int64
    ) -> Result<OpenSegmentTicket, IngestError> {
        fatalError("contract: built by the ingest-loop step")
    }

    /// Lists the next part of an open segment.
    package mutating func appendPart(
        _ part: CutPart, ticket: OpenSegmentTicket, nowMilliseconds now: Int64
    ) -> Result<IngestActions, IngestError> {
        fatalError("contract: built by the ingest-loop step")
    }

    /// Closes an open segment with its whole bytes (exactly its parts) and probe: today's `accept` with the MSN
    /// already given.
    package mutating func closeSegment(
        ticket: OpenSegmentTicket, bytes: SharedBytes, info: SegmentInfo, stored: StoredSegment?,
        nowMilliseconds now: Int64
    ) -> (result: Result<WindowEntry, IngestError>, actions: IngestActions) {
        fatalError("contract: built by the ingest-loop step")
    }

    /// The push ended without a complete segment (disconnect, stall, error, store failure): the segment is closed
    /// at its last listed part if any (else nothing was listed and the slot closes by the usual rules).
    package mutating func abandonSegment(ticket: OpenSegmentTicket, nowMilliseconds now: Int64) -> IngestActions {
        fatalError("contract: built by the ingest-loop step")
    }
}
