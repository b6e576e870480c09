import HLSPlaylist
import SharedBytes

/// The sliding window of one rendition: the entries the playlist lists, the removed entries that must stay
/// downloadable, and the sequence numbers that describe the head.
///
/// Rules kept here (RFC 8216 section 6.2.2): EXT-X-MEDIA-SEQUENCE grows by one per removed head entry;
/// EXT-X-DISCONTINUITY-SEQUENCE grows by one per removed entry that carried a discontinuity; an entry is never
/// removed while the remaining duration would fall under three target durations; a removed entry (a GAP entry
/// included: its URL answers its filler) stays downloadable for its duration plus the window's duration.
public struct LiveWindow: Sendable {
    /// Entries listed in the playlist, oldest first, consecutive MSNs.
    public private(set) var entries: [WindowEntry] = []
    /// Removed entries still downloadable, oldest first, each with the time it may be released.
    public private(set) var retained: [(entry: WindowEntry, releaseAtMilliseconds: Int64)] = []
    /// EXT-X-DISCONTINUITY-SEQUENCE of the current head.
    public private(set) var discontinuitySequence: UInt64
    /// Length policy.
    public let length: WindowLength
    /// EXT-X-TARGETDURATION in seconds.
    public internal(set) var targetDuration: Int

    public init(length: WindowLength, targetDuration: Int, discontinuitySequence: UInt64 = 0) {
        self.length = length
        self.targetDuration = targetDuration
        self.discontinuitySequence = discontinuitySequence
    }

    /// EXT-X-MEDIA-SEQUENCE: the MSN of the first listed entry.
    public var mediaSequence: UInt64? { entries.first?.msn }

    /// Discontinuity sequence number of the newest entry's domain: the head's plus the discontinuities listed.
    public var edgeDiscontinuitySequence: UInt64 {
        discontinuitySequence + UInt64(entries.lazy.filter(\.discontinuity).count)
    }

    /// Sets EXT-X-DISCONTINUITY-SEQUENCE of a window that has never had an entry (a rendition joining a channel
    /// takes the channel's count).
    mutating func startDiscontinuitySequence(at value: UInt64) {
        precondition(entries.isEmpty && retained.isEmpty, "only an unused window can start its sequence")
        discontinuitySequence = value
    }

    /// MSN of the newest entry.
    public var lastMSN: UInt64? { entries.last?.msn }

    /// Total EXTINF of the listed entries, in milliseconds.
    public private(set) var durationMilliseconds: Int64 = 0

    /// Bytes of the segments listed and retained (what the window holds in memory; GAP fillers are shared and not
    /// counted).
    public private(set) var segmentBytes: Int64 = 0

    /// Appends an entry (its MSN must follow the last one) and slides the head.
    /// - Parameter nowMilliseconds: shared-clock time, starts the retention period of removed entries.
    public mutating func append(_ entry: WindowEntry, nowMilliseconds: Int64) {
        precondition(lastMSN.map { entry.msn == $0 + 1 } ?? true, "window entries must be consecutive")
        entries.append(entry)
        durationMilliseconds += entry.durationMilliseconds
        segmentBytes += Int64(entry.bytes?.count ?? 0)
        slide(nowMilliseconds: nowMilliseconds)
    }

    private mutating func slide(nowMilliseconds: Int64) {
        let minimum = Int64(targetDuration) * 3000
        while let head = entries.first, entries.count > 1, isOverLength,
            durationMilliseconds - head.durationMilliseconds >= minimum
        {
            entries.removeFirst()
            durationMilliseconds -= head.durationMilliseconds
            // The next head's own discontinuity is counted once it leaves too; removing a discontinuity
            // entry increments the sequence (RFC 8216 section 4.3.3.3).
            if head.discontinuity { discontinuitySequence += 1 }
            // GAP entries too: a GAP URL answers its filler (or its 404) as long as a segment's URL would answer.
            retained.append((head, nowMilliseconds + head.durationMilliseconds + durationMilliseconds))
        }
    }

    private var isOverLength: Bool {
        switch length {
        case .segments(let count): entries.count > max(count, 1)
        case .seconds(let seconds):
            durationMilliseconds - (entries.first?.durationMilliseconds ?? 0) >= Int64(seconds * 1000)
        }
    }

    /// Releases removed entries whose retention period is over. Returns true if anything was released.
    @discardableResult
    public mutating func releaseExpired(nowMilliseconds: Int64) -> Bool {
        let before = retained.count
        for (entry, releaseAt) in retained where releaseAt <= nowMilliseconds {
            segmentBytes -= Int64(entry.bytes?.count ?? 0)
        }
        retained.removeAll { $0.releaseAtMilliseconds <= nowMilliseconds }
        return retained.count != before
    }

    /// The entry with this MSN, listed or retained.
    public func entry(msn: UInt64) -> WindowEntry? {
        if let first = entries.first?.msn, msn >= first, msn - first < UInt64(entries.count) {
            return entries[Int(msn - first)]
        }
        return retained.first { $0.entry.msn == msn }?.entry
    }
}
