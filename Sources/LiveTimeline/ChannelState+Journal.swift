/// Persistence of a channel's sequence numbers: reservation of MSN blocks and restore after a restart.
extension ChannelState {
    /// MSNs reserved per journal write: the journal is written before an MSN beyond the reservation is published.
    static let reservationBlock: UInt64 = 32
    /// The journal is rewritten at most this often (ms) to keep DSN and PDT fresh.
    static let journalRefreshMilliseconds: Int64 = 1000

    /// Newest MSN of any rendition.
    var highestMSN: UInt64? { renditions.flatMap { [$0.lastMSN, $0.open?.msn] }.compactMap { $0 }.max() }

    /// The record to write now.
    package func journalRecord(nowMilliseconds now: Int64) -> ChannelJournalRecord {
        var records = journal.restoredRenditions
        for rendition in renditions where rendition.hasStarted {
            let window = rendition.window
            records[rendition.name] = RenditionJournalRecord(
                lastMSN: rendition.lastMSN,
                edgeDiscontinuitySequence: window.edgeDiscontinuitySequence,
                lastProgramDateTimeEndMilliseconds: window.entries.last?.endMilliseconds)
        }
        return ChannelJournalRecord(
            channel: configuration.name, msnReservedThrough: max(journal.msnReservedBelow ?? 1, 1) - 1,
            renditions: records, targetDuration: targetDuration, writtenAtMilliseconds: now,
            multivariantHint: multivariantHint.hint)
    }

    /// A record to write if the journal must be written now: at once when an MSN beyond the reservation exists
    /// (extending the reservation) or a slot was published (the edge's PDT and discontinuity sequence moved), else
    /// at most once per refresh period while something changed.
    package mutating func journalRecordDue(nowMilliseconds now: Int64) -> ChannelJournalRecord? {
        guard let reservedBelow = journal.msnReservedBelow else { return nil }
        if let highest = highestMSN, highest >= reservedBelow {
            journal.msnReservedBelow = highest + 1 + Self.reservationBlock
        } else if !journal.behindEdge,
            !(journal.dirty && now - journal.lastWrite >= Self.journalRefreshMilliseconds)
        {
            return nil
        }
        journal.dirty = false
        journal.behindEdge = false
        journal.lastWrite = now
        return journalRecord(nowMilliseconds: now)
    }

    /// Applies a journal record from an earlier run: renditions continue their discontinuity sequence, their first
    /// new segment carries EXT-X-DISCONTINUITY, and PDT never goes back.
    package mutating func restore(_ record: ChannelJournalRecord) {
        journal.restoredRenditions = record.renditions
        multivariantHint.hint = record.multivariantHint
        journal.minimumProgramDateTime = record.renditions.values.compactMap(\.lastProgramDateTimeEndMilliseconds).max()
        for position in renditions.indices { applyRestored(position: position) }
    }

    mutating func applyRestored(position: Int) {
        guard let record = journal.restoredRenditions[renditions[position].name] else { return }
        renditions[position].window = LiveWindow(
            length: configuration.window, targetDuration: renditions[position].window.targetDuration,
            discontinuitySequence: record.edgeDiscontinuitySequence)
        renditions[position].pendingDiscontinuity = true
    }
}
