import MicroHTTPD
import OriginCore

/// Per-thread tables of prepared `/live` answers, consulted by `OriginHTTPHandler.handlePlain(_:)` before any
/// routing: a plain GET of a playlist or segment costs one hash of its path, one probe and one atomic load.
///
/// Each libmicrohttpd thread has a table of its own, keyed by the raw path bytes and whether the answer is gzipped,
/// holding its own copy of the prepared response (libmicrohttpd locks a response's mutex on every queue, so one
/// response shared by all threads makes them wait on each other). An entry remembers the channel and the version of
/// the snapshot it was derived from, and is used only while that is still the channel's published version; after a
/// publish (every segment duration) each thread derives the answer once more through the normal route.
final class LiveAnswerCache: Sendable {
    /// Threads with an index at or above this go the normal route (only tests start that many servers).
    static let threadCapacity = 64

    private let tables: [Table]

    init() {
        tables = (0..<Self.threadCapacity).map { _ in Table() }
    }

    /// The prepared answer for `request` if this thread holds one that is still current.
    func lookup(_ request: PlainRequest, gzip: Bool) -> PreparedResponse? {
        guard request.threadIndex < tables.count else { return nil }
        return tables[request.threadIndex].lookup(request.path, gzip: gzip)
    }

    /// Entries and body bytes held by all threads' tables (tests check that stale segments do not pile up).
    /// Only meaningful while no request is being served.
    var usage: (entries: Int, bodyBytes: Int) {
        tables.reduce((0, 0)) { ($0.0 + $1.usage.entries, $0.1 + $1.usage.bodyBytes) }
    }

    /// Keeps a copy of `shared` for this thread, valid while `channel` publishes `version`; returns the copy.
    func store(
        _ request: PlainRequest, gzip: Bool, channel: Channel, version: UInt64, shared: PreparedResponse
    ) -> PreparedResponse {
        guard request.threadIndex < tables.count else { return shared }
        let copy = shared.copy()
        tables[request.threadIndex].store(
            Entry(path: Array(request.path), gzip: gzip, channel: channel, version: version, response: copy))
        return copy
    }

    /// One cached answer.
    final class Entry: Sendable {
        let hash: UInt64
        let path: [UInt8]
        let gzip: Bool
        let channel: Channel
        let version: UInt64
        let response: PreparedResponse

        init(path: [UInt8], gzip: Bool, channel: Channel, version: UInt64, response: PreparedResponse) {
            self.hash = path.withUnsafeBytes { Table.hash($0, gzip: gzip) }
            self.path = path
            self.gzip = gzip
            self.channel = channel
            self.version = version
            self.response = response
        }
    }

    /// An open-addressing table (linear probing) of one thread.
    ///
    /// Entries keep their bytes alive, and a segment's entry goes stale at its channel's next publish (about one
    /// segment duration later) but would stay in the table until overwritten: so every `sweepInterval` stores, and
    /// whenever the bodies held would pass `maximumBodyBytes`, the table is rebuilt with only its current entries.
    /// It grows to `maximumSlots`; if it is still half full (or over the byte budget) after a sweep, it is emptied
    /// and refills with what is asked for.
    final class Table: @unchecked Sendable {
        // @unchecked: each table is read and written by one libmicrohttpd thread only (the one whose index it has).
        private var slots = [Entry?](repeating: nil, count: 64)
        private var count = 0
        private var bodyBytes = 0
        private var storesSinceSweep = 0
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
                    return entry.channel.publishedVersion == entry.version ? entry.response : nil
                }
                index = (index + 1) & mask
            }
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
            for case let kept? in old where kept.channel.publishedVersion == kept.version { insert(kept) }
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
