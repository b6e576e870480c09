import HLSPlaylist

/// Follows one rendition's live media playlist across reloads and writes down every broken rule: MSN and the
/// facts of each MSN (URI, EXTINF, PDT, discontinuity sequence number, GAP) never change, target duration constant,
/// PDT continuous, the window never under three target durations once it slides, and how long the playlist went
/// without a new entry.
struct RenditionTracker {
    /// One entry as first seen.
    struct Entry: Equatable {
        let msn: UInt64
        let uri: String
        let durationMilliseconds: Int64
        let programDateTimeMilliseconds: Int64?
        let discontinuity: Bool
        let gap: Bool
        /// EXT-X-DISCONTINUITY-SEQUENCE plus the discontinuities up to and including this entry.
        let discontinuitySequenceNumber: UInt64
    }

    let name: String
    private(set) var targetDuration: Int?
    /// Every MSN ever listed, as first seen.
    private(set) var entries: [UInt64: Entry] = [:]
    /// When each MSN was first seen (seconds since the test's start).
    private(set) var firstSeen: [UInt64: Double] = [:]
    /// When the last reload that did not list each MSN yet was sent (the MSN appeared after that).
    private(set) var appearedAfter: [UInt64: Double] = [:]
    /// When each MSN was last listed (request sent, seconds since the test's start).
    private(set) var lastListed: [UInt64: Double] = [:]
    /// Playlist duration when each MSN was last listed, ms.
    private(set) var windowWhenLastListed: [UInt64: Int64] = [:]
    private(set) var mediaSequence: UInt64?
    private(set) var lastMSN: UInt64?
    private(set) var firstMSN: UInt64?
    private(set) var snapshots = 0
    private(set) var violations: [String] = []

    /// Staleness: the newest entry changed after `changedAfter` (the last poll that still showed the old one was
    /// sent then) and by `changedBy` (the first poll showing the new one had its answer then).
    private var lastChange: (after: Double, by: Double)?
    private var previousPollSent: Double?
    /// The longest time between two new entries, at least (sound lower bound from the poll times), seconds.
    private(set) var maxStalenessLowerBound: Double = 0
    /// The longest time between two new entries, at most (upper bound from the poll times), seconds.
    private(set) var maxStalenessUpperBound: Double = 0

    init(name: String) { self.name = name }

    /// MSNs seen, ascending.
    var msns: [UInt64] { entries.keys.sorted() }

    private mutating func fail(_ message: String) {
        if violations.count < 200 { violations.append("\(name): \(message)") }
    }

    /// Records one reload.
    /// - Parameters:
    ///   - sent: when the request went out, seconds since the test's start.
    ///   - received: when the answer was complete.
    mutating func observe(_ playlist: MediaPlaylist, text: String, sent: Double, received: Double) {
        snapshots += 1
        defer { previousPollSent = sent }
        if let known = targetDuration, known != playlist.targetDuration {
            fail("EXT-X-TARGETDURATION changed from \(known) to \(playlist.targetDuration)")
        }
        if playlist.targetDuration < 1 { fail("EXT-X-TARGETDURATION \(playlist.targetDuration) < 1") }
        targetDuration = targetDuration ?? playlist.targetDuration
        if playlist.endList { fail("live playlist carries EXT-X-ENDLIST") }
        if playlist.playlistType != nil { fail("sliding playlist carries EXT-X-PLAYLIST-TYPE") }
        if !text.contains("#EXT-X-DISCONTINUITY-SEQUENCE:") { fail("no EXT-X-DISCONTINUITY-SEQUENCE tag") }
        guard !playlist.segments.isEmpty else {
            fail("empty playlist served with status 200 at \(sent) s")
            return
        }
        if let previous = mediaSequence, playlist.mediaSequence < previous {
            fail("EXT-X-MEDIA-SEQUENCE went back from \(previous) to \(playlist.mediaSequence)")
        }
        let newest = playlist.mediaSequence + UInt64(playlist.segments.count - 1)
        if let previous = lastMSN, newest < previous { fail("newest MSN went back from \(previous) to \(newest)") }

        // Staleness bounds.
        if let previous = lastMSN, newest > previous {
            let change = (after: previousPollSent ?? sent, by: received)
            if let last = lastChange {
                maxStalenessLowerBound = max(maxStalenessLowerBound, change.after - last.by)
                maxStalenessUpperBound = max(maxStalenessUpperBound, change.by - last.after)
            }
            lastChange = change
        } else if lastMSN == nil {
            lastChange = nil
        }

        var sequenceNumber = playlist.discontinuitySequence
        var previousEntry: Entry?
        var total: Int64 = 0
        for (offset, segment) in playlist.segments.enumerated() {
            let msn = playlist.mediaSequence + UInt64(offset)
            if segment.discontinuity { sequenceNumber += 1 }
            let entry = Entry(
                msn: msn, uri: segment.uri, durationMilliseconds: Int64((segment.duration * 1000).rounded()),
                programDateTimeMilliseconds: segment.programDateTime?.millisecondsSince1970,
                discontinuity: segment.discontinuity, gap: segment.gap, discontinuitySequenceNumber: sequenceNumber)
            total += entry.durationMilliseconds
            if let known = entries[msn] {
                if known != entry { fail("MSN \(msn) changed between reloads: was \(known), now \(entry)") }
            } else {
                entries[msn] = entry
                firstSeen[msn] = received
                appearedAfter[msn] = previousPollSent ?? 0
                if let last = lastMSN, msn <= last, msn >= (mediaSequence ?? 0) {
                    fail("MSN \(msn) appeared after MSN \(last) had been listed")
                }
                check(newEntry: entry, segment: segment, targetDuration: playlist.targetDuration)
            }
            lastListed[msn] = sent
            if let previousEntry, !entry.discontinuity, let start = previousEntry.programDateTimeMilliseconds,
                let next = entry.programDateTimeMilliseconds,
                abs(start + previousEntry.durationMilliseconds - next) > 1
            {
                fail(
                    "PDT of MSN \(msn) is \(next) ms, expected PDT(\(msn - 1)) + EXTINF = "
                        + "\(start + previousEntry.durationMilliseconds) ms (no discontinuity between)")
            }
            previousEntry = entry
        }
        for offset in playlist.segments.indices {
            windowWhenLastListed[playlist.mediaSequence + UInt64(offset)] = total
        }
        if let first = firstMSN, playlist.mediaSequence > first, total < Int64(playlist.targetDuration) * 3000 {
            fail("window slid to \(total) ms, under three target durations")
        }
        firstMSN = firstMSN ?? playlist.mediaSequence
        mediaSequence = playlist.mediaSequence
        lastMSN = max(lastMSN ?? 0, newest)
    }

    private mutating func check(newEntry entry: Entry, segment: MediaSegment, targetDuration: Int) {
        if entry.programDateTimeMilliseconds == nil { fail("MSN \(entry.msn) has no EXT-X-PROGRAM-DATE-TIME") }
        if Int(segment.duration.rounded()) > targetDuration {
            fail("MSN \(entry.msn): EXTINF \(segment.duration) rounds above EXT-X-TARGETDURATION \(targetDuration)")
        }
        if segment.duration <= 0 { fail("MSN \(entry.msn): EXTINF \(segment.duration) is not positive") }
        if entry.uri != "\(entry.msn).ts" {
            fail("MSN \(entry.msn) is named '\(entry.uri)', expected '\(entry.msn).ts'")
        }
    }
}
