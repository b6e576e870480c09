import Foundation
import Persistence
import Synchronization
import TestSupport
import Testing

@testable import OriginCore

/// Recordings of two origins over the same shared recordings (the logic `GroupDatabase` serves with PostgreSQL; here
/// kept in memory so that an outage and a missed notification can be staged exactly; EndToEndTests.SharedMarkerTests
/// runs the same against a real PostgreSQL).
@Suite(
    "Shared recordings: posted to one origin, made by every origin; deleted on one, gone on all; 503 while down",
    .offThePool)
struct SharedRecordingTests {
    /// Recordings in memory with the semantics of `GroupDatabase`: rows by ID, deletions kept as tombstones, an ID
    /// taken again only once deleted.
    final class Table: SharedRecordings {
        struct State {
            var rows: [String: (manifest: RecordingManifest, deleted: Bool)] = [:]
            var reachable = true
        }
        let state = Mutex(State())

        func create(
            _ manifest: RecordingManifest
        ) throws(SharedRecordingsUnavailable) -> (stored: RecordingManifest, created: Bool) {
            let outcome = state.withLock { state -> (RecordingManifest, Bool)? in
                guard state.reachable else { return nil }
                if let row = state.rows[manifest.id], !row.deleted { return (row.manifest, false) }
                var stored = manifest
                stored.contents = nil
                state.rows[manifest.id] = (stored, false)
                return (stored, true)
            }
            guard let outcome else { throw SharedRecordingsUnavailable("recordings database unavailable: down") }
            return outcome
        }

        func delete(id: String, channel: String) throws(SharedRecordingsUnavailable) -> Bool {
            let outcome = state.withLock { state -> Bool? in
                guard state.reachable else { return nil }
                guard let row = state.rows[id], !row.deleted, row.manifest.channel == channel else { return false }
                state.rows[id]?.deleted = true
                return true
            }
            guard let outcome else { throw SharedRecordingsUnavailable("recordings database unavailable: down") }
            return outcome
        }

        func list() throws(SharedRecordingsUnavailable) -> SharedRecordingList {
            let outcome = state.withLock { state -> SharedRecordingList? in
                guard state.reachable else { return nil }
                return SharedRecordingList(
                    recordings: state.rows.values.filter { !$0.deleted }.map(\.manifest),
                    deleted: Set(state.rows.filter { $0.value.deleted }.keys))
            }
            guard let outcome else { throw SharedRecordingsUnavailable("recordings database unavailable: down") }
            return outcome
        }

        var reachability: (reachable: Bool, lastError: String?) {
            state.withLock { ($0.reachable, $0.reachable ? nil : "down") }
        }

        var reachable: Bool {
            get { state.withLock { $0.reachable } }
            set { state.withLock { $0.reachable = newValue } }
        }
    }

    /// Two origins on one clock over one table, each with its own data directory, fed the same segments.
    struct Pair {
        let table = Table()
        let clock = ManualClock()
        let a: RecordingStack
        let b: RecordingStack

        init() throws {
            a = try RecordingStack(
                directory: try TemporaryDirectory.make("shared-recordings-a").path, clock: clock,
                sharedRecordings: table)
            b = try RecordingStack(
                directory: try TemporaryDirectory.make("shared-recordings-b").path, clock: clock,
                sharedRecordings: table)
        }

        /// One slot on both origins (the clock advances once).
        func slots(_ count: Int) throws {
            for _ in 0..<count {
                try a.slot()
                clock.advance(seconds: -2)
                try b.slot()
            }
        }

        func ids(_ stack: RecordingStack) throws -> [String] {
            let list = try stack.get("/admin/channels/ch/recordings").json["recordings"] as? [[String: Any]]
            return (list ?? []).compactMap { $0["id"] as? String }
        }
    }

