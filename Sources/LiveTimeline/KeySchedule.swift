/// Which AES-128 key period each media sequence number belongs to, for the life of a channel.
///
/// A schedule is a list of spans, each from an MSN on: encrypted with a new key every `rotateEvery` segments, or
/// clear. Spans are only appended, never edited below an MSN already published, and period numbers only grow (a new
/// span starts at the last period + 1), so a key URL never names two keys and every MSN keeps its key for ever. Pure
/// value: the channel persists it (with the key secret) in the key journal.
package struct KeySchedule: Sendable, Hashable, Codable {
    /// One stretch of the schedule.
    package struct Span: Sendable, Hashable, Codable {
        /// First MSN of the span.
        package var fromMSN: UInt64
        /// Segments per key from `fromMSN` on; nil: clear segments.
        package var rotateEvery: UInt64?
        /// Period number of `fromMSN` (unused by clear spans).
        package var firstPeriod: UInt64

        package init(fromMSN: UInt64, rotateEvery: UInt64?, firstPeriod: UInt64) {
            self.fromMSN = fromMSN
            self.rotateEvery = rotateEvery
            self.firstPeriod = firstPeriod
        }
    }

    /// Ascending `fromMSN`.
    package private(set) var spans: [Span]

    package init(spans: [Span] = []) { self.spans = spans }

    /// The span in force at `msn`, nil before the first span.
    package func span(at msn: UInt64) -> Span? {
        spans.last { $0.fromMSN <= msn }
    }

    /// The key period of `msn`; nil when `msn` is clear.
    package func period(of msn: UInt64) -> UInt64? {
        guard let span = span(at: msn), let every = span.rotateEvery else { return nil }
        return span.firstPeriod + (msn - span.fromMSN) / every
    }

    /// The first MSN of `msn`'s key period; nil when `msn` is clear.
    package func periodStart(of msn: UInt64) -> UInt64? {
        guard let span = span(at: msn), let every = span.rotateEvery else { return nil }
        return span.fromMSN + (msn - span.fromMSN) / every * every
    }

    /// True when the key changes at `msn` (the first MSN of a key period, or the first MSN of a span), so a playlist
    /// states EXT-X-KEY there. Decided from the MSN alone, so every playlist and every DVR block agree.
    package func keyChanges(at msn: UInt64) -> Bool {
        guard let span = span(at: msn) else { return false }
        if span.fromMSN == msn { return true }
        return periodStart(of: msn) == msn
    }

    /// The highest period number used by MSNs below `msn` (nil when none of them is encrypted).
    package func highestPeriod(below msn: UInt64) -> UInt64? {
        var highest: UInt64?
        for (i, span) in spans.enumerated() where span.rotateEvery != nil && span.fromMSN < msn {
            let end = min(i + 1 < spans.count ? spans[i + 1].fromMSN : msn, msn)
            guard end > span.fromMSN, let p = period(of: end - 1) else { continue }
            highest = max(highest ?? p, p)
        }
        return highest
    }

    /// Changes the schedule from `fromMSN` on (the lowest MSN not yet published): encrypted with a new key every
    /// `rotateEvery` segments, or clear when nil. A change to what is already in force does nothing. The new span's
    /// periods start above every period used below `fromMSN`.
    package mutating func change(rotateEvery: UInt64?, fromMSN: UInt64) {
        precondition(rotateEvery.map { $0 >= 1 } ?? true, "rotateEvery is at least 1")
        if let last = spans.last {
            precondition(fromMSN >= last.fromMSN, "a key schedule is only appended to")
            if last.rotateEvery == rotateEvery { return }
        } else if rotateEvery == nil {
            return
        }
        if let last = spans.last, last.fromMSN == fromMSN { spans.removeLast() }
        let firstPeriod = highestPeriod(below: fromMSN).map { $0 + 1 } ?? 0
        spans.append(Span(fromMSN: fromMSN, rotateEvery: rotateEvery, firstPeriod: firstPeriod))
    }
}
