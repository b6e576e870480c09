import MicroHTTPD
import OriginCore
import Synchronization

/// Per-thread tables of prepared `/live` answers, consulted by `OriginHTTPHandler.handlePlain(_:)` before any
/// routing: a plain GET of a playlist or segment costs one hash of its path, one probe and one atomic load.
///
/// Each libmicrohttpd thread has a table of its own, keyed by the raw path bytes and whether the answer is gzipped,
/// holding its own copy of the prepared response (libmicrohttpd locks a response's mutex on every queue, so one
/// response shared by all threads makes them wait on each other). An entry holds while its `Validity` does: the
/// multivariant playlist (and anything else) while its channel's snapshot version is unchanged, a media playlist
/// while its rendition's version is, a segment or part while its MSN is not below the rendition's retention floor.
/// So a publish (several a second per rendition with parts) sends each thread back through the normal route only
/// for what it changed, not for every segment it holds.
final class LiveAnswerCache: Sendable {
    /// Threads with an index at or above this go the normal route (only tests start that many servers: the test
    /// process runs dozens of servers at once, and 64 was too few once its async tests were no longer starved; an
    /// empty table is about 600 bytes).
    static let threadCapacity = 256

    private let tables: [Table]

    init() {
        tables = (0..<Self.threadCapacity).map { _ in Table() }
    }

    /// The prepared answer for `request` if this thread holds one that is still current.
    func lookup(_ request: PlainRequest, gzip: Bool) -> PreparedResponse? {
        guard request.threadIndex < tables.count else { return nil }
        return tables[request.threadIndex].lookup(request.path, gzip: gzip)
    }

    /// Lookups answered from a table and lookups that were not, over all threads since the start.
    var counts: (hits: Int, misses: Int) {
        tables.reduce((0, 0)) { ($0.0 + $1.hits.load(ordering: .relaxed), $0.1 + $1.misses.load(ordering: .relaxed)) }
    }

    /// The counters in the Prometheus text format (appended to `/metrics`).
    var exposition: String {
        let (hits, misses) = counts
        return """
            # HELP hlsorigin_live_answer_cache_hits_total Plain /live GETs answered from a thread's prepared answers.
            # TYPE hlsorigin_live_answer_cache_hits_total counter
            hlsorigin_live_answer_cache_hits_total \(hits)
            # HELP hlsorigin_live_answer_cache_misses_total Plain /live GETs that took the normal route.
            # TYPE hlsorigin_live_answer_cache_misses_total counter
            hlsorigin_live_answer_cache_misses_total \(misses)

            """
    }

    /// Entries and body bytes held by all threads' tables (tests check that stale segments do not pile up).
    /// Only meaningful while no request is being served.
    var usage: (entries: Int, bodyBytes: Int) {
        tables.reduce((0, 0)) { ($0.0 + $1.usage.entries, $0.1 + $1.usage.bodyBytes) }
    }

    /// Keeps a copy of `shared` for this thread while `validity` holds; returns the copy.
    func store(_ request: PlainRequest, gzip: Bool, validity: Validity, shared: PreparedResponse) -> PreparedResponse {
        guard request.threadIndex < tables.count else { return shared }
        let copy = shared.copy()
        tables[request.threadIndex].store(
            Entry(path: Array(request.path), gzip: gzip, validity: validity, response: copy))
        return copy
    }

    /// How long a cached answer holds. Each case is read before the route reads the snapshot the answer comes
    /// from, so a publish in between makes the entry stale at its first use, never too fresh.
    enum Validity: Sendable {
        /// While the channel's published snapshot version is this one (the multivariant playlist, and any
        /// answer not classified below).
        case snapshot(Channel, UInt64)
        /// A media or I-frame playlist: while the rendition's version is this one.
        case playlist(RenditionVersions, UInt64)
        /// A segment: its bytes never change, so while its MSN is at or above the rendition's retention floor.
        case segment(RenditionVersions, msn: UInt64)
        /// A part: while its MSN is at or above the lowest MSN whose parts still answer.
        case part(RenditionVersions, msn: UInt64)

        /// True while an answer derived under this validity is still the right one.
        var holds: Bool {
            switch self {
            case .snapshot(let channel, let version): channel.publishedVersion == version && !channel.isRetired
            case .playlist(let versions, let version): versions.version == version && !versions.isRetired
            case .segment(let versions, let msn): versions.retentionFloor <= msn && !versions.isRetired
            case .part(let versions, let msn): versions.partFloor <= msn && !versions.isRetired
            }
        }
    }