    @Test func aRecordingPostedToOneOriginIsMadeByTheOtherWithTheSameVODPlaylist() throws {
        let pair = try Pair()
        try pair.slots(1)
        try pair.a.noteFirstPDT()
        try pair.slots(3)
        let (start, end) = (pair.a.pdt(1), pair.a.pdt(5))
        let created = try pair.a.post(id: "show", start: start, end: end)
        #expect(created.status == 201, "\(created.text)")
        // B heard nothing yet (no notification in this test): the same request is the group's recording, 200 ...
        #expect(try pair.ids(pair.b) == [])
        let repeated = try pair.b.post(id: "show", start: start, end: end)
        #expect(repeated.status == 200, "\(repeated.text)")
        #expect(try pair.ids(pair.b) == ["show"])
        // ... and another request with its ID is refused by the group, not only by the origin that made it.
        let fresh = try Pair()
        try fresh.slots(1)
        try fresh.a.noteFirstPDT()
        #expect(try fresh.a.post(id: "show", start: fresh.a.pdt(0), end: fresh.a.pdt(4)).status == 201)
        let conflict = try fresh.b.post(id: "show", start: fresh.a.pdt(0), end: fresh.a.pdt(5))
        #expect(conflict.status == 409, "\(conflict.text)")
        #expect(conflict.json["field"] as? String == "id")
        #expect(try fresh.ids(fresh.b) == [])

        // A notification: B reads the list and makes a recording A posted.
        #expect(try pair.a.post(id: "news", start: pair.a.pdt(2), end: pair.a.pdt(4)).status == 201)
        pair.b.origin.sharedRecordingsChanged()
        #expect(try pair.ids(pair.b) == ["show", "news"])
        #expect(FileManager.default.fileExists(atPath: pair.b.directory + "/recordings/news.json"))

        try pair.slots(4)
        for id in ["show", "news"] {
            let onA = try pair.a.get("/vod/\(id)/360p/index.m3u8")
            let onB = try pair.b.get("/vod/\(id)/360p/index.m3u8")
            #expect(onA.status == 200, "\(id) on A: \(onA.text)")
            #expect(onA.text == onB.text, "\(id):\nA:\n\(onA.text)\nB:\n\(onB.text)")
            #expect(onA.text.contains("#EXT-X-ENDLIST"))
        }
    }

    @Test func aDeletionOnOneOriginIsADeletionOnEveryOriginAlsoOneThatMissedIt() throws {
        let pair = try Pair()
        try pair.slots(1)
        try pair.a.noteFirstPDT()
        #expect(try pair.a.post(id: "gone", start: pair.a.pdt(0), end: pair.a.pdt(10)).status == 201)
        pair.b.origin.sharedRecordingsChanged()
        #expect(try pair.ids(pair.b) == ["gone"])
        #expect(try pair.b.request("DELETE", "/admin/channels/ch/recordings/gone").status == 204)
        #expect(try pair.ids(pair.b) == [])
        // A was not told (a lost notification): it still lists it until it reads the list again.
        #expect(try pair.ids(pair.a) == ["gone"])
        pair.a.origin.sharedRecordingsChanged()
        #expect(try pair.ids(pair.a) == [])
        #expect(!FileManager.default.fileExists(atPath: pair.a.directory + "/recordings/gone.json"))
        #expect(try pair.a.request("DELETE", "/admin/channels/ch/recordings/gone").status == 404)
        // The ID can be taken again, by either origin.
        #expect(try pair.a.post(id: "gone", start: pair.a.pdt(0), end: pair.a.pdt(4)).status == 201)
        pair.b.origin.sharedRecordingsChanged()
        #expect(try pair.ids(pair.b) == ["gone"])
    }

    @Test func whileTheDatabaseIsDownChangesAnswer503AndWhatIsKnownStays() throws {
        let pair = try Pair()
        try pair.slots(1)
        try pair.a.noteFirstPDT()
        #expect(try pair.a.post(id: "kept", start: pair.a.pdt(0), end: pair.a.pdt(2)).status == 201)
        pair.table.reachable = false
        let refused = try pair.a.post(id: "new", start: pair.a.pdt(0), end: pair.a.pdt(4))
        #expect(refused.status == 503, "\(refused.text)")
        #expect(refused.header("Retry-After") == "1")
        #expect(
            (refused.json["error"] as? String)?.contains("recordings database unavailable") == true, "\(refused.text)")
        let deletion = try pair.a.request("DELETE", "/admin/channels/ch/recordings/kept")
        #expect(deletion.status == 503, "\(deletion.text)")
        #expect(try pair.ids(pair.a) == ["kept"])
        #expect(!FileManager.default.fileExists(atPath: pair.a.directory + "/recordings/new.json"))
        // The recording known finishes and plays meanwhile: its contents come from this origin's store.
        pair.a.origin.sharedRecordingsChanged()
        try pair.slots(2)
        #expect(try pair.a.get("/vod/kept/360p/index.m3u8").status == 200)
        pair.table.reachable = true
        #expect(try pair.a.post(id: "new", start: pair.a.pdt(1), end: pair.a.pdt(4)).status == 201)
    }

    @Test func recordingsMadeBeforeTheDatabaseWasSetAreSharedWithTheGroup() throws {
        let directory = try TemporaryDirectory.make("shared-recordings-before").path
        let clock = ManualClock()
        var lone: RecordingStack? = try RecordingStack(directory: directory, clock: clock)
        try lone!.slot()
        try lone!.noteFirstPDT()
        #expect(try lone!.post(id: "old", start: lone!.pdt(0), end: lone!.pdt(3)).status == 201)
        lone = nil
        let table = Table()
        let restarted = try RecordingStack(directory: directory, clock: clock, sharedRecordings: table)
        #expect(try table.list().recordings.isEmpty)
        restarted.origin.sharedRecordingsChanged()
        #expect(try table.list().recordings.map(\.id) == ["old"])
    }
}