    /// One cached answer.
    final class Entry: Sendable {
        let hash: UInt64
        let path: [UInt8]
        let gzip: Bool
        let validity: Validity
        let response: PreparedResponse

        init(path: [UInt8], gzip: Bool, validity: Validity, response: PreparedResponse) {
            self.hash = path.withUnsafeBytes { Table.hash($0, gzip: gzip) }
            self.path = path
            self.gzip = gzip
            self.validity = validity
            self.response = response
        }
    }

    /// An open-addressing table (linear probing) of one thread.
    ///
    /// Entries keep their bytes alive, and a stale entry (a segment that left retention, a playlist version
    /// replaced) would stay in the table until overwritten: so every `sweepInterval` stores, and
    /// whenever the bodies held would pass `maximumBodyBytes`, the table is rebuilt with only its current entries.
    /// It grows to `maximumSlots`; if it is still half full (or over the byte budget) after a sweep, it is emptied
    /// and refills with what is asked for.
    final class Table: @unchecked Sendable {
        // @unchecked: each table is read and written by one libmicrohttpd thread only (the one whose index it has).
        private var slots = [Entry?](repeating: nil, count: 64)
        private var count = 0
        private var bodyBytes = 0
        private var storesSinceSweep = 0
        /// Written by the owning thread only (a load and a store, no read-modify-write), read by `/metrics`.
        let hits = Atomic<Int>(0)
        let misses = Atomic<Int>(0)
        static let maximumSlots = 4096
        static let maximumBodyBytes = 16 << 20
        static let sweepInterval = 64

        static func hash(_ bytes: UnsafeRawBufferPointer, gzip: Bool) -> UInt64 {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
            for byte in bytes {
                hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            }
            return gzip ? ~hash : hash
        }

        func lookup(_ path: UnsafeRawBufferPointer, gzip: Bool) -> PreparedResponse? {
            let hash = Self.hash(path, gzip: gzip)
            let mask = slots.count - 1
            var index = Int(truncatingIfNeeded: hash) & mask
            while let entry = slots[index] {
                if entry.hash == hash, entry.gzip == gzip, entry.path.elementsEqual(path) {
                    guard entry.validity.holds else { break }
                    hits.store(hits.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
                    return entry.response
                }
                index = (index + 1) & mask
            }
            misses.store(misses.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
            return nil
        }

        /// Entries held now and the bytes of their bodies (for tests).
        var usage: (entries: Int, bodyBytes: Int) { (count, bodyBytes) }

        func store(_ entry: Entry) {
            let size = entry.response.response.body.count
            if let index = position(of: entry) {
                bodyBytes += size - (slots[index]?.response.response.body.count ?? 0)
                slots[index] = entry
                return
            }
            storesSinceSweep += 1
            if storesSinceSweep >= Self.sweepInterval || bodyBytes + size > Self.maximumBodyBytes {
                rebuild(slotCount: slots.count, keepingCurrentOnly: true)
            }
            if bodyBytes + size > Self.maximumBodyBytes {
                rebuild(slotCount: slots.count, keepingCurrentOnly: false)
            }
            if 2 * (count + 1) > slots.count {
                if slots.count < Self.maximumSlots {
                    rebuild(slotCount: slots.count * 2, keepingCurrentOnly: true)
                } else {
                    rebuild(slotCount: slots.count, keepingCurrentOnly: true)
                    if 2 * (count + 1) > slots.count { rebuild(slotCount: slots.count, keepingCurrentOnly: false) }
                }
            }
            insert(entry)
        }

        /// Rebuilds the table with `slotCount` slots and the entries still current (or none).
        private func rebuild(slotCount: Int, keepingCurrentOnly: Bool) {
            let old = slots
            slots = [Entry?](repeating: nil, count: slotCount)
            count = 0
            bodyBytes = 0
            storesSinceSweep = 0
            guard keepingCurrentOnly else { return }
            for case let kept? in old where kept.validity.holds { insert(kept) }
        }

        private func position(of entry: Entry) -> Int? {
            let mask = slots.count - 1
            var index = Int(truncatingIfNeeded: entry.hash) & mask
            while let existing = slots[index] {
                if existing.hash == entry.hash, existing.gzip == entry.gzip, existing.path == entry.path {
                    return index
                }
                index = (index + 1) & mask
            }
            return nil
        }

        private func insert(_ entry: Entry) {
            let mask = slots.count - 1
            var index = Int(truncatingIfNeeded: entry.hash) & mask
            while slots[index] != nil { index = (index + 1) & mask }
            slots[index] = entry
            count += 1
            bodyBytes += entry.response.response.body.count
        }
    }
}
